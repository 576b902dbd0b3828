"""Running a model with dynamic dimensions (estuary.shapes, runtime.Model): one artefact for every
size within the bounds, outputs of their computed shapes, clear errors for sizes it cannot run,
the CLI's description, and --shape specialization. Oracle: onnxruntime with symbolic dims."""
import subprocess
import sys

import numpy as np
import pytest

import estuary
from estuary.base.errors import RuntimeInputError

import helpers

# y = relu(x @ w) + mask (mask broadcast over the last axis), z = concat(x, x) along the sequence
W = np.random.default_rng(7).standard_normal((8, 8)).astype(np.float32)
DOC = {
    "inputs": {
        "x": {"descriptor": {"shape": [1, {"name": "seq", "maxSize": 64}, 8], "dataType": "float32"}},
        "mask": {"descriptor": {"shape": [1, {"name": "mlen", "maxSize": 64}], "dataType": "float32"}},
        "w": {"descriptor": {"shape": [8, 8], "dataType": "float32"}, "data": W.ravel().tolist(), "constant": True},
    },
    "operators": [
        {"name": "matmul", "arguments": [{"a": "x"}, {"b": "w"}], "outputs": "p"},
        {"name": "relu", "arguments": [{"input": "p"}], "outputs": "r"},
        {"name": "reshape", "arguments": [{"input": "mask"}, {"newShape": [1, {"name": "mlen"}, 1]}], "outputs": "m3"},
        {"name": "add", "arguments": [{"a": "r"}, {"b": "m3"}], "outputs": "y"},
        {"name": "concat", "arguments": [{"inputs": ["x", "x"]}, {"axis": 1}], "outputs": "z"},
    ],
    "outputs": ["y", "z"],
}


def _oracle(x, mask):
    from onnx import helper

    nodes = [helper.make_node("MatMul", ["x", "w"], ["p"]), helper.make_node("Relu", ["p"], ["r"]),
             helper.make_node("Unsqueeze", ["mask", "axes"], ["m3"]), helper.make_node("Add", ["r", "m3"], ["y"]),
             helper.make_node("Concat", ["x", "x"], ["z"], axis=1)]
    return helpers.run_onnx(nodes, {"x": x, "mask": mask}, [("y", np.float32, None), ("z", np.float32, None)],
                            {"w": W, "axes": np.array([2], np.int64)})


@pytest.fixture(scope="module")
def model():
    return estuary.load(estuary.compile(DOC))


@pytest.mark.parametrize("n", [1, 7, 64])
def test_one_artefact_every_length(model, n):
    rng = np.random.default_rng(n)
    x, mask = rng.standard_normal((1, n, 8)).astype(np.float32), rng.standard_normal((1, n)).astype(np.float32)
    got, want = model.run({"x": x, "mask": mask}), _oracle(x, mask)
    assert got["y"].shape == (1, n, 8) and got["z"].shape == (1, 2 * n, 8)
    helpers.assert_accumulated(got["y"], want["y"], 8)
    np.testing.assert_array_equal(got["z"], want["z"])


def test_signature_and_output_shapes(model):
    assert model.inputs == [("x", (1, "seq", 8), "float32"), ("mask", (1, "mlen"), "float32")]
    assert model.outputs == [("y", (1, "seq", 8), "float32"), ("z", (1, "2*seq", 8), "float32")]
    assert model.dims == {"seq": (1, 64), "mlen": (1, 64)}
    assert model.output_shapes({"x": (1, 5, 8), "mask": (1, 5)}) == {"y": (1, 5, 8), "z": (1, 10, 8)}


@pytest.mark.parametrize("x_len,mask_len,message", [
    (65, 65, r"input 'x' dimension 1 \(seq\) is 65, outside its bounds 1..64"),
    (5, 4, r"input 'mask' dimension 1 \(mlen\) is 4, but the model needs mlen = seq = 5"),
])
def test_sizes_it_cannot_run_are_named(model, x_len, mask_len, message):
    with pytest.raises(RuntimeInputError, match=message):
        model.run({"x": np.zeros((1, x_len, 8), np.float32), "mask": np.zeros((1, mask_len), np.float32)})
    with pytest.raises(RuntimeInputError, match="has shape"):
        model.run({"x": np.zeros((1, 5, 9), np.float32), "mask": np.zeros((1, 5), np.float32)})


def test_an_image_too_small_for_the_convolution():
    doc = {"inputs": {"x": {"descriptor": {"shape": [1, 1, {"name": "h", "maxSize": 32}, 8], "dataType": "float32"}},
                      "w": {"descriptor": {"shape": [1, 1, 3, 3], "dataType": "float32"}, "data": [1.0] * 9,
                            "constant": True}},
           "operators": [{"name": "conv2d", "arguments": [{"input": "x"}, {"filter": "w"}], "outputs": "y"}],
           "outputs": ["y"]}
    m = estuary.load(estuary.compile(doc))
    assert m.run({"x": np.ones((1, 1, 4, 8), np.float32)})["y"].shape == (1, 1, 2, 6)
    with pytest.raises(RuntimeInputError, match=r"with h = 2 an intermediate dimension h - 2 would be 0"):
        m.run({"x": np.ones((1, 1, 2, 8), np.float32)})


def test_cli_describes_and_specializes(tmp_path):
    import json

    path = tmp_path / "model.json"
    path.write_text(json.dumps(DOC))
    out = subprocess.run([sys.executable, "-m", "estuary", "info", str(path)], capture_output=True, text=True)
    assert "input  x: float32[1, seq (1..64), 8]" in out.stdout and "shape rule: mlen = seq" in out.stdout
    fixed = tmp_path / "fixed.vmfb"
    subprocess.run([sys.executable, "-m", "estuary", "compile", str(path), "--shape", "x=1x5x8", "-o", str(fixed)],
                   check=True, capture_output=True)
    m = estuary.load(str(fixed))
    assert m.inputs == [("x", (1, 5, 8), "float32"), ("mask", (1, 5), "float32")] and not m.dims
