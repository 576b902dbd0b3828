"""Core ML ND math layers (element-wise, comparisons, logic, broadcastable arithmetic, reductions,
softmaxND, batchedMatmul, layerNormalization) vs float64 numpy implementations of the spec's
formulas; several layers share one compiled model."""
import math

import numpy as np
import pytest

pytest.importorskip("coremltools")
from coremltools.models import datatypes  # noqa: E402
from coremltools.models.neural_network import NeuralNetworkBuilder  # noqa: E402

from tests.importers.coreml.util import run, save  # noqa: E402
from helpers import assert_accumulated, assert_exact, assert_ulp  # noqa: E402

_erf = np.vectorize(math.erf)


def builder(inputs, outputs):
    return NeuralNetworkBuilder([(n, datatypes.Array(*s)) for n, s in inputs], [(n, None) for n in outputs],
                                disable_rank5_shape_mapping=True)


def f32(x):
    return np.asarray(x).astype(np.float32)


def test_unary_layers(tmp_path, rng):
    x = rng.uniform(-0.95, 0.95, (2, 3, 5)).astype(np.float32)
    x.flat[:6] = [-2.5, -0.5, 0.5, 1.5, 2.5, 0.0]  # round ties go to even; sign of 0
    big = rng.uniform(1.05, 4.0, (2, 3, 5)).astype(np.float32)
    u = {"ceil": np.ceil, "floor": np.floor, "sign": np.sign, "round": np.round, "exp2": np.exp2,
         "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
         "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "asinh": np.arcsinh, "atanh": np.arctanh,
         "erf": _erf}
    outs = list(u) + ["acosh", "clip", "crelu", "crelu2", "gelu0", "gelu1", "gelu2"]
    b = builder([("x", x.shape), ("big", big.shape)], outs)
    for name in u:
        getattr(b, f"add_{name}")(name, "x", name)
    b.add_acosh("acosh", "big", "acosh")
    b.add_clip("clip", "x", "clip", min_value=-0.3, max_value=0.4)
    b.add_clamped_relu("crelu", "x", "crelu", alpha=0.1, beta=0.5)
    b.add_clamped_relu("crelu2", "x", "crelu2", alpha=2.0, beta=0.3)
    for i, mode in enumerate(["EXACT", "TANH_APPROXIMATION", "SIGMOID_APPROXIMATION"]):
        b.add_gelu(f"gelu{i}", "x", f"gelu{i}", mode=mode)
    got = run(save(b, tmp_path), {"x": x, "big": big})
    x64, big64 = x.astype(np.float64), big.astype(np.float64)
    for name, fn in u.items():
        # IREE's math.atan / math.asinh expansions are off by about 20 ULP in places
        ulp = 0 if name in ("ceil", "floor", "sign", "round") else 32 if name in ("atan", "asinh") else 8
        with np.errstate(invalid="ignore"):  # asin/acos/atanh of the |x| > 1 tie cases: NaN
            assert_ulp(got[name], f32(fn(x64)), ulp)
    assert_ulp(got["acosh"], f32(np.arccosh(big64)), 8)
    assert_exact(got["clip"], f32(np.clip(x64, f32(-0.3), f32(0.4))))
    crelu = lambda v, a, bt: np.minimum(bt, np.where(v >= 0, v, a * v))  # noqa: E731
    assert_ulp(got["crelu"], f32(crelu(x64, float(f32(0.1)), 0.5)), 1)
    assert_ulp(got["crelu2"], f32(crelu(x64, 2.0, float(f32(0.3)))), 1)
    assert_ulp(got["gelu0"], f32(0.5 * x64 * (1 + _erf(x64 / math.sqrt(2)))), 8)
    tanh_gelu = 0.5 * x64 * (1 + np.tanh(math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64 ** 3)))
    # composed of several float32 ops: an absolute + relative tolerance
    np.testing.assert_allclose(got["gelu1"], tanh_gelu, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(got["gelu2"], x64 / (1 + np.exp(-1.702 * x64)), rtol=1e-5, atol=1e-7)


def test_comparison_and_logical_layers(tmp_path, rng):
    a = rng.integers(-2, 3, (2, 3, 4)).astype(np.float32)
    c = rng.integers(-2, 3, (3, 1)).astype(np.float32)
    a.flat[0], c.flat[0] = 0.5, 0.0  # a fractional value is true in logical layers
    names = [k + s for k in ("eq", "ne", "lt", "le", "gt", "ge") for s in ("", "_alpha")]
    b = builder([("a", a.shape), ("c", c.shape)], names + ["AND", "OR", "XOR", "NOT"])
    oracle = {}
    cmp = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
           "ge": np.greater_equal}
    add = {"eq": lambda n, i, alpha: b.add_equal(n, i, n, alpha=alpha),
           "ne": lambda n, i, alpha: b.add_not_equal(n, i, n, alpha=alpha),
           "lt": lambda n, i, alpha: b.add_less_than(n, i, n, alpha=alpha),
           "le": lambda n, i, alpha: b.add_less_than(n, i, n, use_less_than_equal=True, alpha=alpha),
           "gt": lambda n, i, alpha: b.add_greater_than(n, i, n, alpha=alpha),
           "ge": lambda n, i, alpha: b.add_greater_than(n, i, n, use_greater_than_equal=True, alpha=alpha)}
    for k, fn in cmp.items():
        add[k](k, ["a", "c"], 0.0)
        add[k](k + "_alpha", ["a"], 1.0)
        oracle[k] = fn(a, c)
        oracle[k + "_alpha"] = fn(a, 1.0)
    truth = lambda v: v != 0  # noqa: E731
    for mode, fn in {"AND": np.logical_and, "OR": np.logical_or, "XOR": np.logical_xor}.items():
        b.add_logical(mode, ["a", "c"], mode, mode)
        oracle[mode] = fn(truth(a), truth(c))
    b.add_logical("NOT", ["a"], "NOT", "NOT")
    oracle["NOT"] = ~truth(a)
    got = run(save(b, tmp_path), {"a": a, "c": c})
    for n, want in oracle.items():
        assert_exact(got[n], want.astype(np.float32))


