"""The current spec's MLTensor execution model in the Python WebNN API: createTensor,
createConstantTensor, writeTensor, readTensor, dispatch, destroy; tensors stay on the device
between dispatches (CPU and Vulkan). Expected values come from onnxruntime."""
import numpy as np
import pytest
from onnx import helper

from estuary import webnn
from helpers import assert_accumulated, assert_exact, assert_ulp, run_onnx

F32 = {"dataType": "float32", "shape": [2, 3]}


def _mlp(ctx, w):
    """y = relu(x @ w + 1): one graph for chained dispatches."""
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": [3, 3]})
    y = b.relu(b.add(b.matmul(x, b.constant({"dataType": "float32", "shape": [3, 3]}, w)), b.constant("float32", 1.0)))
    return b.build({"y": y})


def _onnx_mlp(x, w):
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "one"], ["s"]),
             helper.make_node("Relu", ["s"], ["y"])]
    return run_onnx(nodes, {"x": x}, [("y", np.float32, None)],
                    initializers={"w": w, "one": np.array(1.0, np.float32)})["y"]


@pytest.mark.parametrize("device", ["cpu", pytest.param("gpu", marks=pytest.mark.vulkan)])
def test_chained_dispatches_stay_on_device(device, rng):
    ctx = webnn.ML().createContext({"deviceType": device})
    w = rng.uniform(-1, 1, (3, 3)).astype(np.float32)
    graph = _mlp(ctx, w)
    x = rng.uniform(-1, 1, (3, 3)).astype(np.float32)
    desc = {"dataType": "float32", "shape": [3, 3]}
    a = ctx.createTensor({**desc, "writable": True})
    t = ctx.createTensor(desc)  # neither readable nor writable: device only
    c = ctx.createTensor({**desc, "readable": True})
    ctx.writeTensor(a, x)
    ctx.dispatch(graph, {"x": a}, {"y": t})
    ctx.dispatch(graph, {"x": t}, {"y": c})  # the intermediate never leaves the device
    want = _onnx_mlp(_onnx_mlp(x, w), w)
    assert_accumulated(ctx.readTensor(c), want, 3 * 2)
    out = np.empty((3, 3), np.float32)
    assert ctx.readTensor(c, out) is None
    assert_exact(out, ctx.readTensor(c))
    ctx.writeTensor(a, bytes(np.zeros((3, 3), np.float32)))  # a bytes-like buffer of the byte length
    ctx.dispatch(graph, {"x": a}, {"y": c})
    assert_ulp(ctx.readTensor(c), _onnx_mlp(np.zeros((3, 3), np.float32), w), 1)
    # compute() stays as the convenience with host arrays
    assert_accumulated(ctx.compute(graph, {"x": x})["y"], _onnx_mlp(x, w), 3)


@pytest.mark.parametrize("device", ["cpu", pytest.param("gpu", marks=pytest.mark.vulkan)])
def test_integer_tensors_and_constant_tensors(device, rng):
    ctx = webnn.ML().createContext({"deviceType": device})
    data = rng.integers(0, 255, (4,)).astype(np.uint8)
    const = ctx.createConstantTensor({"dataType": "uint8", "shape": [4]}, data)
    assert const.constant and not const.readable and not const.writable
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "uint8", "shape": [4]})
    graph = b.build({"y": b.max(x, b.constant(const)), "eq": b.notEqual(x, b.constant(const))})
    tx = ctx.createTensor({"dataType": "uint8", "shape": [4], "writable": True})
    ty = ctx.createTensor({"dataType": "uint8", "shape": [4], "readable": True})
    te = ctx.createTensor({"dataType": "uint8", "shape": [4], "readable": True})
    xs = np.array([0, 200, 255, 7], np.uint8)
    ctx.writeTensor(tx, xs)
    ctx.dispatch(graph, {"x": tx}, {"y": ty, "eq": te})
    assert_exact(ctx.readTensor(ty), np.maximum(xs, data))
    assert_exact(ctx.readTensor(te), (xs != data).astype(np.uint8))


def test_a_fresh_tensor_reads_zeros():
    ctx = webnn.ML().createContext()
    t = ctx.createTensor({"dataType": "int64", "shape": [2, 2], "readable": True})
    assert_exact(ctx.readTensor(t), np.zeros((2, 2), np.int64))
    assert (t.dataType, t.shape, t.readable, t.writable, t.constant) == ("int64", [2, 2], True, False, False)


