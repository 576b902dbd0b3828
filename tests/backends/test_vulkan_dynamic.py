"""Dynamic shapes on Vulkan (lavapipe in CI): one vulkan-spirv artefact run at several lengths,
with the reductions IREE's SPIR-V path got wrong over dynamic extents until they were isolated
(backends/spirv.py: softmax over the dynamic outer axis), a LayerNorm over the inner axis and a
product. Oracle: onnxruntime."""
import numpy as np
import pytest

import estuary

import helpers

pytestmark = pytest.mark.vulkan

W = np.random.default_rng(3).standard_normal((16, 16)).astype(np.float32)
DOC = {
    "inputs": {
        "x": {"descriptor": {"shape": [{"name": "seq", "maxSize": 48}, 16], "dataType": "float32"}},
        "w": {"descriptor": {"shape": [16, 16], "dataType": "float32"}, "data": W.ravel().tolist(), "constant": True},
    },
    "operators": [
        {"name": "softmax", "arguments": [{"input": "x"}, {"axis": 0}], "outputs": "s"},
        {"name": "layerNormalization", "arguments": [{"input": "x"}, {"options": {"axes": [1]}}], "outputs": "n"},
        {"name": "matmul", "arguments": [{"a": "n"}, {"b": "w"}], "outputs": "p"},
        {"name": "add", "arguments": [{"a": "p"}, {"b": "s"}], "outputs": "y"},
    ],
    "outputs": ["y"],
}


def _oracle(x):
    from onnx import helper

    nodes = [helper.make_node("Softmax", ["x"], ["s"], axis=0),
             helper.make_node("LayerNormalization", ["x", "one", "zero"], ["n"], axis=1, epsilon=1e-5),
             helper.make_node("MatMul", ["n", "w"], ["p"]), helper.make_node("Add", ["p", "s"], ["y"])]
    consts = {"w": W, "one": np.ones(16, np.float32), "zero": np.zeros(16, np.float32)}
    return helpers.run_onnx(nodes, {"x": x}, [("y", np.float32, None)], consts)["y"]


@pytest.fixture(scope="module")
def model():
    return estuary.load(estuary.compile(DOC, target="vulkan-spirv"))


@pytest.mark.parametrize("n", [1, 9, 48])
def test_one_vulkan_artefact_every_length(model, n):
    x = np.random.default_rng(n).standard_normal((n, 16)).astype(np.float32)
    got = model.run({"x": x})["y"]
    assert got.shape == (n, 16)
    np.testing.assert_allclose(got, _oracle(x), rtol=1e-4, atol=1e-4)