def test_broadcastable_arithmetic(tmp_path, rng):
    a = rng.uniform(-4, 4, (2, 3, 4)).astype(np.float32)
    c = rng.choice([-2.5, -1.5, -0.75, 0.5, 1.25, 3.0], (3, 1)).astype(np.float32)
    p = rng.uniform(0.5, 2.0, (2, 3, 4)).astype(np.float32)
    ops = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
           "max": np.maximum, "min": np.minimum, "mod": np.mod, "floor_div": np.floor_divide}
    b = builder([("a", a.shape), ("c", c.shape), ("p", p.shape)], list(ops) + ["pow"])
    for n in ops:
        getattr(b, f"add_{n}_broadcastable")(n, ["a", "c"], n)
    b.add_pow_broadcastable("pow", ["p", "c"], "pow")
    got = run(save(b, tmp_path), {"a": a, "c": c, "p": p})
    a64, c64 = a.astype(np.float64), c.astype(np.float64)
    for n, fn in ops.items():
        assert_ulp(got[n], f32(fn(a64, c64)), 1 if n == "divide" else 0)
    assert_ulp(got["pow"], f32(np.power(p.astype(np.float64), c64)), 4)


REDUCE = {  # builder name: (float64 numpy reduction over axes, keepdims)
    "sum": lambda x, ax, k: np.sum(x, axis=ax, keepdims=k),
    "prod": lambda x, ax, k: np.prod(x, axis=ax, keepdims=k),
    "mean": lambda x, ax, k: np.mean(x, axis=ax, keepdims=k),
    "max": lambda x, ax, k: np.max(x, axis=ax, keepdims=k),
    "min": lambda x, ax, k: np.min(x, axis=ax, keepdims=k),
    "l1": lambda x, ax, k: np.sum(np.abs(x), axis=ax, keepdims=k),
    "l2": lambda x, ax, k: np.sqrt(np.sum(x * x, axis=ax, keepdims=k)),
    "sumsquare": lambda x, ax, k: np.sum(x * x, axis=ax, keepdims=k),
    "logsum": lambda x, ax, k: np.log(np.sum(x, axis=ax, keepdims=k)),
    "logsumexp": lambda x, ax, k: np.log(np.sum(np.exp(x), axis=ax, keepdims=k)),
}
# (axes as given to Core ML, the numpy axes, keepDims, reduceAll)
CASES = [([-1], (2,), True, False), ([0, 2], (0, 2), False, False), (None, (0, 1, 2), False, True),
         ([1, -3], (0, 1), True, False)]


