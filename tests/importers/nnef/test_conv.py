"""NNEF conv / deconv (§4.3.1), matmul (§4.7) and linear (§4.9.2) against float64 numpy
implementations of the spec's formulas (border modes, padding, stride, dilation, groups)."""
import itertools

import numpy as np
import pytest

from helpers import assert_accumulated
from tests.importers.nnef.util import graph_text, run, write_model

rng = np.random.default_rng(11)


def border_index(idx, z, border):
    """(index into the input, valid mask) for the spec's extended input (§4.3 Border Modes)."""
    idx = np.asarray(idx)
    if border in ("constant", "ignore"):
        return np.clip(idx, 0, z - 1), (idx >= 0) & (idx < z)
    if border == "replicate":
        out = np.clip(idx, 0, z - 1)
    elif border == "reflect":
        out = np.where(idx < 0, -idx, np.where(idx >= z, 2 * z - 2 - idx, idx))
    else:  # reflect-even
        out = np.where(idx < 0, -idx - 1, np.where(idx >= z, 2 * z - 1 - idx, idx))
    assert (out >= 0).all() and (out < z).all()
    return out, np.ones(idx.shape, bool)


def _gather(x, indices):
    """x[:, :, i1, i2, ...] over an outer product of per-axis (index, mask) pairs."""
    n = len(indices)
    grids = np.ix_(*[i for i, _ in indices])
    mask = np.ones([len(i) for i, _ in indices], bool)
    for a, (_, m) in enumerate(indices):
        mask = mask & m.reshape([-1 if b == a else 1 for b in range(n)])
    return x[(slice(None), slice(None)) + grids] * mask


def conv_ref(x, w, bias, padding, stride, dilation, groups, border):
    """output[b, k2, i] = sum_{k1, j} ext_input[b, k1, i*s + j*d - p] * filter[k2, k1, j]  (+ bias)."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    n = x.ndim - 2
    groups = groups or x.shape[1]
    fd = [(f - 1) * d + 1 for f, d in zip(w.shape[2:], dilation)]
    outs = [(X + p + q - f) // s + 1 for X, (p, q), f, s in zip(x.shape[2:], padding, fd, stride)]
    y = np.zeros((x.shape[0], w.shape[0], *outs))
    cin, cout = x.shape[1] // groups, w.shape[0] // groups
    for j in itertools.product(*[range(f) for f in w.shape[2:]]):
        idx = [border_index(np.arange(o) * s + jj * d - p, X, border)
               for o, s, jj, d, (p, _), X in zip(outs, stride, j, dilation, padding, x.shape[2:])]
        patch = _gather(x, idx)
        for g in range(groups):
            y[:, g * cout:(g + 1) * cout] += np.einsum(
                "bc...,oc->bo...", patch[:, g * cin:(g + 1) * cin], w[g * cout:(g + 1) * cout, :, *j])
    return y + np.asarray(bias, np.float64).reshape([1, -1] + [1] * n)


def deconv_ref(x, w, bias, padding, stride, dilation, groups, border, out_sizes):
    """output[b, k1, i] = sum_{k2, j} ext_input[b, k2, (i + p - j*d) / s] * filter[k2, k1, j], over terms
    with (i + p - j*d) mod s == 0 (+ bias)."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    n = x.ndim - 2
    groups = groups or x.shape[1]
    cin, cout = x.shape[1] // groups, w.shape[1]
    y = np.zeros((x.shape[0], cout * groups, *out_sizes))
    for j in itertools.product(*[range(f) for f in w.shape[2:]]):
        idx = []
        for o, s, jj, d, (p, _), X in zip(out_sizes, stride, j, dilation, padding, x.shape[2:]):
            k = np.arange(o) + p - jj * d
            i, m = border_index(np.floor_divide(k, s), X, border)
            idx.append((i, m & (k % s == 0)))
        patch = _gather(x, idx)
        for g in range(groups):
            y[:, g * cout:(g + 1) * cout] += np.einsum(
                "bc...,co->bo...", patch[:, g * cin:(g + 1) * cin], w[g * cin:(g + 1) * cin, :, *j])
    return y + np.asarray(bias, np.float64).reshape([1, -1] + [1] * n)