def test_spec_errors(rng):
    ctx = webnn.ML().createContext()
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", F32)
    graph = b.build({"y": b.abs(x)})
    r = ctx.createTensor({**F32, "readable": True})
    w = ctx.createTensor({**F32, "writable": True})
    with pytest.raises(webnn.TypeError_, match="not created readable"):
        ctx.readTensor(w)
    with pytest.raises(webnn.TypeError_, match="not created writable"):
        ctx.writeTensor(r, np.zeros((2, 3), np.float32))
    with pytest.raises(webnn.TypeError_, match="8 bytes, the tensor float32\\[2, 3\\] has 24"):
        ctx.writeTensor(w, b"\0" * 8)
    with pytest.raises(webnn.TypeError_, match="dtype int32"):
        ctx.writeTensor(w, np.zeros((2, 3), np.int32))
    with pytest.raises(webnn.TypeError_, match="both an input and an output"):
        ctx.dispatch(graph, {"x": w}, {"y": w})
    with pytest.raises(webnn.TypeError_, match="missing"):
        ctx.dispatch(graph, {}, {"y": r})
    small = ctx.createTensor({"dataType": "float32", "shape": [3], "readable": True})
    with pytest.raises(webnn.TypeError_, match=r"float32\[3\] tensor"):
        ctx.dispatch(graph, {"x": w}, {"y": small})
    other = webnn.ML().createContext().createTensor({**F32, "readable": True})
    with pytest.raises(webnn.TypeError_, match="another MLContext"):
        ctx.dispatch(graph, {"x": w}, {"y": other})
    w.destroy()
    with pytest.raises(webnn.TypeError_, match="destroyed"):
        ctx.dispatch(graph, {"x": w}, {"y": r})
    graph.destroy()
    with pytest.raises(webnn.InvalidStateError, match="destroyed"):
        ctx.dispatch(graph, {"x": ctx.createTensor(F32)}, {"y": r})
    assert ctx.lost is None
    ctx.destroy()
    assert ctx.lost == {"message": "the MLContext was destroyed"}
    with pytest.raises(webnn.InvalidStateError):
        ctx.createTensor(F32)
    with pytest.raises(webnn.InvalidStateError):
        webnn.MLGraphBuilder(ctx)


def test_accelerated_option_and_labels():
    assert webnn.ML().createContext({"accelerated": False}).deviceType == "cpu"
    assert webnn.ML().createContext({"accelerated": True}).deviceType == "gpu"
    ctx = webnn.ML().createContext()
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", F32)
    with pytest.raises(Exception, match="my_slice") as e:  # the operator's label is quoted
        b.slice(x, [0, 0], [3, 3], {"label": "my_slice"})
    assert "slice" in str(e.value)


def test_int4_operands_in_the_python_builder(rng):
    """int4 / uint4 operands (int8 / uint8 values in the 4-bit range): quantizeLinear with a 4-bit
    zero point saturates to its range; dequantizeLinear of int4 data; the spec's formulas in float64."""
    ctx = webnn.ML().createContext()
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": [2, 4]})
    scale = b.constant({"dataType": "float32", "shape": [2, 1]}, np.array([[0.25], [0.5]], np.float32))
    zp = b.constant({"dataType": "uint4", "shape": [2, 1]}, np.array([[3], [8]], np.uint8))
    q = b.quantizeLinear(x, scale, zp)
    assert (q.dataType, q.shape) == ("uint4", [2, 4])
    w = b.constant({"dataType": "int4", "shape": [2, 4]}, np.array([[-8, -1, 0, 7], [3, -4, 5, 1]], np.int8))
    wz = b.constant({"dataType": "int4", "shape": [2, 1]}, np.array([[1], [-2]], np.int8))
    graph = b.build({"q": q, "d": b.dequantizeLinear(w, scale, wz)})
    assert graph.outputDescriptors["q"]["dataType"] == "uint4"
    xs = np.array([[-1.0, 0.3, 2.9, 100.0], [-5.0, 0.74, 1.25, 3.0]], np.float32)
    got = ctx.compute(graph, {"x": xs})
    s64, z64 = np.array([[0.25], [0.5]]), np.array([[3.0], [8.0]])
    want_q = np.clip(np.round(xs.astype(np.float64) / s64) + z64, 0, 15).astype(np.uint8)
    assert_exact(got["q"], want_q)
    want_d = ((np.array([[-8, -1, 0, 7], [3, -4, 5, 1]], np.float64) - [[1], [-2]]) * s64).astype(np.float32)
    assert_ulp(got["d"], want_d, 0)
    with pytest.raises(webnn.TypeError_, match="does not fit int4"):
        b2 = webnn.MLGraphBuilder(ctx)
        b2.constant({"dataType": "int4", "shape": [1]}, np.array([8], np.int8))
    limits = ctx.opSupportLimits()
    assert "int4" in limits["dequantizeLinear"]["input"]["dataTypes"]
    assert "uint4" in limits["quantizeLinear"]["output"]["dataTypes"]
