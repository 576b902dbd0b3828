"""Cases the fuzzing campaigns found (tests/fuzz/, scripts/fuzz_campaign.py), kept as tests."""
import numpy as np
import pytest

import estuary
from estuary.errors import VerificationError
from helpers import graph, op


def test_a_list_where_one_operand_belongs():
    """A WebNN slice whose input is [[]]: an AttributeError inside the converter, reported as an
    internal error (a bug in Estuary); now the clear error of a malformed model."""
    doc = graph({"a": ((3, 4), "float32")}, [op("slice", ("input", [[]]), ("starts", [1, 0]), ("sizes", [2, 3]),
                                                outputs="l")], ["l"])
    with pytest.raises(VerificationError, match=r"operation 'l' \(slice\): expected one operand, got list \[\[\]\]"):
        estuary.compile(doc)


def test_an_output_listed_twice_loads():
    """A graph listing one output twice compiled, and then the signature check refused its own
    artefact as corrupted (repeated names); repeated names are allowed again."""
    doc = graph({"x": ((2,), "float32")}, [op("neg", ("input", "x"), outputs="y")], ["y", "y"])
    model = estuary.load(estuary.compile(doc))
    assert model.run({"x": np.array([1, -2], np.float32)})["y"].tolist() == [-1, 2]
