"""Cases the fuzzing campaigns found (tests/fuzz/, scripts/fuzz_campaign.py), kept as tests."""
import pytest

import estuary
from estuary.base.errors import ModelImportError, VerificationError
from helpers import graph, op


def test_a_list_where_one_operand_belongs():
    """A WebNN slice whose input is [[]]: an AttributeError inside the converter, reported as an
    internal error (a bug in Estuary); now the clear error of a malformed model."""
    doc = graph({"a": ((3, 4), "float32")}, [op("slice", ("input", [[]]), ("starts", [1, 0]), ("sizes", [2, 3]),
                                                outputs="l")], ["l"])
    with pytest.raises(VerificationError, match=r"operation 'l' \(slice\): expected one operand, got list \[\[\]\]"):
        estuary.compile(doc)


def test_an_output_listed_twice():
    """A graph listing one output twice compiled, and then the signature check refused its own
    artefact as corrupted (repeated names). The signature check allows repeated names; the WebNN
    importer now refuses such a graph up front, naming the output."""
    from estuary.base.integrity import check_signature

    doc = graph({"x": ((2,), "float32")}, [op("neg", ("input", "x"), outputs="y")], ["y", "y"])
    with pytest.raises(ModelImportError, match=r"output name\(s\) \['y'\] are given twice"):
        estuary.compile(doc)
    sig = {"inputs": [["x", [2], "float32"]], "outputs": [["y", [2], "float32"], ["y", [2], "float32"]]}
    assert check_signature(sig) is sig


def test_an_unknown_mil_data_type_code(tmp_path):
    """An ML Program whose op result declares data type code 99 (not in the proto's enum): a raw
    ValueError from protobuf's enum lookup, now a malformed model naming the op and result."""
    from coremltools.proto import Model_pb2
    from fuzz import seeds

    package = seeds._mlpackage_seed(tmp_path)
    proto = next(package.rglob("*.mlmodel"))
    model = Model_pb2.Model.FromString(proto.read_bytes())
    block = next(iter(model.mlProgram.functions["main"].block_specializations.values()))
    block.operations[0].outputs[0].type.tensorType.dataType = 99
    proto.write_bytes(model.SerializeToString())
    name = block.operations[0].outputs[0].name
    with pytest.raises(ModelImportError, match=rf"operation '{name}' \(const\) result '{name}': unknown MIL data "
                                               r"type code 99"):
        estuary.compile(str(package))
