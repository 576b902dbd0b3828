"""WebNN JSON importer: layout variants, side files, and clear errors for bad graphs."""
import json

import numpy as np
import pytest

import estuary
from estuary.importers import import_model
from helpers import graph, op, run_graph


def _write(tmp_path, doc, name="g.json"):
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


def test_wpt_layout_with_expected_outputs(tmp_path):
    # The web-platform-tests conformance layout: no "outputs", names from expectedOutputs.
    doc = {"name": "add", "graph": {
        "inputs": {"a": {"data": [1, 2], "descriptor": {"shape": [2], "dataType": "float32"}},
                   "b": {"data": [3, 4], "descriptor": {"shape": [2], "dataType": "float32"}, "constant": True}},
        "operators": [{"name": "add", "arguments": [{"a": "a"}, {"b": "b"}], "outputs": "output"}],
        "expectedOutputs": {"output": {"data": [4, 6], "descriptor": {"shape": [2], "dataType": "float32"}}}}}
    model = estuary.load(estuary.compile(_write(tmp_path, doc)))
    np.testing.assert_array_equal(model.run({"a": np.array([1, 2], np.float32)})["output"], [4, 6])


def test_side_file_constants(tmp_path):
    w = np.arange(6, dtype="<f4")
    (tmp_path / "w.bin").write_bytes(b"\0" * 8 + w.tobytes())
    doc = graph({"x": ((6,), "float32")}, [op("mul", ("a", "x"), ("b", "w"))], ["y"])
    doc["inputs"]["w"] = {"descriptor": {"shape": [6], "dataType": "float32"},
                          "data": {"file": "w.bin", "byteOffset": 8}, "constant": True}
    model = estuary.load(estuary.compile(_write(tmp_path, doc)))
    x = np.full(6, 2, np.float32)
    np.testing.assert_array_equal(model.run({"x": x})["y"], 2 * w)


def test_operators_out_of_order_are_sorted():
    x = np.ones(3, np.float32)
    doc = graph({"x": x}, [op("exp", ("input", "t"), outputs="y"), op("neg", ("input", "x"), outputs="t")], ["y"])
    np.testing.assert_allclose(run_graph(doc, {"x": x})["y"], np.exp(-x), rtol=1e-6)


@pytest.mark.parametrize("mutate,message", [
    (lambda d: d["operators"].append(op("relu2", ("input", "x"), outputs="z")), "unsupported WebNN operation"),
    (lambda d: d["operators"][0]["arguments"].__setitem__(0, {"a": "nope"}), "unknown operand 'nope'"),
    (lambda d: d["operators"].append(op("neg", ("input", "x"), outputs="y")), "defined twice"),
    (lambda d: d.__setitem__("outputs", ["x"]), "is a graph input"),
    (lambda d: d.__setitem__("outputs", ["missing"]), "not produced by any operator"),
    (lambda d: d["inputs"]["x"]["descriptor"].__setitem__("dataType", "float64"), "unsupported dataType"),
    (lambda d: d["inputs"]["x"]["descriptor"].__setitem__("shape", [2, 0]), "invalid shape"),
    (lambda d: d["operators"][0]["arguments"].append({"options": {"bogus": 1}}), "unknown option(s) ['bogus']"),
    (lambda d: d["operators"][0]["arguments"].append({"c": "x"}), "unknown argument 'c'"),
])
def test_invalid_graphs(tmp_path, mutate, message):
    doc = graph({"x": ((2,), "float32")}, [op("add", ("a", "x"), ("b", "x"))], ["y"])
    mutate(doc)
    with pytest.raises(estuary.EstuaryError) as e:
        import_model(_write(tmp_path, doc))
    assert message in str(e.value)
    assert "g.json" in str(e.value)


def test_unknown_operations_raise_unsupported_op_error(tmp_path):
    doc = graph({"x": ((2,), "float32")}, [op("frobnicate", ("input", "x"), outputs="t"),
                                           op("neg", ("input", "t"), outputs="u"),
                                           op("twiddle", ("input", "u"), outputs="y")], ["y"])
    with pytest.raises(estuary.UnsupportedOpError) as e:
        import_model(_write(tmp_path, doc))
    assert [(name, kind) for name, kind, _ in e.value.items] == [("t", "frobnicate"), ("y", "twiddle")]
    assert "g.json" in str(e.value) and "unsupported WebNN operation" in str(e.value)


