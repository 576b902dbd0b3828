"""Quantized nn ops vs onnxruntime (QLinearConv, QLinearMatMul, DequantizeLinear) and float64 numpy
formulas written here (dequantize -> float op -> requantize with round half away from zero).

ORT rounds half to even and our requantization rounds half away from zero: results may differ by
one quantum at ties, so integer results are compared within 1 (most are exact)."""
import numpy as np
import pytest
from onnx import helper

import estuary
from estuary.dialects.core import OPS, TensorSpec
from estuary.dialects.graph import Graph
from helpers import assert_ulp, run_onnx


def _run(inputs, build, consts=None, target="llvm-cpu", device=None):
    g = Graph()
    vals = {k: g.input(k, TensorSpec(v.shape, str(v.dtype))) for k, v in inputs.items()}
    for k, v in (consts or {}).items():
        vals[k] = g.constant(v, TensorSpec(v.shape, str(v.dtype)))
    return estuary.load(estuary.compile(g.finish(build(g, vals)), target=target), device=device).run(inputs)


def _away(x):
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _within_one(got, ref, frac_exact=0.9):
    got, ref = got.astype(np.int64), np.asarray(ref).astype(np.int64)
    assert got.shape == ref.shape
    diff = np.abs(got - ref)
    assert diff.max() <= 1, f"max difference {diff.max()} quanta"
    assert (diff == 0).mean() >= frac_exact, f"only {(diff == 0).mean():.2%} exact"


def test_conv_depthwise_matmul_vs_onnxruntime(rng):
    x = rng.integers(0, 256, (1, 7, 6, 3)).astype(np.uint8)
    w = rng.integers(0, 256, (4, 3, 3, 3)).astype(np.uint8)
    dw = rng.integers(0, 256, (1, 3, 3, 6)).astype(np.uint8)  # depthwise, multiplier 2
    bias = rng.integers(-3000, 3000, 4).astype(np.int32)
    dbias = rng.integers(-3000, 3000, 6).astype(np.int32)
    a = rng.integers(0, 256, (5, 12)).astype(np.uint8)
    b = rng.integers(0, 256, (7, 12)).astype(np.uint8)
    sx, zx, sw, zw, so, zo = 0.05, 120, 0.01, 131, 0.4, 100
    conv_attrs = dict(input_zero_point=zx, filter_zero_point=zw, multiplier=sx * sw / so, output_zero_point=zo)

    def build(g, v):
        return [("conv", g.op("quantized_conv2d", [v["x"], v["w"], v["bias"]],
                              dict(conv_attrs, padding=[1, 0, 2, 1], strides=[2, 1]))),
                ("dw", g.op("quantized_conv2d", [v["x"], v["dw"], v["dbias"]],
                            dict(conv_attrs, padding=[1, 1, 1, 1], filter_layout="ihwo", output_min=100,
                                 output_max=200))),
                ("mm", g.op("quantized_matmul", [v["a"], v["b"]],
                            dict(a_zero_point=7, b_zero_point=250, multiplier=0.3 * 0.02 / 0.5, output_zero_point=3)))]

    got = _run({"x": x, "a": a}, build, {"w": w, "dw": dw, "bias": bias, "dbias": dbias, "b": b})
    init = {"sx": np.float32(sx), "zx": np.uint8(zx), "sw": np.float32(sw), "zw": np.uint8(zw),
            "so": np.float32(so), "zo": np.uint8(zo), "w": w.transpose(0, 3, 1, 2), "bias": bias,
            "dw": dw.reshape(3, 3, 6).transpose(2, 0, 1)[:, None], "dbias": dbias,
            "b": b.T.copy(), "sa": np.float32(0.3), "za": np.uint8(7), "sb": np.float32(0.02), "zb": np.uint8(250),
            "sm": np.float32(0.5), "zm": np.uint8(3)}
    nodes = [helper.make_node("QLinearConv", ["x", "sx", "zx", "w", "sw", "zw", "so", "zo", "bias"], ["conv"],
                              pads=[1, 2, 0, 1], strides=[2, 1]),
             helper.make_node("QLinearConv", ["x", "sx", "zx", "dw", "sw", "zw", "so", "zo", "dbias"], ["dw_out"],
                              pads=[1, 1, 1, 1], group=3),
             helper.make_node("QLinearMatMul", ["a", "sa", "za", "b", "sb", "zb", "sm", "zm"], ["mm"])]
    ref = run_onnx(nodes, {"x": x.transpose(0, 3, 1, 2), "a": a},
                   [("conv", np.uint8, None), ("dw_out", np.uint8, None), ("mm", np.uint8, None)],
                   initializers=init)
    _within_one(got["conv"], ref["conv"].transpose(0, 2, 3, 1))
    _within_one(got["dw"], np.clip(ref["dw_out"].transpose(0, 2, 3, 1), 100, 200))
    _within_one(got["mm"], ref["mm"])
    # the numpy references (constant folding) agree with the compiled ops
    fold = OPS["quantized_conv2d"].reference
    _within_one(fold(x, w, bias, padding=[1, 0, 2, 1], strides=[2, 1], filter_layout="ohwi", output_min=0,
                     output_max=255, **conv_attrs), got["conv"])
    _within_one(fold(x, dw, dbias, padding=[1, 1, 1, 1], strides=[1, 1], filter_layout="ihwo", output_min=100,
                     output_max=200, **conv_attrs), got["dw"])
    _within_one(OPS["quantized_matmul"].reference(a, b, None, a_zero_point=7, b_zero_point=250,
                                                       multiplier=0.3 * 0.02 / 0.5, output_zero_point=3,
                                                       output_min=0, output_max=255), got["mm"])


