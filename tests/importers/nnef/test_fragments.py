"""NNEF compound fragments (§4.9 and the parser's standard library) against float64 numpy
implementations of the fragments' formulas written here; one compiled graph."""
import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

from helpers import assert_accumulated, assert_exact, assert_ulp
from tests.importers.nnef.util import graph_text, run, write_model

rng = np.random.default_rng(5)
X = rng.standard_normal((2, 4, 5, 6)).astype(np.float32)
Y = rng.standard_normal((2, 4, 5, 6)).astype(np.float32)
x, y = X.astype(np.float64), Y.astype(np.float64)
ALPHA = rng.uniform(0.1, 0.5, (1, 4)).astype(np.float32)
MEAN, VAR = rng.standard_normal((1, 4)).astype(np.float32), rng.uniform(0.5, 2, (1, 4)).astype(np.float32)
OFFSET, SCALE = rng.standard_normal((1, 4)).astype(np.float32), rng.standard_normal((1, 4)).astype(np.float32)
MEAN3 = rng.standard_normal((1, 4, 5)).astype(np.float32)  # not per-channel: the fragment's formula
PLANE = rng.standard_normal((4, 1, 3, 3)).astype(np.float32)
POINT = rng.standard_normal((6, 4, 1, 1)).astype(np.float32)
BIAS = rng.standard_normal((1, 6)).astype(np.float32)
DPLANE = rng.standard_normal((4, 1, 3, 3)).astype(np.float32)
DPOINT = rng.standard_normal((6, 4, 1, 1)).astype(np.float32)

# quantizer inputs kept away from rounding ties: k + u with u in [0.1, 0.4] or [0.6, 0.9]
_frac = rng.uniform(0.1, 0.4, X.shape) + 0.5 * rng.integers(0, 2, X.shape)
Q_LIN = ((rng.integers(-3, 19, X.shape) + _frac) / 15 * 3 - 1.2).astype(np.float32)  # linear grid on [-1, 2]
Q_ZP = ((rng.integers(-140, 140, X.shape) + _frac) * 0.05).astype(np.float32)
Q_LOG = (np.sign(rng.standard_normal(X.shape)) * 2.0 ** (rng.integers(-12, 4, X.shape) + _frac)).astype(np.float32)


def ch(v):
    return np.asarray(v, np.float64).reshape(1, -1, 1, 1)


