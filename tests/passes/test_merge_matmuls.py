"""`nn-merge-sibling-matmuls`: products of one input with several constant matrices (two gemms with
bias, two matmuls) agree with onnxruntime merged and unmerged, in the WebNN (matmul/gemm) and
Core ML (innerProduct -> gemm) forms, with six rows, with one (a vector: the merged products take
the vector form of the lowering) and with 32 (the merged product is computed transposed and its
results are transposed row blocks), and with a transposed left operand."""
import os
import sys

import numpy as np
import pytest

import estuary
from estuary.passes import merge_matmuls

from helpers import ROOT  # noqa: E402 - the repository
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import models  # noqa: E402
from helpers import onnx_model_case, optimized_ops  # noqa: E402


def _net(rows):
    net, rng = models.Net(13), np.random.default_rng(113)
    x = rng.standard_normal((rows, 16)).astype(np.float32)
    g1, g2 = net.gemm("x", 16, 8), net.gemm("x", 16, 8)
    m1, m2 = (net.node("MatMul", ["x", net.weight((16, 8))]) for _ in range(2))
    net.node("Add", [net.node("Mul", [g1, g2]), net.node("Mul", [m1, m2])])
    net.nodes[-1].output[0] = "y"
    return net.model({"x": x}, ["y"], {"x": x})


@pytest.fixture(scope="module", params=[("webnn", 6), ("coreml", 6), ("webnn", 1), ("coreml", 1),
                                        ("webnn", 32), ("coreml", 32)])
def case(tmp_path_factory, request):
    form, rows = request.param
    model, feeds, _ = _net(rows)
    return onnx_model_case(model, feeds, tmp_path_factory.mktemp("merge"), form)


def _ops(path, disable=()):
    """(name, name of the first operand's producer or None) of each op after the optimizations."""
    return optimized_ops(path, lambda op: (op.operation.name, getattr(op.operands[0].owner, "name", None)
                                           if len(op.operands) else None), disable)


def _transposed_slices(path):
    """How many results are transposes of a slice."""
    return _ops(path).count(("nn.transpose", "nn.slice"))


def _products(path, disable=()):
    return sum(name in ("nn.matmul", "nn.gemm") for name, _ in _ops(path, disable))


def test_products_merge(case):
    # the two gemms with bias become one, and so do the two bias-free products
    assert _products(case[0], ["nn-merge-sibling-matmuls"]) == 4
    assert _products(case[0]) == 2


@pytest.mark.parametrize("disable", [(), ("nn-merge-sibling-matmuls",)])
def test_matches_onnxruntime(case, disable):
    path, feeds, ref = case
    got = estuary.load(estuary.compile(path, disable_passes=disable)).run(feeds)["y"]
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_many_rows_take_the_column_form(case):
    # 32 rows: each result is a transposed block of rows of the transposed product
    rows = len(next(iter(case[1].values())))
    assert _transposed_slices(case[0]) == (4 if rows >= merge_matmuls.COLUMN_FORM_ROWS else 0)


def test_transposed_left_operand(tmp_path):
    # gemm(x, W, c, aTranspose) with x [32, 16]: the transposed merged product reads x as it is
    net, rng = models.Net(14), np.random.default_rng(114)
    x = rng.standard_normal((32, 16)).astype(np.float32)
    g1, g2 = (net.node("Gemm", ["x", net.weight((32, 8)), net.const(rng.standard_normal(8).astype(np.float32), "b")],
                       transA=1, alpha=0.5) for _ in range(2))
    net.node("Mul", [g1, g2])
    net.nodes[-1].output[0] = "y"
    path, feeds, ref = onnx_model_case(*net.model({"x": x}, ["y"], {"x": x})[:2], tmp_path, "webnn")
    assert _products(path) == 1 and _transposed_slices(path) == 2 and [n for n, _ in _ops(path)].count("nn.transpose") == 2
    got = estuary.load(estuary.compile(path)).run(feeds)["y"]
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.vulkan
def test_column_form_on_vulkan(tmp_path):
    # the column form is a target-independent rewrite: the 32-row WebNN case on Vulkan (lavapipe)
    model, feeds, _ = _net(32)
    path, feeds, ref = onnx_model_case(model, feeds, tmp_path, "webnn")
    assert _transposed_slices(path) == 4
    got = estuary.load(estuary.compile(path, target="vulkan-spirv"), device="vulkan").run(feeds)["y"]
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
