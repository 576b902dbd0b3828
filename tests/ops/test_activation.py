"""Activation ops vs onnxruntime and the spec formulas in float64 numpy (WebNN §7.7.15, 18, 22, 23, 26, 27, 33, 35, 38, 40-42, 44)."""
import math

import numpy as np
import pytest
from onnx import helper

from helpers import assert_accumulated, assert_exact, assert_ulp, graph, op, run_graph, run_onnx


def _f64(fn):
    """A float64 numpy transcription of the spec's formula as an oracle."""
    return lambda x, **o: fn(np.asarray(x, np.float64), **o)


def _gelu(x):
    # 0.5 * x * (1 + erf(x / sqrt 2)) through the standard library's erfc: torch's float64 gelu
    # forms 1 + erf and loses all precision below x = -8
    return 0.5 * x * np.vectorize(math.erfc)(-x / math.sqrt(2))


# WebNN name -> (options, ONNX node, precise oracle on float64, ULP budget vs that oracle,
# ULP budget vs onnxruntime or None). onnxruntime's float32 kernels approximate Sigmoid (~100 ULP),
# and lose precision to cancellation in Elu/HardSigmoid/HardSwish near their zero crossings and in
# Gelu's negative tail (thousands of ULP): those are checked to the ULP against float64 numpy,
# and against onnxruntime to an absolute 1e-6 (same semantics).
CASES = {
    "relu": ({}, helper.make_node("Relu", ["x"], ["y"]), _f64(lambda x: np.maximum(x, 0)), 0, 0),
    "leakyRelu": ({"alpha": 0.3}, helper.make_node("LeakyRelu", ["x"], ["y"], alpha=0.3),
                  _f64(lambda x, alpha: np.where(x >= 0, x, alpha * x)), 0, 0),
    "tanh": ({}, helper.make_node("Tanh", ["x"], ["y"]), _f64(np.tanh), 4, 4),
    "softplus": ({}, helper.make_node("Softplus", ["x"], ["y"]), _f64(lambda x: np.logaddexp(0, x)), 4, 6),
    "softsign": ({}, helper.make_node("Softsign", ["x"], ["y"]), _f64(lambda x: x / (1 + np.abs(x))), 2, 2),
    "sigmoid": ({}, helper.make_node("Sigmoid", ["x"], ["y"]), _f64(lambda x: 1 / (1 + np.exp(-x))), 4, None),
    "elu": ({"alpha": 0.7}, helper.make_node("Elu", ["x"], ["y"], alpha=0.7),
            _f64(lambda x, alpha: np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))), 4, None),
    "gelu": ({}, helper.make_node("Gelu", ["x"], ["y"]), _gelu, 8, None),
    "hardSigmoid": ({"alpha": 0.3, "beta": 0.4},
                    helper.make_node("HardSigmoid", ["x"], ["y"], alpha=0.3, beta=0.4),
                    _f64(lambda x, alpha, beta: np.clip(alpha * x + beta, 0, 1)), 2, None),
    "hardSwish": ({}, helper.make_node("HardSwish", ["x"], ["y"]), _f64(lambda x: x * np.clip(x + 3, 0, 6) / 6), 4, None),
}


def _run(js, x, **options):
    doc = graph({"x": x}, [op(js, ("input", "x"), **{**CASES[js][0], **options})], ["y"])
    return run_graph(doc, {"x": x})["y"]


def _precise(js, x):
    """The precise oracle in float64, options cast to the input's dtype first (as the spec does)."""
    options = {k: float(x.dtype.type(v)) for k, v in CASES[js][0].items()}
    with np.errstate(all="ignore"):
        return CASES[js][2](x.astype(np.float64), **options).astype(x.dtype)


def _onnx(js, x):
    return run_onnx([CASES[js][1]], {"x": x}, [("y", x.dtype, None)])["y"]


@pytest.mark.parametrize("js", sorted(CASES))
def test_activation_float32(js, rng):
    x = rng.uniform(-5, 5, (2, 3, 7)).astype(np.float32)
    x[0, 0, :4] = [0.0, -0.0, -3.0, 3.0]  # zeros and the hard* kinks
    got = _run(js, x)
    _, _, _, ulp, ort_ulp = CASES[js]
    assert_ulp(got, _precise(js, x), ulp)
    if ort_ulp is None:
        np.testing.assert_allclose(got, _onnx(js, x), rtol=0, atol=1e-6)
    else:
        assert_ulp(got, _onnx(js, x), ort_ulp)


@pytest.mark.parametrize("js", ["sigmoid", "softplus", "tanh", "elu", pytest.param("gelu", marks=pytest.mark.cpu_only(
    "Vulkan's exp and erf: gelu of |x| < 1e-17 was 61 ULP off on lavapipe"))])
def test_extreme_inputs(js):
    """No overflow for large magnitudes, no cancellation near zero, infinities and NaN handled."""
    x = np.array([-100, -30, -12, -9, -1e-3, -1e-6, 0, 1e-6, 1e-3, 9, 30, 88.8, 100, 3e38], np.float32)
    if js != "gelu":  # gelu(-inf) is -inf * 0 = NaN by the spec's formula: not a useful case
        x = np.concatenate([x, np.array([-np.inf, np.inf, np.nan], np.float32)])
    got = _run(js, x)
    assert np.all(np.isfinite(got[np.isfinite(x)]))
    assert_ulp(got, _precise(js, x), CASES[js][3])


@pytest.mark.parametrize("js", ["relu", "sigmoid", "tanh", "elu", "gelu", "softsign", "hardSigmoid"])
def test_activation_float16(js, rng):
    x = rng.uniform(-4, 4, (16,)).astype(np.float16)
    got = _run(js, x)
    assert got.dtype == np.float16
    assert_ulp(got, _precise(js, x), 1)  # computed in float32, rounded once
    np.testing.assert_allclose(got.astype(np.float32), _onnx(js, x).astype(np.float32), rtol=2e-3, atol=2e-3)


