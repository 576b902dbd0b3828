"""Data-movement ops vs onnxruntime (numpy.pad for the symmetric mode ONNX lacks): all exact."""
import numpy as np
import pytest
from onnx import helper

from helpers import assert_exact, graph, op, run_graph, run_onnx

DTYPES = [np.float32, np.int64, np.uint8, np.float16, np.int8]


def _x(rng, shape, dtype):
    return (rng.standard_normal(shape) * 50).astype(dtype) if np.dtype(dtype).kind == "f" \
        else rng.integers(0, 100, shape).astype(dtype)


def _single(doc, feeds, nodes, onnx_feeds=None, init=None, dtype=np.float32):
    got = run_graph(doc, feeds)["y"]
    ref = run_onnx(nodes, onnx_feeds or feeds, [("y", dtype, None)], initializers=init)["y"]
    assert_exact(got, ref)


@pytest.mark.parametrize("dtype", DTYPES)
def test_reshape_transpose(dtype, rng):
    x = _x(rng, (2, 3, 4), dtype)
    doc = graph({"x": x}, [op("transpose", ("input", "x"), outputs="t", permutation=[2, 0, 1]),
                           op("reshape", ("input", "t"), ("newShape", [4, 6]), outputs="y")], ["y"])
    _single(doc, {"x": x}, [helper.make_node("Transpose", ["x"], ["t"], perm=[2, 0, 1]),
                            helper.make_node("Reshape", ["t", "s"], ["y"])],
            init={"s": np.array([4, 6], np.int64)}, dtype=dtype)


def test_transpose_default_reverses(rng):
    x = _x(rng, (2, 3, 4), np.float32)
    _single(graph({"x": x}, [op("transpose", ("input", "x"))], ["y"]), {"x": x},
            [helper.make_node("Transpose", ["x"], ["y"])])


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.uint8])
@pytest.mark.parametrize("axis", [0, 1])
def test_concat(dtype, axis, rng):
    a, b, c = _x(rng, (2, 3), dtype), _x(rng, (2, 3), dtype), _x(rng, (2, 3), dtype)
    doc = graph({"a": a, "b": b, "c": c}, [op("concat", ("inputs", ["a", "b", "c"]), ("axis", axis))], ["y"])
    _single(doc, {"a": a, "b": b, "c": c}, [helper.make_node("Concat", ["a", "b", "c"], ["y"], axis=axis)], dtype=dtype)


def test_slice_and_split(rng):
    x = _x(rng, (4, 6, 5), np.float32)
    doc = graph({"x": x}, [op("slice", ("input", "x"), ("starts", [1, 2, 0]), ("sizes", [2, 3, 5]), outputs="s"),
                           op("split", ("input", "x"), ("splits", [1, 2, 3]), outputs=["p0", "p1", "p2"], axis=1),
                           op("split", ("input", "x"), ("splits", 2), outputs=["q0", "q1"])],
                ["s", "p0", "p1", "p2", "q0", "q1"])
    got = run_graph(doc, {"x": x})
    ref = run_onnx([helper.make_node("Slice", ["x", "st", "en"], ["s"]),
                    helper.make_node("Split", ["x", "sp"], ["p0", "p1", "p2"], axis=1),
                    helper.make_node("Split", ["x"], ["q0", "q1"], axis=0, num_outputs=2)],
                   {"x": x}, [(n, np.float32, None) for n in ["s", "p0", "p1", "p2", "q0", "q1"]],
                   initializers={"st": np.array([1, 2, 0], np.int64), "en": np.array([3, 5, 5], np.int64),
                                 "sp": np.array([1, 2, 3], np.int64)})
    for name in ref:
        assert_exact(got[name], ref[name])


@pytest.mark.parametrize("mode,onnx_mode", [("constant", "constant"), ("edge", "edge"), ("reflection", "reflect")])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_pad(mode, onnx_mode, dtype, rng):
    x = _x(rng, (3, 4, 5), dtype)
    begin, end = [1, 0, 2], [2, 3, 1]
    options = {"mode": mode} | ({"value": 7} if mode == "constant" else {})
    doc = graph({"x": x}, [op("pad", ("input", "x"), ("beginningPadding", begin), ("endingPadding", end), **options)],
                ["y"])
    init = {"p": np.array(begin + end, np.int64)}
    inputs = ["x", "p"]
    if mode == "constant":
        init["v"] = np.array(7, dtype)
        inputs.append("v")
    _single(doc, {"x": x}, [helper.make_node("Pad", inputs, ["y"], mode=onnx_mode)], init=init, dtype=dtype)


