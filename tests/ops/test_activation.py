"""Activation ops vs onnxruntime."""
import math

import numpy as np
import pytest
from onnx import helper

from helpers import assert_accumulated, assert_exact, assert_ulp, graph, op, run_graph, run_onnx  # noqa: F401

def _erfc(v):
    return np.vectorize(math.erfc)(v)


# WebNN name -> (options, ONNX node, the spec's formula in float64, ULP budget).
# onnxruntime's float kernels approximate some functions (Sigmoid, Elu near 0, Gelu tails) by tens
# of ULP, so the float64 formula is the precise oracle and onnxruntime checks the semantics.
CASES = {
    "sigmoid": ({}, helper.make_node("Sigmoid", ["x"], ["y"]), lambda x: 1 / (1 + np.exp(-x)), 4),
    "tanh": ({}, helper.make_node("Tanh", ["x"], ["y"]), np.tanh, 8),
    "relu": ({}, helper.make_node("Relu", ["x"], ["y"]), lambda x: np.maximum(x, 0), 0),
    "leakyRelu": ({"alpha": 0.3}, helper.make_node("LeakyRelu", ["x"], ["y"], alpha=0.3),
                  lambda x: np.where(x >= 0, x, np.float32(0.3) * x), 1),
    "elu": ({"alpha": 0.7}, helper.make_node("Elu", ["x"], ["y"], alpha=0.7),
            lambda x: np.where(x > 0, x, np.float32(0.7) * np.expm1(x)), 4),
    # gelu tails: exp(-z*z) amplifies the rounding of z*z (~z^2 ULP); WPT allows 18 ULP
    "gelu": ({}, helper.make_node("Gelu", ["x"], ["y"]), lambda x: 0.5 * x * _erfc(-x / np.sqrt(2)), 24),
    "hardSigmoid": ({"alpha": 0.3, "beta": 0.4}, helper.make_node("HardSigmoid", ["x"], ["y"], alpha=0.3, beta=0.4),
                    lambda x: np.clip(np.float32(0.3) * x + np.float32(0.4), 0, 1), 4),
    "hardSwish": ({}, helper.make_node("HardSwish", ["x"], ["y"]), lambda x: x * np.clip(x + 3, 0, 6) / 6, 4),
    "softplus": ({}, helper.make_node("Softplus", ["x"], ["y"]), lambda x: np.logaddexp(0, x), 8),
    "softsign": ({}, helper.make_node("Softsign", ["x"], ["y"]), lambda x: x / (1 + np.abs(x)), 2),
}


def _check(js, x, got, ulp=None):
    options, node, formula, budget = CASES[js]
    exact = formula(x.astype(np.float64)).astype(x.dtype)
    assert_ulp(got, exact, budget if ulp is None else ulp)
    ort = run_onnx([node], {"x": x.astype(np.float32)}, [("y", np.float32, None)])["y"]
    np.testing.assert_allclose(exact.astype(np.float32), ort, rtol=2e-3, atol=1e-6)  # same semantics


@pytest.mark.parametrize("js", sorted(CASES))
def test_activation_float32(js, rng):
    x = rng.uniform(-5, 5, (2, 3, 7)).astype(np.float32)
    got = run_graph(graph({"x": x}, [op(js, ("input", "x"), **CASES[js][0])], ["y"]), {"x": x})["y"]
    _check(js, x, got)


@pytest.mark.parametrize("js", ["sigmoid", "softplus", "tanh", "elu", "gelu"])
def test_extreme_inputs(js):
    x = np.array([-100, -30, -9, -1e-3, -1e-6, 0, 1e-6, 1e-3, 9, 30, 100, 88.8], np.float32)
    got = run_graph(graph({"x": x}, [op(js, ("input", "x"), **CASES[js][0])], ["y"]), {"x": x})["y"]
    assert np.all(np.isfinite(got))
    exact = CASES[js][2](x.astype(np.float64)).astype(np.float32)
    assert_ulp(got, exact, CASES[js][3])