def test_linear(rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    got = _run_linear(x, alpha=2.5, beta=-1.0)
    # ONNX has no Linear: alpha * x + beta as Mul then Add, as the spec's decomposition
    ref = run_onnx([helper.make_node("Mul", ["x", "a"], ["t"]), helper.make_node("Add", ["t", "b"], ["y"])],
                   {"x": x}, [("y", np.float32, None)],
                   initializers={"a": np.float32(2.5), "b": np.float32(-1.0)})["y"]
    # IREE contracts the multiply-add into one rounding: off by at most an ULP of the product
    assert_accumulated(got, ref, 2, ulp_per_term=1)


def test_linear_defaults(rng):
    x = rng.standard_normal((5,)).astype(np.float32)
    assert_exact(_run_linear(x), x)  # alpha 1, beta 0: the identity


def _run_linear(x, **options):
    return run_graph(graph({"x": x}, [op("linear", ("input", "x"), **options)], ["y"]), {"x": x})["y"]


def _prelu_onnx(x, s):
    """max(0, x) + slope * min(0, x) in ONNX ops (ONNX PRelu is float-only and unidirectional)."""
    nodes = [helper.make_node("Max", ["x", "zero"], ["p"]), helper.make_node("Min", ["x", "zero"], ["n"]),
             helper.make_node("Mul", ["s", "n"], ["t"]), helper.make_node("Add", ["p", "t"], ["y"])]
    return run_onnx(nodes, {"x": x, "s": s}, [("y", x.dtype, None)], initializers={"zero": np.zeros((), x.dtype)})["y"]


@pytest.mark.parametrize("dtype", [np.int32, np.int8])
def test_relu_prelu_int(dtype, rng):
    x = rng.integers(-50, 50, (3, 4)).astype(dtype)
    s = rng.integers(-2, 3, (4,)).astype(dtype)
    doc = graph({"x": x, "s": s}, [op("relu", ("input", "x"), outputs="r"),
                                   op("prelu", ("input", "x"), ("slope", "s"), outputs="p")], ["r", "p"])
    got = run_graph(doc, {"x": x, "s": s})
    assert_exact(got["r"], run_onnx([helper.make_node("Relu", ["x"], ["y"])], {"x": x}, [("y", dtype, None)])["y"])
    assert_exact(got["p"], _prelu_onnx(x, s))


@pytest.mark.parametrize("x_shape,s_shape", [((2, 3, 4, 4), (3, 1, 1)), ((3, 1), (2, 1, 4))])
def test_prelu_broadcast_float(x_shape, s_shape, rng):
    x = rng.standard_normal(x_shape).astype(np.float32)
    s = rng.standard_normal(s_shape).astype(np.float32)
    got = run_graph(graph({"x": x, "s": s}, [op("prelu", ("input", "x"), ("slope", "s"))], ["y"]), {"x": x, "s": s})["y"]
    if np.broadcast_shapes(x_shape, s_shape) == x_shape:
        ref = run_onnx([helper.make_node("PRelu", ["x", "s"], ["y"])], {"x": x, "s": s}, [("y", np.float32, None)])["y"]
    else:  # the spec broadcasts bidirectionally; ONNX PRelu only from slope to input
        ref = _prelu_onnx(x, s)
    assert_ulp(got, ref, 0)


def _softmax(x, axis, **kw):
    doc = graph({"x": x}, [op("softmax", ("input", "x"), ("axis", axis))], ["y"])
    return run_graph(doc, {"x": x}, **kw)["y"]


def _softmax_onnx(x, axis):
    return run_onnx([helper.make_node("Softmax", ["x"], ["y"], axis=axis)], {"x": x}, [("y", x.dtype, None)])["y"]


@pytest.mark.parametrize("shape,axis", [((2, 10), 1), ((3, 4, 5), 0), ((2, 3, 6), 2), ((2, 3, 6), 1),
                                        ((1, 1000), 1)])
def test_softmax(shape, axis, rng):
    x = (rng.standard_normal(shape) * 10).astype(np.float32)
    assert_accumulated(_softmax(x, axis), _softmax_onnx(x, axis), shape[axis])


def test_softmax_float16(rng):
    x = (rng.standard_normal((3, 64)) * 4).astype(np.float16)
    got = _softmax(x, 1)
    assert got.dtype == np.float16
    # accumulated in float32: one rounding to float16 beyond the float32 result
    assert_ulp(got, _softmax_onnx(x.astype(np.float32), 1).astype(np.float16), 1)


def test_softmax_stable_for_huge_inputs():
    x = np.array([[1000, 1001, 999], [-1000, -1e4, -999], [3e38, -3e38, 0]], np.float32)
    got = _softmax(x, 1)
    assert np.all(np.isfinite(got))
    assert_accumulated(got, _softmax_onnx(x, 1), 3)


@pytest.mark.vulkan
def test_vulkan_softmax(rng):
    x = (rng.standard_normal((4, 32)) * 10).astype(np.float32)
    assert_accumulated(_softmax(x, 1, target="vulkan-spirv"), _softmax_onnx(x, 1), 32, ulp_per_term=4)


@pytest.mark.vulkan
def test_vulkan_sigmoid(rng):
    x = rng.uniform(-20, 20, (4, 8)).astype(np.float32)
    doc = graph({"x": x}, [op("sigmoid", ("input", "x"))], ["y"])
    got = run_graph(doc, {"x": x}, target="vulkan-spirv")["y"]
    assert_ulp(got, _precise("sigmoid", x), 8)  # Vulkan's exp is allowed 3 + 2|x| ULP