def auto_padding(big, fsize, stride, dilation):
    """§4.3 Automatic Padding Calculation: x = ceil(X / s), t = max((x-1)s + fd - X, 0)."""
    pads = []
    for X, f, s, d in zip(big, fsize, stride, dilation):
        t = max((-(-X // s) - 1) * s + (f - 1) * d + 1 - X, 0)
        pads.append((t // 2, t - t // 2))
    return pads


X = rng.standard_normal((2, 4, 7, 6)).astype(np.float32)
X1 = rng.standard_normal((2, 4, 9)).astype(np.float32)
X3 = rng.standard_normal((1, 4, 5, 6, 5)).astype(np.float32)
W = {  # label -> filter / bias data
    "w1": rng.standard_normal((6, 4, 3, 3)), "w2": rng.standard_normal((6, 2, 3, 2)),
    "w3": rng.standard_normal((8, 1, 3, 3)), "w4": rng.standard_normal((5, 4, 3)),
    "wd1": rng.standard_normal((4, 3, 3, 3)), "wd2": rng.standard_normal((4, 2, 3, 3)),
    "wd3": rng.standard_normal((4, 2, 4)), "w5": rng.standard_normal((6, 2, 3, 2, 3)),
    "wd5": rng.standard_normal((4, 3, 3, 2, 2)), "b6": rng.standard_normal((1, 6)), "b5": rng.standard_normal((1, 5)),
    "b3": rng.standard_normal((1, 3)),
}
W = {k: v.astype(np.float32) for k, v in W.items()}
Z = 0.0

# name -> (NNEF expression, oracle thunk, accumulation length)
CONV = {
    "c_auto": ("conv(x, w1, b6)",
               lambda: conv_ref(X, W["w1"], W["b6"], auto_padding([7, 6], [3, 3], [1, 1], [1, 1]), [1, 1], [1, 1], 1,
                                "constant"), 36),
    "c_sd": ("conv(x, w1, padding = [(1, 0), (2, 1)], stride = [2, 1], dilation = [1, 2])",
             lambda: conv_ref(X, W["w1"], Z, [(1, 0), (2, 1)], [2, 1], [1, 2], 1, "constant"), 36),
    "c_grp_rep": ("conv(x, w2, border = 'replicate', padding = [(1, 1), (1, 0)], groups = 2)",
                  lambda: conv_ref(X, W["w2"], Z, [(1, 1), (1, 0)], [1, 1], [1, 1], 2, "replicate"), 12),
    "c_dw_refl": ("conv(x, w3, border = 'reflect', padding = [(1, 1), (2, 2)], stride = [2, 2], groups = 0)",
                  lambda: conv_ref(X, W["w3"], Z, [(1, 1), (2, 2)], [2, 2], [1, 1], 0, "reflect"), 9),
    "c_even": ("conv(x, w1, b6, border = 'reflect-even', padding = [(2, 1), (1, 1)])",
               lambda: conv_ref(X, W["w1"], W["b6"], [(2, 1), (1, 1)], [1, 1], [1, 1], 1, "reflect-even"), 36),
    "c_neg": ("conv(x, w1, padding = [(-1, 0), (1, -1)])",
              lambda: conv_ref(X, W["w1"], Z, [(-1, 0), (1, -1)], [1, 1], [1, 1], 1, "constant"), 36),
    "c_auto_s2": ("conv(x, w1, stride = [2, 2], dilation = [2, 1])",
                  lambda: conv_ref(X, W["w1"], Z, auto_padding([7, 6], [3, 3], [2, 2], [2, 1]), [2, 2], [2, 1], 1,
                                   "constant"), 36),
    "c_1d": ("conv(x1, w4, b5, stride = [2])",
             lambda: conv_ref(X1, W["w4"], W["b5"], auto_padding([9], [3], [2], [1]), [2], [1], 1, "constant"), 12),
    "c_3d": ("conv(x3, w5, b6, stride = [2, 1, 2], dilation = [1, 2, 1], groups = 2)",
             lambda: conv_ref(X3, W["w5"], W["b6"], auto_padding([5, 6, 5], [3, 2, 3], [2, 1, 2], [1, 2, 1]),
                              [2, 1, 2], [1, 2, 1], 2, "constant"), 36),
    "c_3d_rep": ("conv(x3, w5, border = 'replicate', padding = [(1, 0), (0, 1), (2, 1)], groups = 2)",
                 lambda: conv_ref(X3, W["w5"], Z, [(1, 0), (0, 1), (2, 1)], [1, 1, 1], [1, 1, 1], 2, "replicate"), 36),
    "d_auto": ("deconv(x, wd1, b3, stride = [2, 2])",
               lambda: deconv_ref(X, W["wd1"], W["b3"], auto_padding([14, 12], [3, 3], [2, 2], [1, 1]), [2, 2], [1, 1],
                                  1, "constant", [14, 12]), 36),
    "d_sd": ("deconv(x, wd1, padding = [(1, 1), (0, 1)], stride = [2, 1], dilation = [1, 2])",
             lambda: deconv_ref(X, W["wd1"], Z, [(1, 1), (0, 1)], [2, 1], [1, 2], 1, "constant",
                                [(7 - 1) * 2 + 3 - 2, (6 - 1) + 5 - 1]), 36),
    "d_oshape": ("deconv(x, wd1, stride = [2, 2], output_shape = [2, 3, 13, 12])",
                 lambda: deconv_ref(X, W["wd1"], Z, auto_padding([13, 12], [3, 3], [2, 2], [1, 1]), [2, 2], [1, 1], 1,
                                    "constant", [13, 12]), 36),
    "d_oshape_pad": ("deconv(x, wd1, padding = [(1, 1), (1, 1)], stride = [2, 2], output_shape = [2, 3, 14, 12])",
                     lambda: deconv_ref(X, W["wd1"], Z, [(1, 1), (1, 1)], [2, 2], [1, 1], 1, "constant", [14, 12]), 36),
    "d_grp_rep": ("deconv(x, wd2, border = 'replicate', padding = [(1, 1), (1, 1)], stride = [2, 2], groups = 2)",
                  lambda: deconv_ref(X, W["wd2"], Z, [(1, 1), (1, 1)], [2, 2], [1, 1], 2, "replicate",
                                     [6 * 2 + 3 - 2, 5 * 2 + 3 - 2]), 18),
    "d_refl": ("deconv(x, wd1, border = 'reflect', padding = [(2, 0), (0, 2)])",
               lambda: deconv_ref(X, W["wd1"], Z, [(2, 0), (0, 2)], [1, 1], [1, 1], 1, "reflect", [7, 6]), 36),
    "d_even_neg": ("deconv(x, wd1, border = 'reflect-even', padding = [(-1, 1), (0, -1)], stride = [1, 2])",
                   lambda: deconv_ref(X, W["wd1"], Z, [(-1, 1), (0, -1)], [1, 2], [1, 1], 1, "reflect-even",
                                      [6 + 3, 10 + 3 + 1]), 36),
    "d_3d": ("deconv(x3, wd5, stride = [2, 1, 3], dilation = [1, 2, 1], padding = [(1, 0), (2, 1), (0, 2)], "
             "groups = 2)",
             lambda: deconv_ref(X3, W["wd5"], Z, [(1, 0), (2, 1), (0, 2)], [2, 1, 3], [1, 2, 1], 2, "constant",
                                [4 * 2 + 3 - 1, 5 + 3 - 3, 4 * 3 + 2 - 2]), 24),
    "d_3d_refl": ("deconv(x3, wd5, border = 'reflect', stride = [2, 2, 1], padding = [(2, 1), (1, 1), (1, 0)])",
                  lambda: deconv_ref(X3, W["wd5"], Z, [(2, 1), (1, 1), (1, 0)], [2, 2, 1], [1, 1, 1], 1, "reflect",
                                     [4 * 2 + 3 - 3, 5 * 2 + 2 - 2, 4 + 2 - 1]), 24),
    "d_1d": ("deconv(x1, wd3, stride = [3], padding = [(1, 2)])",
             lambda: deconv_ref(X1, W["wd3"], Z, [(1, 2)], [3], [1], 1, "constant", [8 * 3 + 4 - 3]), 16),
}

A = rng.standard_normal((2, 3, 4)).astype(np.float32)
B = rng.standard_normal((2, 4, 5)).astype(np.float32)
B1 = rng.standard_normal((1, 4, 5)).astype(np.float32)
M = rng.standard_normal((3, 4)).astype(np.float32)
a64, b64, b164, m64 = (v.astype(np.float64) for v in (A, B, B1, M))
MATMUL = {
    "mm": ("matmul(a, b)", lambda: a64 @ b64, 4),
    "mm_ta": ("matmul(transpose(a, axes = [0, 2, 1]), b, transposeA = true)", lambda: a64 @ b64, 4),
    "mm_tb": ("matmul(a, transpose(b, axes = [0, 2, 1]), transposeB = true)", lambda: a64 @ b64, 4),
    "mm_tab": ("matmul(b, a, transposeA = true, transposeB = true)",
               lambda: b64.transpose(0, 2, 1) @ a64.transpose(0, 2, 1), 4),
    "mm_bc": ("matmul(a, b1)", lambda: a64 @ b164, 4),
    "lin": ("linear(m, w4r, b5)", lambda: m64 @ W["w4"].reshape(5, 12)[:, :4].astype(np.float64).T + W["b5"], 4),
}
VARIABLES = "\n".join(f"{k} = variable<scalar>(shape = {list(v.shape)}, label = 'conv/{k}');" for k, v in W.items())


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    exprs = {**{k: v[0] for k, v in CONV.items()}, **{k: v[0] for k, v in MATMUL.items()}}
    body = VARIABLES + "\nw4r = slice(reshape(w4, shape = [5, 12]), axes = [1], begin = [0], end = [4]);\n"
    body += "\n".join(f"{k} = {e};" for k, e in exprs.items())
    inputs = {"x": X.shape, "x1": X1.shape, "x3": X3.shape, "a": A.shape, "b": B.shape, "b1": B1.shape, "m": M.shape}
    path = write_model(tmp_path_factory.mktemp("conv"), graph_text(inputs, list(exprs), body),
                       {f"conv/{k}": v for k, v in W.items()})
    return run(path, {"x": X, "x1": X1, "x3": X3, "a": A, "b": B, "b1": B1, "m": M})


@pytest.mark.parametrize("name", sorted(CONV))
def test_conv(results, name):
    _, oracle, n = CONV[name]
    assert_accumulated(results[name], oracle(), n)


@pytest.mark.parametrize("name", sorted(MATMUL))
def test_matmul(results, name):
    _, oracle, n = MATMUL[name]
    assert_accumulated(results[name], oracle(), n)


def test_oracle_matches_onnxruntime():
    """The float64 conv/deconv oracle agrees with onnxruntime Conv / ConvTranspose (constant border)."""
    from onnx import helper

    from helpers import run_onnx

    conv = helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 2, 0, 1], strides=[2, 1], dilations=[1, 2])
    got = run_onnx([conv], {"x": X}, [("y", np.float32, None)], {"w": W["w1"]})["y"]
    np.testing.assert_allclose(got, conv_ref(X, W["w1"], 0.0, [(1, 0), (2, 1)], [2, 1], [1, 2], 1, "constant"),
                               rtol=1e-5, atol=1e-5)
    deconv = helper.make_node("ConvTranspose", ["x", "w"], ["y"], pads=[1, 0, 1, 1], strides=[2, 1],
                              dilations=[1, 2], group=2)
    got = run_onnx([deconv], {"x": X}, [("y", np.float32, None)], {"w": W["wd2"]})["y"]
    want = deconv_ref(X, W["wd2"], 0.0, [(1, 1), (0, 1)], [2, 1], [1, 2], 2, "constant", list(got.shape[2:]))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
