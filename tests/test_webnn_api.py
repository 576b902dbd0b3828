"""The Python WebNN API (MLGraphBuilder & co) vs onnxruntime, and its error behaviour."""
import numpy as np
import pytest
from onnx import helper

import estuary
from estuary import webnn
from helpers import assert_accumulated, assert_ulp, run_onnx


def test_builder_conv_relu(rng):
    ctx = webnn.ML().createContext({"deviceType": "cpu"})
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": [1, 3, 8, 8]})
    w_data = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    w = b.constant({"dataType": "float32", "shape": [4, 3, 3, 3]}, w_data)
    y = b.relu(b.conv2d(x, w, {"padding": [1, 1, 1, 1]}))
    assert (y.dataType, y.shape) == ("float32", [1, 4, 8, 8])
    graph = b.build({"y": y})
    arr = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    got = ctx.compute(graph, {"x": arr})["y"]
    ref = run_onnx([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["y"])],
                   {"x": arr}, [("y", np.float32, None)], initializers={"w": w_data})["y"]
    assert_accumulated(got, ref, 27)


def test_scalar_constant_split_and_to_json_round_trip(tmp_path, rng):
    ctx = webnn.ML().createContext()
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": [4, 6]})
    two = b.constant("float32", 2.0)
    halves = b.split(b.mul(x, two), 2, {"axis": 1})
    y = b.add(halves[0], halves[1])
    graph = b.build({"sum": y, "left": halves[0]})
    arr = rng.standard_normal((4, 6)).astype(np.float32)
    outs = ctx.compute(graph, {"x": arr})
    assert_ulp(outs["sum"], 2 * arr[:, :3] + 2 * arr[:, 3:], 0)
    path = tmp_path / "g.json"
    graph.to_json(str(path), weights_file="g.bin")
    again = estuary.load(estuary.compile(str(path))).run({"x": arr})
    np.testing.assert_array_equal(again["sum"], outs["sum"])
    assert isinstance(estuary.compile(graph), estuary.Artifact)


def test_errors():
    ctx = webnn.ML().createContext()
    b, other = webnn.MLGraphBuilder(ctx), webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": [2]})
    z = other.input("z", {"dataType": "float32", "shape": [2]})
    with pytest.raises(webnn.TypeError_, match="another MLGraphBuilder"):
        b.add(x, z)
    with pytest.raises(estuary.EstuaryError, match="same data type"):
        b.add(x, b.input("i", {"dataType": "int32", "shape": [2]}))
    with pytest.raises(webnn.TypeError_, match="new non-empty string"):
        b.input("x", {"dataType": "float32", "shape": [2]})
    with pytest.raises(webnn.TypeError_, match="unsupported dataType"):
        b.input("q", {"dataType": "float64", "shape": [2]})
    with pytest.raises(webnn.TypeError_, match="graph input"):
        b.build({"y": x})
    with pytest.raises(AttributeError):
        b.notAnOp(x)
    y = b.exp(x)
    b.build({"y": y})
    with pytest.raises(webnn.InvalidStateError):
        b.build({"y": y})
    with pytest.raises(webnn.InvalidStateError):
        b.exp(x)


def test_op_support_limits():
    limits = webnn.ML().createContext().opSupportLimits()
    assert limits["preferredInputLayout"] == "nchw"
    assert limits["sigmoid"]["input"]["dataTypes"] == ["float32", "float16"]
    assert "int32" in limits["relu"]["input"]["dataTypes"] and "uint8" not in limits["relu"]["input"]["dataTypes"]
    assert limits["greaterOrEqual"]["output"]["dataTypes"] == ["uint8"]
    assert limits["argMax"]["output"]["dataTypes"] == ["int32"]


@pytest.mark.vulkan
def test_gpu_context(rng):
    ctx = webnn.ML().createContext({"deviceType": "gpu"})
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": [3, 4]})
    g = b.build({"y": b.softmax(x, 1)})
    arr = rng.standard_normal((3, 4)).astype(np.float32)
    ref = run_onnx([helper.make_node("Softmax", ["x"], ["y"], axis=1)], {"x": arr}, [("y", np.float32, None)])["y"]
    assert_accumulated(ctx.compute(g, {"x": arr})["y"], ref, 4, ulp_per_term=4)
