"""limit-elementwise-chains: long elementwise chains are split for IREE's fusion passes (quadratic
in a fused chain's length), with unchanged results; shorter chains are left alone."""
import numpy as np
import pytest

import estuary
from estuary.base.options import CompileOptions
from estuary.backends.options import create_options
from estuary.importers import import_model
from estuary.backends import pipeline


def _chain(n):
    ops = [{"name": "relu" if i % 2 else "neg", "arguments": [{"input": "x" if i == 0 else f"t{i - 1}"}],
            "outputs": f"t{i}"} for i in range(n)]
    return {"inputs": {"x": {"descriptor": {"dataType": "float32", "shape": [64]}}}, "operators": ops,
            "outputs": [f"t{n - 1}"]}


@pytest.mark.parametrize("n, barriers", [(200, 0), (600, 2)])
def test_barriers_every_256_ops(n, barriers):
    nn = import_model(_chain(n), format="webnn")
    results = pipeline.run_default(nn, create_options())
    assert results["chain_barriers"] == barriers
    assert str(nn.module).count("util.optimization_barrier") == barriers


def test_split_chain_computes_the_same():
    x = np.linspace(-2, 2, 64).astype(np.float32)
    want = x.astype(np.float64)
    for i in range(600):
        want = np.maximum(want, 0) if i % 2 else -want
    got = estuary.load(estuary.compile(_chain(600))).run({"x": x})["t599"]
    np.testing.assert_array_equal(got, want.astype(np.float32))