def test_pad_symmetric_matches_numpy_and_spec_example():
    # the spec's own example (§7.7.31) for "symmetric", plus numpy.pad on a larger case
    x = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    doc = graph({"x": x}, [op("pad", ("input", "x"), ("beginningPadding", [1, 2]), ("endingPadding", [1, 2]),
                              mode="symmetric")], ["y"])
    expected = [[2, 1, 1, 2, 3, 3, 2], [2, 1, 1, 2, 3, 3, 2], [5, 4, 4, 5, 6, 6, 5], [5, 4, 4, 5, 6, 6, 5]]
    assert_exact(run_graph(doc, {"x": x})["y"], np.array(expected, np.float32))
    z = np.arange(60, dtype=np.int32).reshape(3, 4, 5)
    doc = graph({"z": z}, [op("pad", ("input", "z"), ("beginningPadding", [3, 0, 4]), ("endingPadding", [2, 4, 0]),
                              mode="symmetric")], ["y"])
    assert_exact(run_graph(doc, {"z": z})["y"], np.pad(z, [(3, 2), (0, 4), (4, 0)], mode="symmetric"))


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_expand(dtype, rng):
    x = _x(rng, (3, 1), dtype)
    doc = graph({"x": x}, [op("expand", ("input", "x"), ("newShape", [2, 3, 4]))], ["y"])
    _single(doc, {"x": x}, [helper.make_node("Expand", ["x", "s"], ["y"])],
            init={"s": np.array([2, 3, 4], np.int64)}, dtype=dtype)


@pytest.mark.parametrize("axis,idx_dtype", [(0, np.int32), (1, np.int64), (2, np.uint32), (1, np.int32)])
def test_gather(axis, idx_dtype, rng):
    x = _x(rng, (4, 5, 6), np.float32)
    n = x.shape[axis]
    lo = 0 if idx_dtype == np.uint32 else -n
    idx = rng.integers(lo, n, (2, 3)).astype(idx_dtype)
    doc = graph({"x": x, "i": idx}, [op("gather", ("input", "x"), ("indices", "i"), axis=axis)], ["y"])
    got = run_graph(doc, {"x": x, "i": idx})["y"]
    ref = run_onnx([helper.make_node("Gather", ["x", "i"], ["y"], axis=axis)],
                   {"x": x, "i": idx.astype(np.int64)}, [("y", np.float32, None)])["y"]
    assert_exact(got, ref)


def test_gather_spec_example_and_out_of_range_is_clamped():
    x = np.array([[0, 1, 2], [10, 11, 12], [20, 21, 22], [30, 31, 32]], np.float32)
    i = np.array([[0, 1], [1, 2]], np.uint32)
    doc = graph({"x": x, "i": i}, [op("gather", ("input", "x"), ("indices", "i"), axis=1)], ["y"])
    expected = [[[0, 1], [1, 2]], [[10, 11], [11, 12]], [[20, 21], [21, 22]], [[30, 31], [31, 32]]]
    assert_exact(run_graph(doc, {"x": x, "i": i})["y"], np.array(expected, np.float32))
    bad = np.array([7, -9], np.int32)
    doc = graph({"x": x, "i": bad}, [op("gather", ("input", "x"), ("indices", "i"))], ["y"])
    assert_exact(run_graph(doc, {"x": x, "i": bad})["y"], x[[3, 0]])


@pytest.mark.parametrize("upper,diagonal", [(True, 0), (True, 1), (True, -1), (False, 0), (False, 2), (False, -1)])
def test_triangular(upper, diagonal, rng):
    x = _x(rng, (2, 3, 4), np.float32)
    doc = graph({"x": x}, [op("triangular", ("input", "x"), upper=upper, diagonal=diagonal)], ["y"])
    _single(doc, {"x": x}, [helper.make_node("Trilu", ["x", "k"], ["y"], upper=int(upper))],
            init={"k": np.array(diagonal, np.int64)})


@pytest.mark.vulkan
def test_vulkan_concat_transpose(rng):
    a, b = _x(rng, (2, 3), np.float32), _x(rng, (2, 3), np.float32)
    doc = graph({"a": a, "b": b}, [op("concat", ("inputs", ["a", "b"]), ("axis", 1), outputs="c"),
                                   op("transpose", ("input", "c"), outputs="y")], ["y"])
    got = run_graph(doc, {"a": a, "b": b}, target="vulkan-spirv")["y"]
    assert_exact(got, np.concatenate([a, b], 1).T)
