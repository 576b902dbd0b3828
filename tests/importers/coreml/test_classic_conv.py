"""Classic Core ML convolution / deconvolution / pooling / padding / crop vs float64 numpy
implementations of the spec's formulas (tests/importers/coreml/classic_ref.py)."""
import numpy as np
import pytest

pytest.importorskip("coremltools")
from coremltools.models import datatypes  # noqa: E402
from coremltools.models.neural_network import NeuralNetworkBuilder  # noqa: E402

from tests.importers.coreml import classic_ref as ref  # noqa: E402
from tests.importers.coreml.util import run, save  # noqa: E402
from helpers import assert_accumulated, assert_exact  # noqa: E402


def builder(inputs, outputs):
    return NeuralNetworkBuilder([(n, datatypes.Array(*s)) for n, s in inputs], [(n, None) for n in outputs])


def test_convolutions(tmp_path, rng):
    x = rng.standard_normal((4, 7, 8)).astype(np.float32)
    cases = {  # name: (O, groups, k, stride, dil, border, pads, asym)
        "valid": (6, 1, (3, 3), (1, 1), (1, 1), "valid", (0, 0, 0, 0), None),
        "padded": (4, 2, (3, 2), (2, 1), (1, 1), "valid", (1, 2, 0, 1), None),
        "same": (5, 1, (3, 3), (2, 2), (1, 1), "same", None, "BOTTOM_RIGHT_HEAVY"),
        "same_tl": (4, 4, (2, 4), (1, 2), (1, 1), "same", None, "TOP_LEFT_HEAVY"),
        "dilated": (3, 1, (3, 3), (1, 1), (2, 1), "valid", (0, 0, 0, 0), None),
    }
    b = builder([("x", x.shape)], list(cases))
    expect = {}
    for name, (o, g, k, s, d, mode, pads, asym) in cases.items():
        kc = 4 // g
        w = rng.standard_normal((o, kc) + k).astype(np.float32)
        bias = rng.standard_normal(o).astype(np.float32)
        b.add_convolution(name, kc, o, k[0], k[1], s[0], s[1], mode, g, w.transpose(2, 3, 1, 0), bias, True,
                          input_name="x", output_name=name, dilation_factors=list(d),
                          **({} if pads is None else dict(padding_top=pads[0], padding_bottom=pads[1],
                                                          padding_left=pads[2], padding_right=pads[3])),
                          **({} if asym is None else dict(same_padding_asymmetry_mode=asym)))
        if mode == "same":
            keff = [(k[i] - 1) * d[i] + 1 for i in range(2)]
            pp = []
            for i, size in enumerate(x.shape[1:]):
                out = -(-size // s[i])
                tot = max(0, (out - 1) * s[i] + keff[i] - size)
                lo = tot // 2 if asym == "BOTTOM_RIGHT_HEAVY" else tot - tot // 2
                pp += [lo, tot - lo]
            pads = pp
        expect[name] = ref.conv2d(x[None], w, bias, s, d, pads, g)[0]
    got = run(save(b, tmp_path), {"x": x})
    for name, e in expect.items():
        assert got[name].shape == e.shape, name
        assert_accumulated(got[name], e.astype(np.float32), 4 * 9)


def test_deconvolutions(tmp_path, rng):
    x = rng.standard_normal((4, 3, 5)).astype(np.float32)
    cases = {  # name: (O, groups, k, stride, border, pads, output_shape)
        "valid": (6, 1, (3, 3), (2, 2), "valid", (0, 0, 0, 0), None),
        "padded": (4, 2, (3, 2), (2, 1), "valid", (1, 0, 0, 1), None),
        "same": (3, 1, (4, 3), (2, 3), "same", None, None),
        "shaped": (2, 1, (3, 3), (2, 2), "valid", (0, 0, 0, 0), (6, 10)),
    }
    b = builder([("x", x.shape)], list(cases))
    expect = {}
    for name, (o, g, k, s, mode, pads, oshape) in cases.items():
        w = rng.standard_normal((4, o // g) + k).astype(np.float32)
        b.add_convolution(name, 4, o, k[0], k[1], s[0], s[1], mode, g, w.transpose(2, 3, 0, 1), None, False,
                          is_deconv=True, output_shape=oshape, input_name="x", output_name=name,
                          **({} if pads is None else dict(padding_top=pads[0], padding_bottom=pads[1],
                                                          padding_left=pads[2], padding_right=pads[3])))
        full = ref.deconv2d(x[None].astype(np.float64), w.astype(np.float64), None, s, (1, 1), g)[0]
        if oshape is not None:  # the spec leaves the split open: centred, extra row/col at the end
            tot = [full.shape[1] - oshape[0], full.shape[2] - oshape[1]]
            e = full[:, tot[0] // 2:tot[0] // 2 + oshape[0], tot[1] // 2:tot[1] // 2 + oshape[1]]
        elif mode == "same":  # H_out = H_in * stride, BOTTOM_RIGHT_HEAVY
            want = [x.shape[1] * s[0], x.shape[2] * s[1]]
            tot = [full.shape[1] - want[0], full.shape[2] - want[1]]
            e = full[:, tot[0] // 2:tot[0] // 2 + want[0], tot[1] // 2:tot[1] // 2 + want[1]]
        else:
            e = full[:, pads[0]:full.shape[1] - pads[1], pads[2]:full.shape[2] - pads[3]]
        expect[name] = e
    got = run(save(b, tmp_path), {"x": x})
    for name, e in expect.items():
        assert got[name].shape == e.shape, name
        assert_accumulated(got[name], e.astype(np.float32), 4 * 9)


def test_pooling_padding_crop(tmp_path, rng):
    x = rng.standard_normal((3, 7, 8)).astype(np.float32)
    pools = {  # name: (kind, k, s, padding, pads, exclude)
        "max_valid": ("MAX", (3, 2), (2, 2), "VALID", (0, 0, 0, 0), False),
        "avg_same_incl": ("AVERAGE", (3, 3), (2, 2), "SAME", None, False),
        "avg_same_excl": ("AVERAGE", (3, 3), (2, 2), "SAME", None, True),
        "l2_valid": ("L2", (2, 3), (1, 2), "VALID", (0, 0, 0, 0), False),
        "max_last": ("MAX", (3, 3), (2, 2), "INCLUDE_LAST_PIXEL", (1, 1, 1, 1), False),
        "avg_last_excl": ("AVERAGE", (2, 3), (2, 3), "INCLUDE_LAST_PIXEL", (1, 1, 1, 1), True),
        "avg_last_incl": ("AVERAGE", (2, 3), (2, 3), "INCLUDE_LAST_PIXEL", (1, 1, 1, 1), False),
    }
    outs = list(pools) + ["gmax", "gavg", "gl2", "pad_c", "pad_r", "pad_e", "crop"]
    b = builder([("x", x.shape)], outs)
    expect = {}
    for name, (kind, k, s, mode, pads, excl) in pools.items():
        b.add_pooling(name, k[0], k[1], s[0], s[1], layer_type=kind, padding_type=mode, input_name="x",
                      output_name=name, exclude_pad_area=excl,
                      padding_top=pads[1] if mode == "INCLUDE_LAST_PIXEL" else 0,
                      padding_left=pads[2] if mode == "INCLUDE_LAST_PIXEL" else 0,
                      padding_bottom=pads[1] if mode == "INCLUDE_LAST_PIXEL" else 0,
                      padding_right=pads[2] if mode == "INCLUDE_LAST_PIXEL" else 0)
        h, w = x.shape[1:]
        if mode == "SAME":
            out = [-(-h // s[0]), -(-w // s[1])]
            tots = [max(0, (out[i] - 1) * s[i] + k[i] - x.shape[1 + i]) for i in range(2)]
            pads = (tots[0] // 2, 0, tots[1] // 2, 0)
        elif mode == "VALID":
            out = [(h - k[0]) // s[0] + 1, (w - k[1]) // s[1] + 1]
        else:  # the spec's includeLastPixel formula
            out = []
            for i, size in enumerate((h, w)):
                o = int(np.ceil((size + 2 * pads[2 * i] - k[i]) / s[i])) + 1
                if (o - 1) * s[i] >= size + pads[2 * i]:
                    o -= 1
                out.append(o)
        expect[name] = ref.pool2d(x[None], kind, k, s, pads, out, excl)[0]
    b.add_pooling("gmax", 0, 0, 0, 0, "MAX", "VALID", "x", "gmax", is_global=True)
    b.add_pooling("gavg", 0, 0, 0, 0, "AVERAGE", "VALID", "x", "gavg", is_global=True)
    b.add_pooling("gl2", 0, 0, 0, 0, "L2", "VALID", "x", "gl2", is_global=True)
    x64 = x.astype(np.float64)
    expect["gmax"] = x64.max(axis=(1, 2), keepdims=True)
    expect["gavg"] = x64.mean(axis=(1, 2), keepdims=True)
    expect["gl2"] = np.sqrt((x64 ** 2).sum(axis=(1, 2), keepdims=True))
    b.add_padding("pad_c", 1, 2, 3, 0, value=1.5, input_name="x", output_name="pad_c")
    b.add_padding("pad_r", 2, 1, 0, 3, padding_type="reflection", input_name="x", output_name="pad_r")
    b.add_padding("pad_e", 2, 1, 0, 3, padding_type="replication", input_name="x", output_name="pad_e")
    widths = [(0, 0), (3, 0), (1, 2)]  # (top, bottom), (left, right) = (3, 0), (1, 2)
    expect["pad_c"] = np.pad(x64, widths, constant_values=1.5)
    expect["pad_r"] = np.pad(x64, [(0, 0), (0, 3), (2, 1)], mode="reflect")
    expect["pad_e"] = np.pad(x64, [(0, 0), (0, 3), (2, 1)], mode="edge")
    b.add_crop("crop", 1, 2, 3, 1, offset=[0, 0], input_names=["x"], output_name="crop")
    expect["crop"] = x64[:, 3:7 - 1, 1:8 - 2]  # left 1, right 2, top 3, bottom 1
    got = run(save(b, tmp_path), {"x": x})
    for name, e in expect.items():
        assert got[name].shape == e.shape, name
        if name.startswith(("max", "gmax", "pad", "crop")):
            assert_exact(got[name], e.astype(np.float32))
        else:
            assert_accumulated(got[name], e.astype(np.float32), 9)


def test_classic_layers_in_nd_models(tmp_path, rng):
    """EXACT_ARRAY_MAPPING: classic layers on rank-4 [B, C, H, W] blobs; convolution weights as an input."""
    x = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
    w = rng.standard_normal((4, 3, 2, 2)).astype(np.float32)
    v = rng.standard_normal((2, 3)).astype(np.float32)
    fc = rng.standard_normal((5, 3)).astype(np.float32)
    b = NeuralNetworkBuilder([("x", datatypes.Array(*x.shape)), ("w", datatypes.Array(*w.shape)),
                              ("v", datatypes.Array(*v.shape))], [(n, None) for n in ("conv", "pool", "sm", "fc")],
                             disable_rank5_shape_mapping=True)
    b.add_convolution("conv", 3, 4, 2, 2, 1, 2, "valid", 1, None, None, False, input_name=["x", "w"],
                      output_name="conv")
    b.add_pooling("pool", 2, 3, 2, 3, "MAX", "VALID", "x", "pool")
    b.add_softmax("sm", "x", "sm")
    b.add_inner_product("fc", fc, None, 3, 5, False, "v", "fc")
    got = run(save(b, tmp_path), {"x": x, "w": w, "v": v})
    x64 = x.astype(np.float64)
    assert_accumulated(got["conv"], ref.conv2d(x, w, None, (1, 2)).astype(np.float32), 12)
    assert_exact(got["pool"], ref.pool2d(x, "MAX", (2, 3), (2, 3), (0, 0, 0, 0), (2, 2)).astype(np.float32))
    e = np.exp(x64)
    assert_accumulated(got["sm"], (e / e.sum(axis=1, keepdims=True)).astype(np.float32), 3)
    assert got["fc"].shape == (2, 5)
    assert_accumulated(got["fc"], (v.astype(np.float64) @ fc.T.astype(np.float64)).astype(np.float32), 3)


def test_quantized_convolution_weights(tmp_path, rng):
    """8-bit linear quantization, one scale/bias per output channel: axis 0 of convolution weights
    [O, I, kh, kw], axis 1 of deconvolution weights [I, O, kh, kw]."""
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    q_conv = rng.integers(0, 256, (2, 2, 3, 4)).astype(np.uint8)  # builder layout (kh, kw, I, O)
    q_deconv = rng.integers(0, 256, (2, 2, 3, 4)).astype(np.uint8)  # builder layout (kh, kw, I, O)
    s_conv, b_conv = rng.uniform(0.01, 0.02, 4).astype(np.float32), rng.uniform(-1, 1, 4).astype(np.float32)
    s_dec, b_dec = rng.uniform(0.01, 0.02, 4).astype(np.float32), rng.uniform(-1, 1, 4).astype(np.float32)
    b = builder([("x", x.shape)], ["conv", "deconv"])
    b.add_convolution("conv", 3, 4, 2, 2, 1, 1, "valid", 1, q_conv.tobytes(), None, False, input_name="x",
                      output_name="conv", quantization_type="linear", nbits=8, quant_scale=s_conv, quant_bias=b_conv)
    b.add_convolution("deconv", 3, 4, 2, 2, 2, 2, "valid", 1, np.zeros((2, 2, 3, 4), np.float32), None, False,
                      is_deconv=True, input_name="x", output_name="deconv")
    wp = b.spec.neuralNetwork.layers[-1].convolution.weights  # the builder cannot quantize deconvolutions
    wp.Clear()
    wp.rawValue = q_deconv.transpose(2, 3, 0, 1).tobytes()
    wp.quantization.numberOfBits = 8
    wp.quantization.linearQuantization.scale.extend(s_dec.tolist())
    wp.quantization.linearQuantization.bias.extend(b_dec.tolist())
    got = run(save(b, tmp_path), {"x": x})
    # dequantize as the spec's linear formula, in the Core ML layouts the builder writes
    wc = q_conv.transpose(3, 2, 0, 1).astype(np.float64) * s_conv.reshape(4, 1, 1, 1) + b_conv.reshape(4, 1, 1, 1)
    wd = q_deconv.transpose(2, 3, 0, 1).astype(np.float64) * s_dec.reshape(1, 4, 1, 1) + b_dec.reshape(1, 4, 1, 1)
    assert_accumulated(got["conv"], ref.conv2d(x[None], wc)[0].astype(np.float32), 12)
    assert_accumulated(got["deconv"], ref.deconv2d(x[None].astype(np.float64), wd, None, (2, 2))[0].astype(np.float32),
                       12)