def test_reductions(tmp_path, rng):
    x = rng.uniform(0.5, 1.5, (2, 3, 4)).astype(np.float32)  # positive: logsum is defined
    b = builder([("x", x.shape)], [f"{n}{i}" for n in REDUCE for i in range(len(CASES))])
    want = {}
    for name, fn in REDUCE.items():
        for i, (axes, np_axes, keep, all_) in enumerate(CASES):
            out = f"{name}{i}"
            getattr(b, f"add_reduce_{name}")(out, "x", out, axes=axes, keepdims=keep, reduce_all=all_)
            ref = np.asarray(fn(x.astype(np.float64), np_axes, keep))
            want[out] = (ref.reshape(1) if ref.ndim == 0 else ref, math.prod(x.shape[a] for a in np_axes))
    got = run(save(b, tmp_path), {"x": x})
    for out, (ref, n) in want.items():
        assert got[out].shape == ref.shape, out
        assert_accumulated(got[out], f32(ref), n)


def test_softmax_matmul_layernorm(tmp_path, rng):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    m = rng.standard_normal((4, 5)).astype(np.float32)
    v = rng.standard_normal((4,)).astype(np.float32)
    t = rng.standard_normal((2, 3, 5)).astype(np.float32)
    w = rng.standard_normal((4, 6)).astype(np.float32)
    bias = rng.standard_normal((6,)).astype(np.float32)
    gamma, beta = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((3, 4)).astype(np.float32)
    b = builder([("x", x.shape), ("m", m.shape), ("v", v.shape), ("t", t.shape)],
                ["sm", "sm0", "mm", "mv", "vm", "mt", "mw", "mq", "ln"])
    b.add_softmax_nd("sm", "x", "sm", axis=-1)
    b.add_softmax_nd("sm0", "x", "sm0", axis=0)
    b.add_batched_mat_mul("mm", ["x", "m"], "mm")
    b.add_batched_mat_mul("mv", ["x", "v"], "mv")
    b.add_batched_mat_mul("vm", ["v", "m"], "vm")
    b.add_batched_mat_mul("mt", ["t", "x"], "mt", transpose_a=True, transpose_b=False)
    b.add_batched_mat_mul("mw", ["x"], "mw", weight_matrix_rows=4, weight_matrix_columns=6, W=w, bias=bias)
    wq = rng.integers(-128, 128, (4, 6)).astype(np.int8)  # int8 weights, one scale (dynamic quantization)
    b.add_batched_mat_mul("mq", ["x"], "mq", weight_matrix_rows=4, weight_matrix_columns=6, W=wq.tobytes(),
                          is_quantized_weight=True, quantization_type="linear", nbits=8,
                          quant_scale=np.array([0.05]), int_8_dynamic_quantize=True)
    b.add_layer_normalization("ln", "x", "ln", normalized_shape=[3, 4], gamma=gamma, beta=beta, eps=1e-3)
    got = run(save(b, tmp_path), {"x": x, "m": m, "v": v, "t": t})
    x64 = x.astype(np.float64)
    for out, axis in (("sm", -1), ("sm0", 0)):
        e = np.exp(x64 - x64.max(axis=axis, keepdims=True))
        assert_ulp(got[out], f32(e / e.sum(axis=axis, keepdims=True)), 8)
    assert_accumulated(got["mm"], f32(x64 @ m), 4)
    assert_accumulated(got["mv"], f32(x64 @ v), 4)
    assert got["vm"].shape == (5,)
    assert_accumulated(got["vm"], f32(v.astype(np.float64) @ m), 4)
    assert_accumulated(got["mt"], f32(np.swapaxes(t.astype(np.float64), -1, -2) @ x64), 5)
    assert_accumulated(got["mw"], f32(x64 @ w + bias), 4)
    # int8DynamicQuantize is an execution hint: compared with the float product of the dequantized weights
    assert_accumulated(got["mq"], f32(x64 @ (wq.astype(np.float64) * float(f32(0.05)))), 4)
    mean = x64.mean(axis=(1, 2), keepdims=True)
    var = x64.var(axis=(1, 2), keepdims=True)
    assert_accumulated(got["ln"], f32(gamma * (x64 - mean) / np.sqrt(var + 1e-3) + beta), 12)
