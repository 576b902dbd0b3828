"""Compiling a model frees its MLIR context and weights; a context still in use is left alone.

Each import builds its own MLIR context holding the model's weights (as resources that keep the
numpy arrays alive). `graph.RESOURCES` maps each resource to its array weakly, so its size tells
whether the weights of a compiled model are still held by a context.
"""
import os

import numpy as np
import pytest
from onnx import helper

import estuary
from estuary import webnn
from estuary.dialects import graph
from estuary.dialects.graph import NNModule
from estuary.base.errors import CompileError
from estuary.importers import import_model
from helpers import run_onnx

from helpers import ROOT  # noqa: E402 - the repository
MODEL = os.path.join(ROOT, "python", "estuary", "examples", "mobilenet_block.json")


def _weight_count(nn):
    return sum(1 for o in nn.main.regions[0].blocks[0].operations if o.operation.name == "nn.constant")


def test_compile_frees_the_models_weights():
    before = len(graph.RESOURCES)
    for _ in range(3):
        estuary.compile(MODEL)
    assert len(graph.RESOURCES) == before


def test_close_frees_an_imported_model():
    before = len(graph.RESOURCES)
    nn = import_model(MODEL)
    assert len(graph.RESOURCES) > before
    assert nn.close() is True
    assert len(graph.RESOURCES) == before
    assert nn.module is None and nn.context is None


def test_close_leaves_a_context_another_module_shares():
    nn = import_model(MODEL)
    other = NNModule.from_module(nn.module, nn.session, source=MODEL)
    assert nn.close() is False
    assert _weight_count(other) > 0
    name, spec = other.inputs[0]
    x = {name: np.random.default_rng(0).standard_normal(spec.shape).astype(np.float32)}
    shared = estuary.load(estuary.compile(other)).run(x)["probabilities"]
    assert other.close() is True
    np.testing.assert_array_equal(shared, estuary.load(estuary.compile(MODEL)).run(x)["probabilities"])


def test_close_leaves_a_context_an_attribute_still_uses():
    nn = import_model(MODEL)
    signature = nn.main.attributes["function_type"]  # lives in the context, not in the module
    assert nn.close() is False
    assert "tensor<1x3x32x32xf32>" in str(signature)


def test_failed_compile_then_compile_again():
    with pytest.raises(CompileError):
        estuary.compile(MODEL, extra_flags=["--iree-no-such-flag"])
    before = len(graph.RESOURCES)
    estuary.compile(MODEL)
    assert len(graph.RESOURCES) == before


def test_webnn_compute_frees_the_graph_and_still_runs():
    context = webnn.ML().createContext()
    b = webnn.MLGraphBuilder(context)
    w = np.random.default_rng(1).standard_normal((64, 64)).astype(np.float32)
    desc = {"dataType": "float32", "shape": [64, 64]}
    g = b.build({"y": b.matmul(b.input("x", {"dataType": "float32", "shape": [2, 64]}), b.constant(desc, w))})
    before = len(graph.RESOURCES)
    feeds = {"x": np.random.default_rng(2).standard_normal((2, 64)).astype(np.float32)}
    first = context.compute(g, feeds)["y"]
    assert len(graph.RESOURCES) < before  # the graph's module was freed once compiled
    again = context.compute(g, feeds)["y"]  # the cached compiled model
    expected = run_onnx([helper.make_node("MatMul", ["x", "w"], ["y"])], feeds, [("y", np.float32, None)], {"w": w})["y"]
    np.testing.assert_allclose(first, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(again, first)


def test_webnn_build_frees_the_builders_scratch_module():
    before = len(graph.RESOURCES)
    context = webnn.ML().createContext()
    b = webnn.MLGraphBuilder(context)
    w = np.random.default_rng(3).standard_normal((64, 64)).astype(np.float32)
    x = b.input("x", {"dataType": "float32", "shape": [2, 64]})
    y = b.matmul(x, b.constant({"dataType": "float32", "shape": [64, 64]}, w))
    g = b.build({"y": y})  # x and y stay referenced here: their shapes still answer
    assert (x.shape, y.shape, y.dataType) == ([2, 64], [2, 64], "float32")
    feeds = {"x": np.random.default_rng(4).standard_normal((2, 64)).astype(np.float32)}
    out = context.compute(g, feeds)["y"]
    assert len(graph.RESOURCES) == before  # neither the scratch module nor the graph's is left
    expected = run_onnx([helper.make_node("MatMul", ["x", "w"], ["y"])], feeds, [("y", np.float32, None)], {"w": w})["y"]
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    with pytest.raises(webnn.InvalidStateError):
        b.relu(x)