@pytest.mark.parametrize("js", ["relu", "elu", "gelu", "softsign"])
def test_activation_float16(js, rng):
    x = rng.uniform(-4, 4, (16,)).astype(np.float16)
    got = run_graph(graph({"x": x}, [op(js, ("input", "x"), **CASES[js][0])], ["y"]), {"x": x})["y"]
    assert got.dtype == np.float16
    _check(js, x, got, ulp=1)  # computed in float32, rounded once


def test_linear(rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    got = run_graph(graph({"x": x}, [op("linear", ("input", "x"), alpha=2.5, beta=-1.0)], ["y"]), {"x": x})["y"]
    ref = run_onnx([helper.make_node("Mul", ["x", "a"], ["t"]), helper.make_node("Add", ["t", "b"], ["y"])],
                   {"x": x}, [("y", np.float32, None)],
                   initializers={"a": np.float32(2.5), "b": np.float32(-1.0)})["y"]
    assert_ulp(got, ref, 2)  # a fused multiply-add rounds once


@pytest.mark.parametrize("dtype", [np.int32, np.int8])
def test_relu_prelu_int(dtype, rng):
    x = rng.integers(-50, 50, (3, 4)).astype(dtype)
    s = rng.integers(-2, 3, (4,)).astype(dtype)
    doc = graph({"x": x, "s": s}, [op("relu", ("input", "x"), outputs="r"),
                                   op("prelu", ("input", "x"), ("slope", "s"), outputs="p")], ["r", "p"])
    got = run_graph(doc, {"x": x, "s": s})
    # onnxruntime has no integer PRelu: the spec's formula, computed in int64, is the oracle
    x64, s64 = x.astype(np.int64), s.astype(np.int64)
    assert_exact(got["r"], np.maximum(x64, 0).astype(dtype))
    assert_exact(got["p"], (np.maximum(x64, 0) + s64 * np.minimum(x64, 0)).astype(dtype))


def test_prelu_broadcast_float(rng):
    x = rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
    s = rng.standard_normal((3, 1, 1)).astype(np.float32)
    got = run_graph(graph({"x": x, "s": s}, [op("prelu", ("input", "x"), ("slope", "s"))], ["y"]), {"x": x, "s": s})["y"]
    ref = run_onnx([helper.make_node("PRelu", ["x", "s"], ["y"])], {"x": x, "s": s}, [("y", np.float32, None)])["y"]
    assert_ulp(got, ref, 0)


@pytest.mark.parametrize("shape,axis", [((2, 10), 1), ((3, 4, 5), 0), ((2, 3, 6), 2), ((1, 1000), 1)])
def test_softmax(shape, axis, rng):
    x = (rng.standard_normal(shape) * 10).astype(np.float32)
    got = run_graph(graph({"x": x}, [op("softmax", ("input", "x"), ("axis", axis))], ["y"]), {"x": x})["y"]
    ref = run_onnx([helper.make_node("Softmax", ["x"], ["y"], axis=axis)], {"x": x}, [("y", np.float32, None)])["y"]
    assert_accumulated(got, ref, shape[axis])


def test_softmax_stable_for_huge_inputs():
    x = np.array([[1000, 1001, 999], [-1000, -1e4, -999]], np.float32)
    got = run_graph(graph({"x": x}, [op("softmax", ("input", "x"), ("axis", 1))], ["y"]), {"x": x})["y"]
    ref = run_onnx([helper.make_node("Softmax", ["x"], ["y"], axis=1)], {"x": x}, [("y", np.float32, None)])["y"]
    assert np.all(np.isfinite(got))
    assert_accumulated(got, ref, 3)


@pytest.mark.vulkan
@pytest.mark.parametrize("js", ["softmax", "sigmoid"])
def test_vulkan(js, rng):
    x = rng.standard_normal((4, 8)).astype(np.float32)
    args = [("input", "x")] + ([("axis", 1)] if js == "softmax" else [])
    got = run_graph(graph({"x": x}, [op(js, *args)], ["y"]), {"x": x}, target="vulkan-spirv")["y"]
    if js == "softmax":
        ref = run_onnx([helper.make_node("Softmax", ["x"], ["y"], axis=1)], {"x": x}, [("y", np.float32, None)])["y"]
    else:
        ref = (1 / (1 + np.exp(-x.astype(np.float64)))).astype(np.float32)
    assert_accumulated(got, ref, 8, ulp_per_term=4)
