"""Malformed models get an EstuaryError naming the file (and the layer or operation), never another
exception or a crash. Each case is one kind of defect a fuzzing run of the importers found."""
import json
import os
import subprocess
import sys
import tarfile

import numpy as np
import pytest

import estuary
from estuary import nnapi
from estuary.base.errors import EstuaryError
from estuary.importers import import_model
from estuary.nnapi import OperandCode, OperationCode


def _rejected(path, *fragments, **kw):
    with pytest.raises(EstuaryError) as e:
        import_model(path, **kw)
    message = str(e.value)
    for f in (os.path.basename(str(path)),) + fragments:
        assert f in message, (f, message)
    return message


# ---------------------------------------------------------------- WebNN JSON

def _webnn(tmp_path, operators, inputs=None, outputs=("y",), **extra):
    doc = {"inputs": inputs or {"x": {"descriptor": {"dataType": "float32", "shape": [1, 2, 4, 4]}}},
           "operators": operators, **extra}
    if outputs is not None:
        doc["outputs"] = outputs
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc))
    return path


CONV_W = {"descriptor": {"dataType": "float32", "shape": [2, 2, 1, 1]}, "data": [1.0, 0.0, 0.0, 1.0],
          "constant": True}


@pytest.mark.parametrize("options, fragments", [
    ({"padding": [1, 1, "a", 1]}, ("'y'", "conv2d", "padding", "sequence<unsigned long>", "'a'")),
    ({"padding": [1, 1, [1, 2], 1]}, ("padding", "sequence<unsigned long>")),
    ({"strides": [2 ** 63, 1]}, ("strides", "sequence<unsigned long>", str(2 ** 63))),
    ({"groups": []}, ("groups", "of type unsigned long")),
    ({"padding": [0, 0, 0, 2 ** 62]}, ("conv2d", "padding", str(2 ** 62))),  # beyond WebIDL's unsigned long
])
def test_webnn_option_values_of_the_wrong_kind(tmp_path, options, fragments):
    op = {"name": "conv2d", "arguments": [{"input": "x"}, {"filter": "w"}, {"options": options}], "outputs": "y"}
    _rejected(_webnn(tmp_path, [op], inputs={"x": {"descriptor": {"dataType": "float32", "shape": [1, 2, 4, 4]}},
                                             "w": CONV_W}), *fragments)


@pytest.mark.parametrize("name, options, fragment", [
    ("maxPool2d", {"windowDimensions": [2, 2], "padding": [2 ** 32 - 1] * 4, "strides": [2 ** 32 - 1] * 2},
     "the padded input"),
    ("averagePool2d", {"windowDimensions": [2, 2], "padding": [2 ** 30, 2 ** 30, 0, 0], "strides": [2 ** 30, 1]},
     "the padded input"),
])
def test_webnn_small_result_from_a_huge_intermediate(tmp_path, name, options, fragment):
    """Huge padding with huge strides gives a 3x3 result, but the lowering pads the whole input
    (this crashed IREE, or failed at run time)."""
    op = {"name": name, "arguments": [{"input": "x"}, {"options": options}], "outputs": "y"}
    _rejected(_webnn(tmp_path, [op], inputs={"x": {"descriptor": {"dataType": "float32", "shape": [1, 1, 4, 4]}}}),
              fragment)
    # strides of 65536 cropped by the padding to a 9x9 output: the strided intermediate is 196609 wide
    conv = {"name": "convTranspose2d", "arguments": [{"input": "x"}, {"filter": "w"},
                                                     {"options": {"strides": [2 ** 16, 2 ** 16],
                                                                  "padding": [98300] * 4}}],
            "outputs": "y"}
    inputs = {"x": {"descriptor": {"dataType": "float32", "shape": [1, 2, 4, 4]}}, "w": CONV_W}
    _rejected(_webnn(tmp_path, [conv], inputs=inputs), "conv_transpose2d", "the strided intermediate")


def test_webnn_malformed_structure(tmp_path):
    relu = {"name": "relu", "arguments": [{"input": "x"}], "outputs": "y"}
    cases = [
        ([{"name": "clamp", "arguments": [{"input": "x"}, {"options": {"maxValue": {}}}], "outputs": "y"}], {},
         ("clamp", "maxValue", "MLNumber")),
        ([{"name": "relu", "arguments": [{"input": "x"}]}], {}, ("'outputs' must be",)),
        ([{"name": "relu", "arguments": 1.5, "outputs": "y"}], {}, ("'arguments' must be",)),
        ([{"name": "relu", "arguments": [{"input": [["x"]]}], "outputs": "y"}], {}, ("relu", "must be a tensor")),
        ([relu], {"outputs": 5}, ("'outputs' must be",)),
        ([relu], {"outputs": None, "expectedOutputs": ["y"]}, ("'expectedOutputs' must be",)),
    ]
    for operators, extra, fragments in cases:
        outputs = extra.pop("outputs", ("y",))
        _rejected(_webnn(tmp_path, operators, outputs=outputs, **extra), *fragments)


