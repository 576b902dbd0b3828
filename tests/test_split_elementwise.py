"""`nn-split-elementwise`: the NNEF form of an LSTM (nnef-tools: each step adds its input
projection to the recurrent product over all gates, then splits the gates) splits first, and
agrees with onnxruntime with the pass on and off."""
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
    model, feeds, _ = models.lstm(steps=STEPS, inputs=20, hidden=64, classes=3)
    return onnx_model_case(model, feeds, tmp_path_factory.mktemp("split"), "nnef")


def _split_adds(path, disable=()):
    """How many adds over all four gates ([1, 4 * 64]) feed a split."""
    nn = import_model(path)
    pipeline.run(nn, ["nn-verify"] + [p for p in pipeline.OPTIMIZATIONS if p not in disable])
    ops = nn.module.body.operations[0].regions[0].blocks[0].operations
    return sum(1 for op in ops if op.operation.name == "nn.split" and op.operands[0].owner.name == "nn.add"
               and list(op.operands[0].type.shape) == [1, 256])


def test_gates_split_before_the_add(case):
    # every step but the first (no recurrent product: the initial state is zero)
    assert _split_adds(case[0], ["nn-split-elementwise"]) == STEPS - 1
    assert _split_adds(case[0]) == 0


@pytest.mark.parametrize("disable", [(), ("nn-split-elementwise",)])
def test_matches_onnxruntime(case, disable):
    path, feeds, ref = case
    got = estuary.load(estuary.compile(path, disable_passes=disable)).run(feeds)["y"]
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
