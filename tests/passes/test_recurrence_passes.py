"""The passes for unrolled recurrences, each on and off against onnxruntime.

`nn-stack-step-products`: the Core ML form of an LSTM (each step's input times each gate's
weights) computes its input products as one product per gate set. `nn-split-elementwise`: the
NNEF form (nnef-tools: each step adds its input projection to the recurrent product over all
gates, then splits the gates) splits first."""
import os
import sys

import numpy as np
import pytest

import estuary

from helpers import ROOT  # noqa: E402 - the repository
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import models  # noqa: E402
from helpers import onnx_model_case, optimized_ops  # noqa: E402

STEPS = 4


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    model, feeds, _ = models.lstm(steps=STEPS, inputs=20, hidden=24, classes=3)
    return onnx_model_case(model, feeds, tmp_path_factory.mktemp("stack"), "coreml")


@pytest.fixture(scope="module")
def nnef_case(tmp_path_factory):
    model, feeds, _ = models.lstm(steps=STEPS, inputs=20, hidden=64, classes=3)
    return onnx_model_case(model, feeds, tmp_path_factory.mktemp("split"), "nnef")


def _input_products(path, disable=()):
    """Left operand shapes of the products with more than one row (the stacked input products)."""
    shapes = [s for s in optimized_ops(path, lambda op: op.operation.name == "nn.gemm" and list(op.operands[0].type.shape),
                                       disable) if s]
    return [s for s in shapes if s[0] > 1]


def test_steps_stack(case):
    # four gates' weights (merged) times all steps' inputs
    assert _input_products(case[0]) == [[STEPS, 20]]
    assert _input_products(case[0], ["nn-stack-step-products"]) == []


def _split_adds(path, disable=()):
    """How many adds over all four gates ([1, 4 * 64]) feed a split."""
    return sum(optimized_ops(path, lambda op: op.operation.name == "nn.split" and op.operands[0].owner.name == "nn.add"
                             and list(op.operands[0].type.shape) == [1, 256], disable))


def test_gates_split_before_the_add(nnef_case):
    # every step but the first (no recurrent product: the initial state is zero)
    assert _split_adds(nnef_case[0], ["nn-split-elementwise"]) == STEPS - 1
    assert _split_adds(nnef_case[0]) == 0


@pytest.mark.parametrize("form, disable", [("coreml", ()), ("coreml", ("nn-stack-step-products",)),
                                           ("nnef", ()), ("nnef", ("nn-split-elementwise",))])
def test_matches_onnxruntime(case, nnef_case, form, disable):
    path, feeds, ref = case if form == "coreml" else nnef_case
    got = estuary.load(estuary.compile(path, disable_passes=disable)).run(feeds)["y"]
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
