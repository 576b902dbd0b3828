"""`nn-stack-step-products`: the Core ML form of an LSTM (each step's input times each gate's
weights) computes its input products as one product per gate set, and agrees with onnxruntime
with the pass on and off."""
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

STEPS = 4


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    model, feeds, _ = models.lstm(steps=STEPS, inputs=20, hidden=24, classes=3)
    return onnx_model_case(model, feeds, tmp_path_factory.mktemp("stack"), "coreml")


def _input_products(path, disable=()):
    """Left operand shapes of the products with more than one row (the stacked input products)."""
    nn = import_model(path)
    pipeline.run(nn, ["nn-verify"] + [p for p in pipeline.OPTIMIZATIONS if p not in disable])
    ops = nn.module.body.operations[0].regions[0].blocks[0].operations
    shapes = [list(op.operands[0].type.shape) for op in ops if op.operation.name == "nn.gemm"]
    return [s for s in shapes if s[0] > 1]


def test_steps_stack(case):
    # four gates' weights (merged) times all steps' inputs
    assert _input_products(case[0]) == [[STEPS, 20]]
    assert _input_products(case[0], ["nn-stack-step-products"]) == []


@pytest.mark.parametrize("disable", [(), ("nn-stack-step-products",)])
def test_matches_onnxruntime(case, disable):
    path, feeds, ref = case
    got = estuary.load(estuary.compile(path, disable_passes=disable)).run(feeds)["y"]
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