def test_webnn_malformed_operands(tmp_path):
    relu = [{"name": "relu", "arguments": [{"input": "x"}], "outputs": "y"}]
    big = {"x": {"descriptor": {"dataType": "float32", "shape": [1]}, "data": [10 ** 400], "constant": True}}
    _rejected(_webnn(tmp_path, relu, inputs=big), "constant 'x'", "malformed data")
    nul = {"x": {"descriptor": {"dataType": "float32", "shape": [1]}, "data": {"file": "w\0.bin"}, "constant": True}}
    _rejected(_webnn(tmp_path, relu, inputs=nul), "'data.file'")
    listed = {"x": {"descriptor": {"dataType": ["float32"], "shape": [1]}}}
    _rejected(_webnn(tmp_path, relu, inputs=listed), "unsupported dataType")


def test_webnn_deep_graph_listed_in_reverse(tmp_path):
    """A 3000-operator chain listed last-first: valid, and ordered without recursion."""
    n = 3000
    ops = [{"name": "relu", "arguments": [{"input": "x" if i == 0 else f"t{i - 1}"}], "outputs": f"t{i}"}
           for i in range(n)]
    nn = import_model(_webnn(tmp_path, ops[::-1], outputs=[f"t{n - 1}"]))
    assert nn.outputs[0][0] == f"t{n - 1}"


# ---------------------------------------------------------------- NNEF

GRAPH = """version 1.0;

graph g( x ) -> ( y )
{{
    x = external<scalar>(shape = [1, 2]);
    {body}
}}
"""


def _nnef(tmp_path, body, quant=None, name="m.nnef"):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "graph.nnef").write_bytes(GRAPH.format(body=body).encode("utf-8"))
    if quant is not None:
        (folder / "graph.quant").write_bytes(quant.encode("utf-8"))
    return folder


@pytest.mark.parametrize("body", ["-y = relu(x);", "t = relu(x); relu(t); y = relu(t);",
                                  "y = relu(x); r(elu1 = relu(y);", "t = relu(x); -(y) = relu(t);",
                                  "relu(x); {", "y = variable(shape = [1, 2], label = 'a#'); relu(x);"])
def test_nnef_statements_the_khronos_parser_crashes_on(tmp_path, body):
    """The Khronos parser segfaults on these, so the check runs in a child process too."""
    folder = _nnef(tmp_path, body)
    code = ("import sys; from estuary.importers import import_model\n"
            "from estuary.base.errors import EstuaryError\n"
            "try:\n    import_model(sys.argv[1])\nexcept EstuaryError as e:\n    print(e)\n")
    r = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "graph.nnef:" in r.stdout and "expected an assignment" in r.stdout


def test_nnef_text_must_be_ascii(tmp_path):
    _rejected(_nnef(tmp_path, "y = relu(x);\0", name="nul.nnef"), "graph.nnef:6:", "NUL")
    quant = _nnef(tmp_path, "y = relu(x);", quant='"y": linear_quantize\u00ff(min = 0.0, max = 1.0, bits = 8);',
                  name="q.nnef")
    _rejected(quant, "graph.quant:1:", "non-ASCII")
    ok = _nnef(tmp_path, "y = relu(x);  # caf\u00e9, \u00fcber", name="comment.nnef")
    assert import_model(ok).outputs[0][0] == "y"


