"""Rank-0 tensors cross the model boundary as numpy 0-d arrays (shape ()), in and out, through
the signature, IREE's ABI and both run paths."""
import numpy as np
import pytest

import estuary
from helpers import graph, op


@pytest.mark.parametrize("flags", [(), ("--iree-execution-model=async-internal",)])
def test_webnn_rank0_input_and_outputs(flags):
    doc = graph({"x": ((), "float32"), "v": ((3,), "int32")},
                [op("neg", ("input", "x"), outputs="y"), op("reduceSum", ("input", "v"), outputs="s")], ["y", "s"])
    model = estuary.load(estuary.compile(doc, extra_flags=flags))
    assert model.inputs[0] == ("x", (), "float32") and model.outputs == [("y", (), "float32"), ("s", (), "int32")]
    out = model.run({"x": np.float32(2.5), "v": np.array([1, 2, 4], np.int32)})
    assert out["y"].shape == () and out["y"] == -2.5
    assert out["s"].shape == () and out["s"].dtype == np.int32 and out["s"] == 7


def test_nnef_rank0_external(tmp_path):
    (tmp_path / "graph.nnef").write_text("version 1.0;\ngraph g( x ) -> ( y )\n{\n"
                                         "  x = external<scalar>(shape = []);\n  y = mul(x, x);\n}\n")
    out = estuary.load(estuary.compile(str(tmp_path), format="nnef")).run({"x": np.array(3.0, np.float32)})
    assert out["y"].shape == () and out["y"] == 9.0