@pytest.mark.parametrize("size,padding,strides,depthwise", [
    ((1, 1), [1, 0, 1, 0], [2, 2], False),  # both axes: every window reads only the begin padding
    ((1, 3), [1, 0, 0, 0], [3, 1], False),  # one axis
    ((2, 2), [2, 0, 0, 0], [4, 1], True),
])
def test_conv_windows_in_begin_padding_vs_onnxruntime(size, padding, strides, depthwise, rng):
    """A stride past the whole input: the output rows there are the requantized bias alone."""
    x = rng.integers(0, 256, (1, *size, 3)).astype(np.uint8)
    w = rng.integers(0, 256, (1, 1, 1, 3) if depthwise else (4, 1, 1, 3)).astype(np.uint8)
    cout = 3 if depthwise else 4
    bias = rng.integers(-3000, 3000, cout).astype(np.int32)
    sx, zx, sw, zw, so, zo = 0.05, 120, 0.01, 131, 0.4, 100
    attrs = dict(input_zero_point=zx, filter_zero_point=zw, multiplier=sx * sw / so, output_zero_point=zo,
                 padding=padding, strides=strides, filter_layout="ihwo" if depthwise else "ohwi")
    got = _run({"x": x}, lambda g, v: [("y", g.op("quantized_conv2d", [v["x"], v["w"], v["bias"]], attrs))],
               {"w": w, "bias": bias})["y"]
    onnx_w = w.reshape(3, 1, 1, 1) if depthwise else w.transpose(0, 3, 1, 2)
    init = {"sx": np.float32(sx), "zx": np.uint8(zx), "sw": np.float32(sw), "zw": np.uint8(zw),
            "so": np.float32(so), "zo": np.uint8(zo), "w": onnx_w, "bias": bias}
    node = helper.make_node("QLinearConv", ["x", "sx", "zx", "w", "sw", "zw", "so", "zo", "bias"], ["y"],
                            pads=[padding[0], padding[2], padding[1], padding[3]], strides=strides,
                            group=3 if depthwise else 1)
    ref = run_onnx([node], {"x": x.transpose(0, 3, 1, 2)}, [("y", np.uint8, None)], initializers=init)["y"]
    _within_one(got, ref.transpose(0, 2, 3, 1), frac_exact=0.5)