def test_nnef_corrupt_compressed_archive(tmp_path):
    folder = _nnef(tmp_path, "y = relu(x);")
    archive = tmp_path / "m.tgz"
    with tarfile.open(archive, "w:gz") as t:
        t.add(folder / "graph.nnef", arcname="graph.nnef")
    data = bytearray(archive.read_bytes())
    data[len(data) // 2:len(data) // 2 + 8] = b"\xff" * 8
    archive.write_bytes(bytes(data))
    _rejected(archive)


@pytest.mark.parametrize("compressed", [False, True])
def test_nnef_archive_damaged_after_its_first_member(tmp_path, compressed):
    """tarfile ends the member list quietly at a bad header, which would drop graph.quant."""
    import gzip
    import io

    graph = GRAPH.format(body="y = relu(x);").encode()
    quant = b'"y": linear_quantize(min = 0.0, max = 1.0, bits = 8);\n'
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for name, data in (("graph.nnef", graph), ("graph.quant", quant)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    raw = bytearray(buf.getvalue())
    second = 512 + -(-len(graph) // 512) * 512
    raw[second:second + 100] = b"\x07" * 100
    path = tmp_path / ("m.tgz" if compressed else "m.tar")
    path.write_bytes(gzip.compress(bytes(raw)) if compressed else bytes(raw))
    _rejected(path, "damaged tar archive")
    cut = tmp_path / "cut.tar"
    cut.write_bytes(buf.getvalue()[:512 + 40])
    _rejected(cut)


def test_shapes_argument_is_checked(tmp_path):
    folder = _nnef(tmp_path, "y = relu(x);")
    _rejected(folder, "shapes must be a dict", shapes="x")
    _rejected(folder, "shapes['x']", "positive integers", shapes={"x": [-1, 2]})
    _rejected(folder, "shapes['x']", shapes={"x": {"a": 1}})


# ---------------------------------------------------------------- Core ML

coremltools = pytest.importorskip("coremltools")


def _coreml(tmp_path, build, name="m.mlmodel"):
    from coremltools.models import datatypes
    from coremltools.models.neural_network import NeuralNetworkBuilder

    b = NeuralNetworkBuilder([("x", datatypes.Array(2, 6, 6))], [("y", None)])
    build(b)
    path = tmp_path / name
    path.write_bytes(b.spec.SerializeToString())
    return path


def _conv(b, **kw):
    b.add_convolution("conv", kernel_channels=2, output_channels=2, height=3, width=3, stride_height=1,
                      stride_width=1, border_mode="same", groups=1, W=np.ones((3, 3, 2, 2), np.float32), b=None,
                      has_bias=False, input_name="x", output_name="y", **kw)


def test_coreml_zero_stride_and_bad_border(tmp_path):
    def zero_stride(b):
        _conv(b)
        b.spec.neuralNetwork.layers[0].convolution.stride[:] = [0, 1]

    _rejected(_coreml(tmp_path, zero_stride, "s.mlmodel"), "'conv'", "convolution", "at least 1")

    def pool(b):
        b.add_pooling("pool", 2, 2, 1, 1, layer_type="MAX", padding_type="VALID", input_name="x", output_name="y")

    def zero_pool_stride(b):
        pool(b)
        b.spec.neuralNetwork.layers[0].pooling.stride[:] = [0, 0]

    _rejected(_coreml(tmp_path, zero_pool_stride, "p.mlmodel"), "'pool'", "pooling", "at least 1")

    def one_edge(b):
        pool(b)
        b.spec.neuralNetwork.layers[0].pooling.valid.paddingAmounts.borderAmounts.add()

    _rejected(_coreml(tmp_path, one_edge, "b.mlmodel"), "'pool'", "BorderAmounts has 3")


def test_coreml_negative_input_dimension(tmp_path):
    def negative(b):
        b.add_activation("relu", "RELU", "x", "y")
        b.spec.description.input[0].type.multiArrayType.shape[1] = -1

    _rejected(_coreml(tmp_path, negative), "input 'x'", "negative dimension")


def test_coreml_layer_without_its_inputs(tmp_path):
    def no_inputs(b):
        b.add_elementwise("sum", ["x", "x"], "y", mode="ADD")
        del b.spec.neuralNetwork.layers[0].input[:]

    _rejected(_coreml(tmp_path, no_inputs), "'sum'", "add", "malformed")


# ---------------------------------------------------------------- NNAPI

def _nnapi_space_to_depth(dims):
    m = nnapi.Model()
    x = m.add_operand(OperandCode.TENSOR_FLOAT32, dimensions=dims)
    block = m.add_operand(OperandCode.INT32)
    m.set_operand_value(block, 2)
    y = m.add_operand(OperandCode.TENSOR_FLOAT32, dimensions=[1, 2, 2, 4])
    m.add_operation(OperationCode.SPACE_TO_DEPTH, [x, block], [y])
    m.identify_inputs_and_outputs([x], [y])
    m.finish()
    return m


def test_nnapi_operand_of_the_wrong_rank(tmp_path):
    path = tmp_path / "m.nnapi.json"
    path.write_text(_nnapi_space_to_depth([4, 4]).to_json())
    _rejected(path, "SPACE_TO_DEPTH")


def test_nnapi_dimension_beyond_the_tensor_limit(tmp_path):
    path = tmp_path / "m.nnapi.json"
    path.write_text(_nnapi_space_to_depth([1, 4, 4, 1]).to_json())
    doc = json.loads(path.read_text())
    doc["operands"][0]["dimensions"] = [1, 4, 4, 2 ** 64]
    path.write_text(json.dumps(doc))
    _rejected(path, "more than")


def test_nnapi_zero_point_out_of_range(tmp_path):
    path = tmp_path / "m.nnapi.json"
    path.write_text(_nnapi_space_to_depth([1, 4, 4, 1]).to_json())
    doc = json.loads(path.read_text())
    doc["operands"][1] = {"type": "TENSOR_INT32", "dimensions": [1], "zeroPoint": float("inf"), "value": [2]}
    path.write_text(json.dumps(doc))
    _rejected(path, "malformed NNAPI model JSON")


def test_run_errors_of_a_compiled_artifact_name_its_model(tmp_path):
    relu = [{"name": "relu", "arguments": [{"input": "x"}], "outputs": "y"}]
    path = _webnn(tmp_path, relu)
    model = estuary.load(estuary.compile(str(path)))
    with pytest.raises(EstuaryError, match="m.json"):
        model.run({"x": np.zeros((1, 2, 4, 5), np.float32)})


def test_compile_reports_the_same_errors(tmp_path):
    op = {"name": "conv2d", "arguments": [{"input": "x"}, {"filter": "w"}, {"options": {"groups": []}}],
          "outputs": "y"}
    path = _webnn(tmp_path, [op], inputs={"x": {"descriptor": {"dataType": "float32", "shape": [1, 2, 4, 4]}},
                                          "w": CONV_W})
    with pytest.raises(EstuaryError, match="groups"):
        estuary.compile(str(path))
