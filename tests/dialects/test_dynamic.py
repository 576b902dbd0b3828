"""The nn dialect with dynamic dimensions (dialects/core.py, graph.py, specialize.py): symbolic
type inference, unification of symbols that meet, positivity checks, refusal by ops that take
fixed shapes only, the module round trip, and specialization to fixed shapes."""
import numpy as np
import pytest

from estuary.base.dims import Dim
from estuary.base.errors import ModelImportError, VerificationError
from estuary.dialects.core import TensorSpec
from estuary.dialects.graph import Graph, NNModule
from estuary.dialects import specialize

SEQ = Dim.symbol("seq", 1, 512)
MASK = Dim.symbol("mask_1", 1, 512)


def _graph():
    return Graph("model.json", "webnn")


def test_types_follow_the_symbols():
    g = _graph()
    x = g.input("x", TensorSpec([1, SEQ, 64], "float32"))
    heads = g.op("reshape", [x], {"new_shape": [1, SEQ, 4, 16]})
    both = g.op("concat", [[x, x]], {"axis": 1})
    last = g.op("slice", [x], {"starts": [0, SEQ - 1, 0], "sizes": [1, 1, 64]})
    pooled = g.op("reduce_mean", [x], {"axes": [1]})
    assert [TensorSpec.of_type(v.type).shape for v in (heads, both, last, pooled)] == [
        (1, SEQ, 4, 16), (1, 2 * SEQ, 64), (1, 1, 64), (1, 64)]


def test_symbols_that_meet_are_unified_and_recorded():
    g = _graph()
    x = g.input("x", TensorSpec([1, SEQ, 8], "float32"))
    mask = g.input("mask", TensorSpec([1, MASK], "float32"))
    y = g.op("add", [x, g.op("reshape", [mask], {"new_shape": [1, MASK, 1]})])
    assert TensorSpec.of_type(y.type).shape == (1, SEQ, 8)
    nn = g.finish([("y", y)])
    assert nn.signature()["dims"]["rules"] == ["mask_1 = seq; seq=1..512"]
    assert "nn.dims" in nn.asm()


def test_a_derived_dimension_that_can_be_zero_becomes_a_runtime_check():
    g = _graph()
    h = Dim.symbol("h", 1, 64)
    x = g.input("x", TensorSpec([1, 3, h, 8], "float32"))
    y = g.op("conv2d", [x, g.constant(np.ones((4, 3, 3, 3), np.float32))])
    nn = g.finish([("y", y)])
    assert nn.signature()["dims"]["rules"] == ["h - 2 >= 1; h=1..64"]


def test_ops_with_fixed_shapes_refuse_by_name():
    g = _graph()
    x = g.input("x", TensorSpec([SEQ, 1, 4], "float32"))
    w = g.constant(np.ones((1, 8, 4), np.float32))
    r = g.constant(np.ones((1, 8, 2), np.float32))
    with pytest.raises(VerificationError, match=r"nn.lstm does not take dynamic dimensions: operand 'input' is "
                                                r"float32\[seq, 1, 4\] \(seq=1..512\)"):
        g.op("lstm", [x, w, r], {"steps": 4, "hidden_size": 2}, name="encoder")


def test_one_name_one_range():
    g = _graph()
    g.input("x", TensorSpec([1, SEQ], "float32"))
    with pytest.raises(VerificationError, match="an earlier input gave seq the bounds 1..512"):
        g.input("y", TensorSpec([1, Dim.symbol("seq", 1, 8)], "float32"))
    with pytest.raises(VerificationError, match="must be a plain symbol"):
        g.input("z", TensorSpec([1, SEQ + 1], "float32"))


def test_module_text_round_trip():
    g = _graph()
    x = g.input("x", TensorSpec([1, SEQ, 8], "float32"))
    nn = g.finish([("y", g.op("concat", [[x, x]], {"axis": 1}))])
    again = NNModule.from_module(nn.module, nn.session)
    assert again.inputs == nn.inputs and again.outputs == nn.outputs
    assert again.outputs[0][1].shape == (1, 2 * SEQ, 8)


def test_specialize_fixes_symbols_and_their_bindings():
    g = _graph()
    x = g.input("x", TensorSpec([1, SEQ, 8], "float32"))
    mask = g.input("mask", TensorSpec([1, MASK], "float32"))
    y = g.op("add", [x, g.op("reshape", [mask], {"new_shape": [1, MASK, 1]})])
    nn = g.finish([("y", y), ("z", g.op("concat", [[x, x]], {"axis": 1}))])
    values = specialize.bindings(nn.inputs, {"x": [1, 5, 8]}, "model.json")
    specialize.specialize(nn, values)
    assert [s.shape for _, s in nn.inputs] == [(1, 5, 8), (1, 5)]
    assert [s.shape for _, s in nn.outputs] == [(1, 5, 8), (1, 10, 8)]
    assert "?" not in nn.asm().split("dialect_resources")[0] and "dims" not in nn.signature()


def test_specialize_refuses_what_the_bounds_or_fixed_dims_forbid():
    inputs = [("x", TensorSpec([1, SEQ, 8], "float32"))]
    with pytest.raises(ModelImportError, match=r"dimension 1 \(seq\) = 600 is outside its bounds 1..512"):
        specialize.bindings(inputs, {"x": [1, 600, 8]}, "m")
    with pytest.raises(ModelImportError, match="cannot change dimension 2"):
        specialize.bindings(inputs, {"x": [1, 6, 9]}, "m")


def test_a_range_narrows_a_symbol():
    g = _graph()
    x = g.input("x", TensorSpec([1, SEQ, 8], "float32"))
    nn = g.finish([("y", g.op("concat", [[x, x]], {"axis": 1}))])
    specialize.specialize(nn, specialize.bindings(nn.inputs, {"x": [1, (2, 16), 8]}, "m"))
    seq = Dim.symbol("seq", 2, 16)
    assert nn.inputs[0][1].shape == (1, seq, 8) and nn.outputs[0][1].shape == (1, 2 * seq, 8)
    with pytest.raises(ModelImportError, match=r"the range 2..600 of dimension 1 \(seq\) is not within its bounds"):
        specialize.bindings(nn.inputs, {"x": [1, (2, 600), 8]}, "m")
    with pytest.raises(ModelImportError, match="is fixed at 8"):
        specialize.bindings(nn.inputs, {"x": [1, 4, (1, 8)]}, "m")