def box_mean(v, size):
    """box(v, size, normalize = true) with the default 'constant' border and automatic padding."""
    pads = [((f - 1) // 2, f - 1 - (f - 1) // 2) for f in size]
    windows = sliding_window_view(np.pad(v, pads), size)
    return windows.sum(axis=tuple(range(-len(size), 0))) / np.prod(size)


def conv(v, w, groups=1, pad=0):
    """NCHW x OIHW correlation, stride 1."""
    v = np.pad(v, [(0, 0), (0, 0), (pad, pad), (pad, pad)])
    n, cin, _, _ = v.shape
    cout, cg, kh, kw = w.shape
    win = sliding_window_view(v, (kh, kw), axis=(2, 3))  # n, c, oh, ow, kh, kw
    out = np.zeros((n, cout) + win.shape[2:4])
    per = cout // groups
    for o in range(cout):
        g = o // per
        out[:, o] = np.einsum("ncxyhw,chw->nxy", win[:, g * cg:(g + 1) * cg], w[o].astype(np.float64))
    return out


def deconv(v, w, groups=1, pad=0):
    """NCHW transposed convolution with IOHW filters, stride 1: out[o] += v[c] * w[c, o - group base]."""
    n, cin, h, wd = v.shape
    _, og, kh, kw = w.shape
    out = np.zeros((n, og * groups, h + kh - 1, wd + kw - 1))
    per = cin // groups
    for c in range(cin):
        g = c // per
        for oo in range(og):
            for i in range(kh):
                for j in range(kw):
                    out[:, g * og + oo, i:i + h, j:j + wd] += v[:, c] * float(w[c, oo, i, j])
    return out[:, :, pad:out.shape[2] - pad, pad:out.shape[3] - pad]


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def round_half_up(v):
    return np.floor(v + 0.5)


def softmax(v, axes):
    e = np.exp(v - v.max(axis=axes, keepdims=True))
    return e / e.sum(axis=axes, keepdims=True)


def lin_q(v, lo, hi, bits, signed=False, symmetric=False):
    r = 2 ** bits - 1 - int(signed and symmetric)
    p = (2 ** (bits - 1) - int(symmetric)) if signed else 0
    q = round_half_up((np.clip(v, lo, hi) - lo) / (hi - lo) * r) - p
    return (q + p) / r * (hi - lo) + lo


def zp_q(v, zero, scale, bits, signed, symmetric):
    s = round_half_up(v / scale) + zero
    r = 2 ** (bits - 1) - 1 if signed else 2 ** bits - 1
    q = np.clip(s, (-r if symmetric else -r - 1) if signed else 0, r)
    return (q - zero) * scale


def log_q(v, hi, bits):
    m = np.ceil(np.log2(hi))
    r = 2 ** bits - 1
    with np.errstate(divide="ignore"):
        q = round_half_up(np.clip(np.log2(np.abs(v)), m - r, m))
    return np.sign(v) * 2.0 ** q


l2 = np.sqrt((x ** 2).sum(axis=(2, 3), keepdims=True))
centered = x - box_mean(x, [1, 1, 3, 3])
mean13 = x.mean(axis=(1, 3), keepdims=True)
# name: (expression, expected, tolerance) with tolerance ("ulp", n) or ("acc", n)
CASES = {
    "sigmoid": ("sigmoid(x)", sigmoid(x), ("ulp", 4)),
    "relu": ("relu(x)", np.maximum(x, 0), ("ulp", 0)),
    "leaky": ("leaky_relu(x, alpha = 0.2)", np.where(x < 0, 0.2 * x, x), ("ulp", 1)),
    "prelu": ("prelu(x, alpha)", np.where(x < 0, ch(ALPHA) * x, x), ("ulp", 1)),
    "elu": ("elu(x)", np.where(x < 0, np.exp(x) - 1, x), ("ulp", 4)),
    "elu_a": ("elu(x, alpha = 0.5)", np.where(x < 0, 0.5 * (np.exp(x) - 1), x), ("ulp", 4)),
    # exp(x) - 1 cancels near 0 in float32: an absolute budget
    "selu": ("selu(x)", 1.05070102 * np.where(x < 0, 1.67326319 * (np.exp(x) - 1), x), ("acc", 4)),
    "gelu": ("gelu(x)", x * sigmoid(1.702 * x), ("ulp", 8)),
    "silu": ("silu(x)", x * sigmoid(x), ("ulp", 8)),
    "tanh": ("tanh(x)", np.tanh(x), ("ulp", 4)),
    "softabs": ("softabs(x, epsilon = 0.01)", np.sqrt(x ** 2 + 0.01), ("ulp", 4)),
    "softmax": ("softmax(x)", softmax(x, 1), ("acc", 4)),
    "softmax23": ("softmax(x, axes = [2, 3])", softmax(x, (2, 3)), ("acc", 30)),
    "softplus": ("softplus(x)", np.log(np.exp(x) + 1), ("ulp", 8)),
    "bn": ("batch_normalization(x, mean, var, offset, scale, epsilon = 0.001)",
           ch(OFFSET) + ch(SCALE) * (x - ch(MEAN)) / np.sqrt(ch(VAR) + 0.001), ("acc", 4)),
    "bn_lit": ("batch_normalization(x, mean, var, 0.5, 2.0, epsilon = 0.001)",
               0.5 + 2.0 * (x - ch(MEAN)) / np.sqrt(ch(VAR) + 0.001), ("acc", 4)),
    "bn_full": ("batch_normalization(x, mean3, var, offset, 2.0, epsilon = 0.01)",
                ch(OFFSET) + 2.0 * (x - MEAN3.astype(np.float64)[..., None]) / np.sqrt(ch(VAR) + 0.01), ("acc", 4)),
    "sepconv": ("separable_conv(x, plane, point, bias, padding = [(1,1), (1,1)])",
                conv(conv(x, PLANE, groups=4, pad=1), POINT) + ch(BIAS), ("acc", 40)),
    "sepdeconv": ("separable_deconv(y6, dplane, dpoint, padding = [(1,1), (1,1)])",
                  deconv(deconv(conv(y, POINT), DPOINT), DPLANE, groups=4, pad=1), ("acc", 60)),
    "lrn": ("local_response_normalization(x, size = [1, 3, 1, 1], alpha = 0.5, beta = 0.75, bias = 2.0)",
            x / (2.0 + 0.5 * box_mean(x ** 2, [1, 3, 1, 1])) ** 0.75, ("acc", 8)),
    "lmn": ("local_mean_normalization(x, size = [1, 1, 3, 3])", centered, ("acc", 9)),
    "lvn": ("local_variance_normalization(x, size = [1, 1, 3, 3], bias = 0.1, epsilon = 0.2)",
            x / np.maximum(np.sqrt(box_mean(x ** 2, [1, 1, 3, 3])) + 0.1, 0.2), ("acc", 9)),
    "lcn": ("local_contrast_normalization(x, size = [1, 1, 3, 3], bias = 0.1, epsilon = 0.2)",
            centered / np.maximum(np.sqrt(box_mean(centered ** 2, [1, 1, 3, 3])) + 0.1, 0.2), ("acc", 30)),
    "l1n": ("l1_normalization(x, axes = [1], bias = 0.5, epsilon = 1.0)",
            x / np.maximum(np.abs(x).sum(axis=1, keepdims=True) + 0.5, 1.0), ("acc", 4)),
    "l2n": ("l2_normalization(x, axes = [2, 3], epsilon = 0.5)", x / np.maximum(l2, 0.5), ("acc", 30)),
    "mom_mean": (None, mean13, ("acc", 24)),
    "mom_var": (None, ((x - mean13) ** 2).mean(axis=(1, 3), keepdims=True), ("acc", 48)),
    "linq": ("linear_quantize(ql, min = -1.2, max = 1.8, bits = 4)",
             lin_q(Q_LIN.astype(np.float64), -1.2, 1.8, 4), ("acc", 4)),
    "mmq": ("min_max_linear_quantize(ql, min = -1.2, max = 1.8, bits = 4, signed = true, symmetric = true)",
            lin_q(Q_LIN.astype(np.float64), -1.2, 1.8, 4, True, True), ("acc", 4)),
    "zpq": ("zero_point_linear_quantize(qz, zero_point = 3, scale = 0.05, bits = 8, signed = true, "
            "symmetric = false)", zp_q(Q_ZP.astype(np.float64), 3, 0.05, 8, True, False), ("ulp", 4)),
    "zpq_u": ("zero_point_linear_quantize(qz, zero_point = 100, scale = 0.05, bits = 8, signed = false, "
              "symmetric = false)", zp_q(Q_ZP.astype(np.float64), 100, 0.05, 8, False, False), ("ulp", 4)),
    "logq": ("logarithmic_quantize(qg, max = 6.0, bits = 3)", log_q(Q_LOG.astype(np.float64), 6.0, 3), ("ulp", 0)),
    "addn": ("add_n([x, y, x])", x + y + x, ("acc", 3)),
    "copy_a": (None, x, ("ulp", 0)),
    "copy_b": (None, x, ("ulp", 0)),
}
EXTRA = ["mom_mean, mom_var = moments(x, axes = [1, 3]);", "[copy_a, copy_b] = copy_n(x, times = 2);",
         "y6 = conv(y, point);"]
VARIABLES = {"alpha": ALPHA, "mean": MEAN, "mean3": MEAN3, "var": VAR, "offset": OFFSET, "scale": SCALE, "plane": PLANE,
             "point": POINT, "bias": BIAS, "dplane": DPLANE, "dpoint": DPOINT}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    body = [f"{k} = variable(shape = {list(v.shape)}, label = '{k}');" for k, v in VARIABLES.items()]
    body += EXTRA + [f"{k} = {e};" for k, (e, _, _) in CASES.items() if e]
    inputs = {"x": X.shape, "y": Y.shape, "ql": X.shape, "qz": X.shape, "qg": X.shape}
    text = graph_text(inputs, list(CASES), "\n".join(body))
    folder = write_model(tmp_path_factory.mktemp("fragments"), text, VARIABLES)
    return run(folder, {"x": X, "y": Y, "ql": Q_LIN, "qz": Q_ZP, "qg": Q_LOG})


@pytest.mark.parametrize("name", sorted(CASES))
def test_fragment(results, name):
    _, expected, (kind, n) = CASES[name]
    got = results[name]
    assert got.shape == expected.shape
    if kind == "ulp" and n == 0:
        assert_exact(got, expected.astype(np.float32))
    elif kind == "ulp":
        assert_ulp(got, expected.astype(np.float32), n)
    else:
        assert_accumulated(got, expected, n)