def test_a_name_given_twice_is_refused(tmp_path):
    x = '{"descriptor": {"shape": [2], "dataType": "float32"}}'
    text = ('{"inputs": {"x": %s, "x": %s}, "operators": [{"name": "neg", "arguments": [{"input": "x"}], '
            '"outputs": "y"}], "outputs": ["y"]}' % (x, x))
    (tmp_path / "g.json").write_text(text)
    with pytest.raises(estuary.ModelImportError, match=r"g.json: name 'x' appears twice"):
        import_model(tmp_path / "g.json")
    doc = graph({"x": ((2,), "float32")}, [op("neg", ("input", "x"), outputs="y")], ["y", "y"])
    with pytest.raises(estuary.ModelImportError, match=r"g.json: output name\(s\) \['y'\] are given twice"):
        import_model(_write(tmp_path, doc))


def test_cycle_is_reported(tmp_path):
    doc = graph({"x": ((2,), "float32")}, [op("add", ("a", "x"), ("b", "v"), outputs="u"),
                                           op("neg", ("input", "u"), outputs="v")], ["v"])
    with pytest.raises(estuary.EstuaryError, match="cycle"):
        import_model(_write(tmp_path, doc))


def test_type_error_names_operator(tmp_path):
    doc = graph({"x": ((2,), "float32"), "i": ((2,), "int32")}, [op("add", ("a", "x"), ("b", "i"), outputs="sum1")],
                ["sum1"])
    with pytest.raises(estuary.VerificationError, match=r"g.json: operation 'sum1' \(add\): a and b must have the same"):
        import_model(_write(tmp_path, doc))


@pytest.mark.parametrize("ref,message", [
    ({"file": "../secret.bin"}, "must stay inside the model folder"),
    ({"file": "/etc/passwd"}, "must stay inside the model folder"),
    ({"file": "w.bin", "byteOffset": 20}, "truncated"),
    ({"file": "absent.bin"}, "cannot read data file"),
])
def test_side_file_errors(tmp_path, ref, message):
    (tmp_path / "w.bin").write_bytes(np.zeros(6, "<f4").tobytes())
    doc = graph({"x": ((6,), "float32")}, [op("mul", ("a", "x"), ("b", "w"))], ["y"])
    doc["inputs"]["w"] = {"descriptor": {"shape": [6], "dataType": "float32"}, "data": ref, "constant": True}
    with pytest.raises(estuary.EstuaryError, match=message):
        import_model(_write(tmp_path, doc))


def test_malformed_json(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text('{"inputs": {')
    with pytest.raises(estuary.ModelImportError, match="invalid JSON at line 1"):
        import_model(p)


def test_constant_data_length_checked(tmp_path):
    doc = graph({"x": ((3,), "float32")}, [op("add", ("a", "x"), ("b", "w"))], ["y"], constants={"w": np.ones(3, np.float32)})
    doc["inputs"]["w"]["data"] = [1, 2]
    with pytest.raises(estuary.ModelImportError, match="has 2 values, its descriptor float32\\[3\\] needs 3"):
        import_model(_write(tmp_path, doc))


def test_huge_declared_shape_refused_before_allocation(tmp_path):
    doc = graph({"x": ((1 << 20, 1 << 20), "float32")}, [op("neg", ("input", "x"))], ["y"])
    with pytest.raises(estuary.ModelImportError, match="more than"):
        import_model(_write(tmp_path, doc))


@pytest.mark.parametrize("dtype", ["float32", "float16", "uint8", "int64", "uint32"])
def test_large_constants_are_resources(dtype):
    # > 64 elements: stored as dense_resource blobs, re-typed to signless integers when lowering
    w = (np.arange(200) % 97).astype(dtype)
    doc = graph({"x": ((200,), dtype)}, [op("add", ("a", "x"), ("b", "w"))], ["y"], constants={"w": w})
    nn = import_model(doc)
    assert "dense_resource" in nn.asm()
    x = np.ones(200, dtype)
    np.testing.assert_array_equal(run_graph(doc, {"x": x})["y"], x + w)
