"""`nn-merge-sibling-matmuls`: products of one input with several constant matrices (two gemms with
bias, two matmuls) agree with onnxruntime merged and unmerged, in the WebNN (matmul/gemm) and
Core ML (innerProduct -> gemm) forms, with six rows and with one (a vector: the merged products take
the vector form of the lowering)."""
import os
import sys

import numpy as np
import pytest

import estuary
from estuary.importers import import_model
from estuary.passes import pipeline

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import models  # noqa: E402
from helpers import onnx_model_case  # noqa: E402


def _net(rows):
    net, rng = models.Net(13), np.random.default_rng(113)
    x = rng.standard_normal((rows, 16)).astype(np.float32)
    g1, g2 = net.gemm("x", 16, 8), net.gemm("x", 16, 8)
    m1, m2 = (net.node("MatMul", ["x", net.weight((16, 8))]) for _ in range(2))
    net.node("Add", [net.node("Mul", [g1, g2]), net.node("Mul", [m1, m2])])
    net.nodes[-1].output[0] = "y"
    return net.model({"x": x}, ["y"], {"x": x})


@pytest.fixture(scope="module", params=[("webnn", 6), ("coreml", 6), ("webnn", 1), ("coreml", 1)])
def case(tmp_path_factory, request):
    form, rows = request.param
    model, feeds, _ = _net(rows)
    return onnx_model_case(model, feeds, tmp_path_factory.mktemp("merge"), form)


def _products(path, disable=()):
    nn = import_model(path)
    pipeline.run(nn, ["nn-verify"] + [p for p in pipeline.OPTIMIZATIONS if p not in disable])
    ops = [op.operation.name for op in nn.module.body.operations[0].regions[0].blocks[0].operations]
    return sum(name in ("nn.matmul", "nn.gemm") for name in ops)


def test_products_merge(case):
    # the two gemms with bias become one, and so do the two bias-free products
    assert _products(case[0], ["nn-merge-sibling-matmuls"]) == 4
    assert _products(case[0]) == 2


@pytest.mark.parametrize("disable", [(), ("nn-merge-sibling-matmuls",)])
def test_matches_onnxruntime(case, disable):
    path, feeds, ref = case
    got = estuary.load(estuary.compile(path, disable_passes=disable)).run(feeds)["y"]
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
