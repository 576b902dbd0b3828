"""One source for WebNN's operation signatures: the registrations' WebIDL types and defaults
(importers/webnn/idl.py), the file scripts/webnn_signatures.py writes from them for the JavaScript
builder (js/webnn/lib/signatures.json, which must be what the registry gives now, byte for byte),
and the JSON importer's and Python builder's checks of options by those types."""
import importlib.util
import json
import os

import numpy as np
import pytest

from estuary import webnn
from estuary.base.errors import EstuaryError
from estuary.importers.webnn import OPS, idl, load_graph
from helpers import graph, op

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _script():
    spec = importlib.util.spec_from_file_location("webnn_signatures", os.path.join(ROOT, "scripts", "webnn_signatures.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_signatures_are_what_the_registry_gives():
    script = _script()
    with open(script.PATH, encoding="utf-8") as f:
        committed = f.read()
    assert committed == script.render(), "js/webnn/lib/signatures.json is stale: run python scripts/webnn_signatures.py"
    assert script.main(["--check"]) == 0


def test_the_signatures_hold_every_operation_with_its_parameters_options_and_enums():
    doc = json.loads(_script().render())
    assert sorted(doc["operations"]) == sorted(OPS)
    assert doc["enums"] == {name: list(values) for name, values in idl.ENUMS.items()}
    for name, entry in OPS.items():
        sig = doc["operations"][name]
        assert [p for p, _ in sig["params"]] == [p for p in entry.params if p != "options"]
        assert set(sig["options"]) == entry.options
        for p, type_ in sig["params"]:
            assert (p in entry.operands) == (type_ in (idl.OPERAND, idl.OPERANDS))
        for k, member in sig["options"].items():
            assert (k in entry.option_operands) == (member["type"] == idl.OPERAND)
            assert member.get("default", idl.NO_DEFAULT) == entry.option_defaults.get(k, idl.NO_DEFAULT)


@pytest.mark.parametrize("text, parsed", [
    ("unsigned long", ("unsigned long", idl.NO_DEFAULT)),
    ("double = 1e-5", ("double", 1e-5)),
    ('MLInputOperandLayout = "nchw"', ("MLInputOperandLayout", "nchw")),
    ("sequence<MLRecurrentNetworkActivation>", ("sequence<MLRecurrentNetworkActivation>", idl.NO_DEFAULT)),
])
def test_members_parse(text, parsed):
    assert idl.member("x", text) == parsed


@pytest.mark.parametrize("text, message", [
    ("unsigned int", "unknown WebIDL type"),
    ('MLInputOperandLayout = "chw"', "is not a MLInputOperandLayout"),
    ("boolean = 1", "is not a boolean"),
    ("double = one", "not a JSON value"),
])
def test_bad_members_are_refused_at_registration(text, message):
    with pytest.raises(TypeError, match=message):
        idl.member("x", text)
    with pytest.raises(TypeError, match=message):
        OPS.op("notAnOperation", params={"input": "MLOperand"}, options={"x": text})


def test_registrations_take_typed_parameters():
    with pytest.raises(TypeError, match="params="):
        OPS.op("notAnOperation", params=["input", "options"], operands=["input"], options=[])
    with pytest.raises(TypeError, match="positional parameters take defaults="):
        OPS.op("notAnOperation", params={"axis": "unsigned long = 0"}, options={})


def _import(name, *args, **options):
    doc = graph({"x": ([1, 2, 3, 3], "float32"), "w": ([2, 2, 1, 1], "float32")}, [op(name, *args, **options)], ["y"])
    nn = load_graph(doc)
    nn.close()


@pytest.mark.parametrize("options, message", [
    ({"padding": [0, 0, 0, 0.5]}, "option padding must be of type sequence<unsigned long>"),
    ({"groups": -1}, "option groups must be of type unsigned long"),
    ({"inputLayout": "NCHW"}, r"option inputLayout must be one of \['nchw', 'nhwc'\]"),
    ({"label": 5}, "option label must be of type USVString"),
])
def test_the_json_importer_checks_options_by_their_types(options, message):
    with pytest.raises(EstuaryError, match=message):
        _import("conv2d", ("input", "x"), ("filter", "w"), **options)
    _import("conv2d", ("input", "x"), ("filter", "w"), padding=[0, 0, 0, 0], groups=1, inputLayout="nchw", label="c")


def test_enumerations_are_the_registrys():
    """An enumeration takes the current spec's values and those an earlier edition had (pad's
    "symmetric", from the 2023 Candidate Recommendation); anything else is refused, naming them."""
    def pad(mode):
        return graph({"x": ([2, 3], "float32")}, [op("pad", ("input", "x"), ("beginningPadding", [1, 1]),
                                                     ("endingPadding", [1, 1]), mode=mode)], ["y"])
    with pytest.raises(EstuaryError, match=r"option mode must be one of \['constant', 'edge', 'reflection', 'symmetric'\]"):
        load_graph(pad("wrap"))
    load_graph(pad("symmetric"))


def test_the_python_builder_takes_tuples_and_numpy_values_for_typed_options():
    b = webnn.MLGraphBuilder(webnn.ML().createContext())
    x = b.input("x", {"dataType": "float32", "shape": [1, 2, 4, 4]})
    y = b.averagePool2d(x, {"windowDimensions": (2, 2), "strides": np.array([2, 2]), "padding": [np.int64(0)] * 4})
    assert y.shape == [1, 2, 2, 2]
    with pytest.raises(EstuaryError, match="option windowDimensions must be of type sequence<unsigned long>"):
        b.averagePool2d(x, {"windowDimensions": (2.5, 2)})