def test_dequantize_requantize_pool_softmax_table(rng):
    x = rng.integers(0, 256, (2, 5, 6, 3)).astype(np.uint8)
    acc = rng.integers(-20000, 20000, (4, 9)).astype(np.int32)
    table = rng.integers(0, 256, 256).astype(np.uint8)
    sm = rng.integers(0, 256, (3, 10)).astype(np.uint8)

    def build(g, v):
        return [("deq", g.op("dequantize", [v["x"]], {"scale": 0.037, "zero_point": 77})),
                ("rq8", g.op("requantize", [v["x"]], dict(input_zero_point=77, multiplier=0.37,
                                                          output_zero_point=20, output_min=25, output_max=240))),
                ("rq32", g.op("requantize", [v["acc"]], dict(multiplier=0.0123, output_zero_point=128))),
                ("wide", g.op("requantize", [v["x"]], dict(input_zero_point=77, multiplier=1.0, to="int32",
                                                           output_min=-300, output_max=300))),
                ("avg", g.op("quantized_average_pool2d", [v["x"]], dict(window_dimensions=[3, 2], padding=[1, 1, 0, 1],
                                                                       strides=[2, 2], output_max=150))),
                ("tab", g.op("table_lookup", [v["x"], v["table"]])),
                ("sm", g.op("quantized_softmax", [v["sm"]], {"scale": 0.05}))]

    got = _run({"x": x, "acc": acc, "sm": sm}, build, {"table": table})
    deq = run_onnx([helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"])], {"x": x},
                   [("y", np.float32, None)], initializers={"s": np.float32(0.037), "z": np.uint8(77)})["y"]
    assert_ulp(got["deq"], deq, 1)
    xi = x.astype(np.float64)
    np.testing.assert_array_equal(got["rq8"], np.clip(_away((xi - 77) * 0.37) + 20, 25, 240))
    np.testing.assert_array_equal(got["rq32"], np.clip(_away(acc * 0.0123) + 128, 0, 255))
    np.testing.assert_array_equal(got["wide"], (xi - 77).astype(np.int32))
    # average over the non-padding part of each window, rounded half up (integer (sum + n/2) / n)
    padded = np.pad(xi, [(0, 0), (1, 1), (0, 1), (0, 0)], constant_values=np.nan)
    ref = np.zeros((2, 3, 3, 3))
    for i in range(3):
        for j in range(3):
            ref[:, i, j] = np.nanmean(padded[:, 2 * i:2 * i + 3, 2 * j:2 * j + 2], axis=(1, 2))
    _within_one(got["avg"], np.clip(np.floor(ref + 0.5), 0, 150), frac_exact=1.0)
    np.testing.assert_array_equal(got["tab"], table[x])
    e = np.exp(0.05 * (sm - sm.max(-1, keepdims=True).astype(np.float64)))
    _within_one(got["sm"], np.clip(_away(e / e.sum(-1, keepdims=True) * 256), 0, 255))
    # the numpy references (constant folding) agree with the compiled ops
    ref_of = {k: OPS[k].reference for k in ("dequantize", "requantize", "quantized_average_pool2d",
                                                 "table_lookup", "quantized_softmax")}
    np.testing.assert_array_equal(ref_of["dequantize"](x, scale=0.037, zero_point=77), got["deq"])
    rq = ref_of["requantize"](acc, input_zero_point=0, multiplier=0.0123, output_zero_point=128, output_min=0,
                              output_max=255, to="uint8")
    np.testing.assert_array_equal(rq, got["rq32"])
    np.testing.assert_array_equal(ref_of["quantized_average_pool2d"](x, window_dimensions=[3, 2], padding=[1, 1, 0, 1],
                                                                     strides=[2, 2], output_min=0, output_max=150),
                                  got["avg"])
    np.testing.assert_array_equal(ref_of["table_lookup"](x, table), got["tab"])
    _within_one(ref_of["quantized_softmax"](sm, scale=0.05), got["sm"])


@pytest.mark.vulkan
def test_conv_softmax_on_vulkan(rng):
    """The int8 TOSA convolution, the requantization and the softmax on lavapipe (5x5x3 and 4x6 outputs)."""
    x = rng.integers(0, 256, (1, 5, 5, 2)).astype(np.uint8)
    w = rng.integers(0, 256, (3, 3, 3, 2)).astype(np.uint8)
    sm = rng.integers(0, 256, (4, 6)).astype(np.uint8)

    def build(g, v):
        return [("conv", g.op("quantized_conv2d", [v["x"], v["w"]],
                              dict(input_zero_point=90, filter_zero_point=140, multiplier=0.01 * 0.02 / 0.1,
                                   output_zero_point=128, padding=[1, 1, 1, 1]))),
                ("sm", g.op("quantized_softmax", [v["sm"]], {"scale": 0.08}))]

    got = _run({"x": x, "sm": sm}, build, {"w": w}, target="vulkan-spirv", device="vulkan")
    init = {"sx": np.float32(0.01), "zx": np.uint8(90), "w": w.transpose(0, 3, 1, 2), "sw": np.float32(0.02),
            "zw": np.uint8(140), "so": np.float32(0.1), "zo": np.uint8(128)}
    ref = run_onnx([helper.make_node("QLinearConv", ["x", "sx", "zx", "w", "sw", "zw", "so", "zo"], ["y"],
                                     pads=[1, 1, 1, 1])], {"x": x.transpose(0, 3, 1, 2)}, [("y", np.uint8, None)],
                   initializers=init)["y"]
    _within_one(got["conv"], ref.transpose(0, 2, 3, 1))
    e = np.exp(0.08 * (sm - sm.max(-1, keepdims=True).astype(np.float64)))
    _within_one(got["sm"], np.clip(_away(e / e.sum(-1, keepdims=True) * 256), 0, 255))


def test_int8_padding_fused_only_when_every_padding_is_an_int8_convolutions():
    """llvm-cpu: a module whose only paddings are int8 convolutions' compiles with IREE's consumer
    pad fusion and without the barriers; a padded int8 average pooling beside them keeps both as
    they were (backends/llvm_cpu/pad_fusion.py)."""
    from estuary.base.options import CompileOptions
    from estuary.backends.options import create_options
    from estuary.backends.llvm_cpu import pad_fusion
    from estuary.compiler import lower_nn

    attrs = dict(input_zero_point=120, filter_zero_point=3, multiplier=0.01, output_zero_point=9, padding=[1, 1, 1, 1])
    w = np.ones((4, 3, 3, 3), np.uint8)

    def lowered(with_pool):
        g = Graph()
        x = g.input("x", TensorSpec((1, 6, 6, 3), "uint8"))
        y = g.op("quantized_conv2d", [x, g.constant(w, TensorSpec(w.shape, "uint8"))], attrs)
        outs = [("y", y)]
        if with_pool:
            outs.append(("p", g.op("quantized_average_pool2d", [y], dict(window_dimensions=[3, 3],
                                                                         padding=[1, 1, 1, 1]))))
        nn = g.finish(outs)
        flags, _ = lower_nn(nn, create_options())
        return flags, str(nn.module).count("util.optimization_barrier")

    flags, barriers = lowered(False)
    assert pad_fusion.FLAG in flags and barriers == 0
    flags, barriers = lowered(True)
    assert pad_fusion.FLAG not in flags and barriers == 1
