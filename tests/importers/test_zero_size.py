"""Zero-size dimensions are refused at import, for every format, with one clear error naming the
input or operation (IREE died with SIGFPE on a Core ML argMin over an input [0, 3, 4] and raised
a raw RuntimeError on a softmaxND over it)."""
import numpy as np
import pytest

import estuary
from estuary import nnapi
from estuary.base.errors import EstuaryError
from estuary.nnapi import OperandCode as T, OperationCode as Op
from helpers import graph, op


def _coreml(tmp_path, layer):
    import coremltools.models.datatypes as dt
    from coremltools.models.neural_network import NeuralNetworkBuilder

    b = NeuralNetworkBuilder([("x", dt.Array(0, 3, 4))], [("y", None)], disable_rank5_shape_mapping=True)
    if layer == "argmin":
        b.add_argmin("am", "x", "y", axis=1, keepdims=False)
    else:
        b.add_softmax_nd("sm", "x", "y", axis=-1)
    path = tmp_path / f"{layer}.mlmodel"
    path.write_bytes(b.spec.SerializeToString())
    return str(path)


@pytest.mark.parametrize("layer", ["argmin", "softmax_nd"])
def test_coreml_zero_size_input(tmp_path, layer):
    with pytest.raises(EstuaryError, match=r"input 'x'.*\[0, 3, 4\].*zero-size dimension"):
        estuary.compile(_coreml(tmp_path, layer))


def test_webnn_zero_size_input():
    doc = graph({"x": ((0, 3), "float32")}, [op("relu", ("input", "x"))], ["y"])
    with pytest.raises(EstuaryError, match=r"operand 'x' has an invalid shape \[0, 3\]"):
        estuary.compile(doc)


def test_webnn_op_with_an_empty_result():
    """A slice of size 0 from a non-empty input: the op is named (the WebNN importer checks it)."""
    doc = graph({"x": ((2, 3), "float32")}, [op("slice", ("input", "x"), ("starts", [0, 0]), ("sizes", [2, 0]),
                                                 outputs="s")], ["s"])
    with pytest.raises(EstuaryError, match=r"operation 's' \(slice\): sizes\[1\] must be positive"):
        estuary.compile(doc)


def test_nnef_zero_size_external(tmp_path):
    (tmp_path / "graph.nnef").write_text("version 1.0;\ngraph g( x ) -> ( y )\n{\n"
                                         "  x = external<scalar>(shape = [0, 3]);\n  y = relu(x);\n}\n")
    with pytest.raises(EstuaryError, match=r"external 'x' has invalid shape \[0, 3\]"):
        estuary.compile(str(tmp_path), format="nnef")


def test_nnapi_zero_size_constant():
    m = nnapi.Model()
    c = m.add_operand(T.TENSOR_FLOAT32, dimensions=[0, 3])
    with pytest.raises(EstuaryError, match="constant tensors need fully specified dimensions"):
        m.set_operand_value(c, np.zeros((0, 3), np.float32))


def test_graph_builder_refuses_empty_results():
    """The one check every importer reaches: an op whose result would be empty is refused, naming it."""
    from estuary.dialects.core import TensorSpec
    from estuary.dialects.graph import Graph

    g = Graph("m.bin", "nn")
    x = g.input("x", TensorSpec((2, 3), "float32"))
    with pytest.raises(EstuaryError, match=r"m.bin: operation 'c' \(constant\): the result would be "
                                           r"float32\[0, 3\]: a zero-size dimension"):
        g.constant(np.zeros((0, 3), np.float32), name="c")
    assert g.op("relu", [x], name="r") is not None
    with pytest.raises(EstuaryError, match=r"m.bin: input 'e': .*zero-size dimension"):
        g.input("e", TensorSpec((4, 0), "float32"))
