"""Reductions and argMin/argMax vs onnxruntime (opset 18: axes as an input)."""
import numpy as np
import pytest
from onnx import helper

from helpers import assert_accumulated, assert_exact, assert_ulp, graph, op, run_graph, run_onnx

ONNX = {"reduceSum": "ReduceSum", "reduceMean": "ReduceMean", "reduceMax": "ReduceMax", "reduceMin": "ReduceMin",
        "reduceProduct": "ReduceProd", "reduceL1": "ReduceL1", "reduceL2": "ReduceL2",
        "reduceLogSum": "ReduceLogSum", "reduceLogSumExp": "ReduceLogSumExp", "reduceSumSquare": "ReduceSumSquare"}
EXACT = {"reduceMax", "reduceMin"}


def reduce_case(rng, js, axes, keep, dtype=np.float32, shape=(3, 4, 5), target="llvm-cpu", data=None):
    if data is not None:
        x = data
    elif np.dtype(dtype).kind == "f":
        x = rng.uniform(0.5, 1.5, shape).astype(dtype)  # positive: log_sum is defined
    else:
        x = rng.integers(0, 9, shape).astype(dtype)
    options = {"keepDimensions": keep}
    if axes is not None:
        options["axes"] = axes
    doc = graph({"x": x}, [op(js, ("input", "x"), **options)], ["y"])
    got = run_graph(doc, {"x": x}, target=target)["y"]
    inputs = ["x"] + (["axes"] if axes is not None else [])
    init = {"axes": np.array(axes, np.int64)} if axes is not None else None
    attrs = {"keepdims": int(keep)}
    if axes == []:
        attrs["noop_with_empty_axes"] = 1
    feeds = {"x": x.astype(np.float32) if x.dtype == np.float16 else x}
    ref = run_onnx([helper.make_node(ONNX[js], inputs, ["y"], **attrs)], feeds,
                   [("y", feeds["x"].dtype, None)], initializers=init, opset=18)["y"]
    n = int(np.prod([x.shape[a] for a in (range(x.ndim) if axes is None else axes)])) if x.ndim else 1
    if js in EXACT or x.dtype.kind in "iu":
        assert_exact(got, ref.astype(x.dtype))
    elif x.dtype == np.float16:
        assert_accumulated(got.astype(np.float32), ref, max(n, 1), ulp_per_term=4096)
    else:
        assert_accumulated(got, ref, max(n, 1))


@pytest.mark.parametrize("js", sorted(ONNX))
@pytest.mark.parametrize("axes,keep", [([1], False), ([0, 2], True), (None, False)])
def test_reduce(js, axes, keep, rng):
    reduce_case(rng, js, axes, keep)


@pytest.mark.parametrize("js", ["reduceL1", "reduceL2", "reduceLogSum", "reduceSumSquare", "reduceMax"])
def test_empty_axes_reduce_nothing(js, rng):
    # "present and empty: no dimensions are reduced; the function is applied to each value"
    reduce_case(rng, js, [], False)


@pytest.mark.parametrize("js,dtype", [("reduceSum", np.int32), ("reduceMax", np.uint8), ("reduceMin", np.int64),
                                      ("reduceProduct", np.int32), ("reduceL1", np.int64)])
def test_reduce_integers(js, dtype, rng):
    reduce_case(rng, js, [1], False, dtype=dtype)


def test_reduce_unsigned_extremes():
    x = np.array([[1, 4000000000, 7], [0, 5, 3000000000]], np.uint32)
    for js, fn in [("reduceMax", np.max), ("reduceMin", np.min)]:
        doc = graph({"x": x}, [op(js, ("input", "x"), axes=[1])], ["y"])
        assert_exact(run_graph(doc, {"x": x})["y"], fn(x, axis=1))


@pytest.mark.parametrize("js", ["reduceSum", "reduceMean"])
def test_reduce_float16(js, rng):
    reduce_case(rng, js, [2], False, dtype=np.float16)


def test_log_sum_exp_is_stable(rng):
    x = (rng.standard_normal((2, 6)) * 50 + 500).astype(np.float32)
    reduce_case(rng, "reduceLogSumExp", [1], False, data=x)


@pytest.mark.parametrize("js,onnx_op", [("argMax", "ArgMax"), ("argMin", "ArgMin")])
@pytest.mark.parametrize("axis,keep,out", [(0, False, "int32"), (1, True, "int64"), (2, False, "int64")])
def test_arg(js, onnx_op, axis, keep, out, rng):
    x = rng.integers(0, 5, (3, 4, 5)).astype(np.float32)  # many ties: the first index must win
    doc = graph({"x": x}, [op(js, ("input", "x"), ("axis", axis), keepDimensions=keep, outputDataType=out)], ["y"])
    got = run_graph(doc, {"x": x})["y"]
    ref = run_onnx([helper.make_node(onnx_op, ["x"], ["y"], axis=axis, keepdims=int(keep))], {"x": x},
                   [("y", np.int64, None)])["y"]
    assert got.dtype == np.dtype(out)
    assert_exact(got, ref.astype(out))


def test_arg_integers(rng):
    x = np.array([[3, -7, 2**31 - 1], [-(2**31), 0, 5]], np.int32)
    doc = graph({"x": x}, [op("argMax", ("input", "x"), ("axis", 1), outputs="a"),
                           op("argMin", ("input", "x"), ("axis", 1), outputs="b")], ["a", "b"])
    got = run_graph(doc, {"x": x})
    assert_exact(got["a"], np.argmax(x, 1).astype(np.int32))
    assert_exact(got["b"], np.argmin(x, 1).astype(np.int32))


@pytest.mark.vulkan
@pytest.mark.parametrize("js", ["reduceSum", "reduceMean", "reduceMax"])
def test_vulkan_reduce(js, rng):
    reduce_case(rng, js, [1], False, target="vulkan-spirv")
