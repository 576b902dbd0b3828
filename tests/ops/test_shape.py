"""Data-movement ops vs onnxruntime (numpy.pad where ONNX has no equivalent: the symmetric mode and
mirror padding wider than the input): all exact, for every WebNN data type."""
import numpy as np
import pytest
from onnx import helper

from helpers import assert_exact, graph, op, run_graph, run_onnx

ALL_DTYPES = [np.float32, np.float16, np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64]
TRILU_TYPES = (np.float32, np.float16, np.int32, np.int64)  # the others go through int64 in the oracle


def _x(rng, shape, dtype):
    """Random data over the type's whole range (bit-exact movement is what is tested)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        x = (rng.standard_normal(shape) * 50).astype(dtype)
        x.flat[:3] = [np.inf, -np.inf, -0.0]
        return x
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


def _compare(doc, feeds, nodes, outputs, init=None, onnx_feeds=None):
    got = run_graph(doc, feeds)
    ref = run_onnx(nodes, onnx_feeds or feeds, outputs, initializers=init)
    for name, _, _ in outputs:
        assert_exact(got[name], ref[name])


def _i64(*values):
    return np.array(values, np.int64)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
def test_every_op_every_dtype(dtype, rng):
    """reshape, transpose (given and default), concat, slice, split, expand, gather (negative
    indices), triangular and edge/reflection pad in one graph per data type."""
    x, w = _x(rng, (2, 3, 4), dtype), _x(rng, (2, 1, 4), dtype)
    idx = np.array([[3, -4], [-1, 1]], np.int64)
    doc = graph({"x": x, "w": w}, [
        op("reshape", ("input", "x"), ("newShape", [4, 6]), outputs="r"),
        op("transpose", ("input", "x"), outputs="t", permutation=[2, 0, 1]),
        op("transpose", ("input", "x"), outputs="d"),
        op("concat", ("inputs", ["x", "w", "x"]), ("axis", 1), outputs="c"),
        op("slice", ("input", "x"), ("starts", [1, 0, 2]), ("sizes", [1, 2, 2]), outputs="s"),
        op("split", ("input", "x"), ("splits", [1, 3]), outputs=["p0", "p1"], axis=2),
        op("expand", ("input", "w"), ("newShape", [3, 2, 5, 4]), outputs="e"),
        op("gather", ("input", "x"), ("indices", "i"), outputs="g", axis=2),
        op("triangular", ("input", "x"), outputs="tri", upper=False, diagonal=1),
        op("pad", ("input", "x"), ("beginningPadding", [1, 0, 2]), ("endingPadding", [0, 2, 1]),
           outputs="pe", mode="edge"),
        op("pad", ("input", "x"), ("beginningPadding", [1, 0, 2]), ("endingPadding", [0, 2, 3]),
           outputs="pr", mode="reflection"),
    ], ["r", "t", "d", "c", "s", "p0", "p1", "e", "g", "tri", "pe", "pr"], constants={"i": idx})
    if dtype in TRILU_TYPES:
        trilu = [helper.make_node("Trilu", ["x", "k"], ["tri"], upper=0)]
    else:  # onnxruntime has no Trilu kernel for this type: run it on int64 (exact for these values)
        to = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
        trilu = [helper.make_node("Cast", ["x"], ["x64"], to=7),
                 helper.make_node("Trilu", ["x64", "k"], ["tri64"], upper=0),
                 helper.make_node("Cast", ["tri64"], ["tri"], to=to)]
    nodes = [
        helper.make_node("Reshape", ["x", "rs"], ["r"]),
        helper.make_node("Transpose", ["x"], ["t"], perm=[2, 0, 1]),
        helper.make_node("Transpose", ["x"], ["d"]),
        helper.make_node("Concat", ["x", "w", "x"], ["c"], axis=1),
        helper.make_node("Slice", ["x", "ss", "se"], ["s"]),
        helper.make_node("Split", ["x", "sp"], ["p0", "p1"], axis=2),
        helper.make_node("Expand", ["w", "es"], ["e"]),
        helper.make_node("Gather", ["x", "i"], ["g"], axis=2),
        *trilu,
        helper.make_node("Pad", ["x", "pep"], ["pe"], mode="edge"),
        helper.make_node("Pad", ["x", "prp"], ["pr"], mode="reflect"),
    ]
    init = {"rs": _i64(4, 6), "ss": _i64(1, 0, 2), "se": _i64(2, 2, 4), "sp": _i64(1, 3), "es": _i64(3, 2, 5, 4),
            "i": idx, "k": _i64(1), "pep": _i64(1, 0, 2, 0, 2, 1), "prp": _i64(1, 0, 2, 0, 2, 3)}
    outs = [(n, dtype, None) for n in ["r", "t", "d", "c", "s", "p0", "p1", "e", "g", "tri", "pe", "pr"]]
    _compare(doc, {"x": x, "w": w}, nodes, outs, init)


def test_scalars(rng):
    """Rank 0: reshape to and from a scalar, expand a scalar, gather with scalar indices."""
    x = _x(rng, (1, 1), np.float32)
    m = _x(rng, (3, 4), np.int32)
    doc = graph({"x": x, "m": m}, [
        op("reshape", ("input", "x"), ("newShape", []), outputs="s"),
        op("reshape", ("input", "s"), ("newShape", [1, 1, 1]), outputs="u"),
        op("expand", ("input", "s"), ("newShape", [2, 3]), outputs="e"),
        op("gather", ("input", "m"), ("indices", "k"), outputs="g", axis=1),
        op("gather", ("input", "m"), ("indices", "j"), outputs="h"),
    ], ["s", "u", "e", "g", "h"], constants={"k": np.array(-2, np.int32), "j": np.array(2, np.uint32)})
    nodes = [helper.make_node("Reshape", ["x", "z"], ["s"]),
             helper.make_node("Reshape", ["s", "o"], ["u"]),
             helper.make_node("Expand", ["s", "es"], ["e"]),
             helper.make_node("Gather", ["m", "k"], ["g"], axis=1),
             helper.make_node("Gather", ["m", "j"], ["h"], axis=0)]
    init = {"z": np.zeros([0], np.int64), "o": _i64(1, 1, 1), "es": _i64(2, 3), "k": np.array(-2, np.int64),
            "j": np.array(2, np.int64)}
    _compare(doc, {"x": x, "m": m}, nodes,
             [("s", np.float32, None), ("u", np.float32, None), ("e", np.float32, None),
              ("g", np.int32, None), ("h", np.int32, None)], init)


def test_concat_axes_and_single_input(rng):
    a, b, c = _x(rng, (2, 3, 4), np.float32), _x(rng, (2, 3, 1), np.float32), _x(rng, (5, 3, 4), np.float32)
    doc = graph({"a": a, "b": b, "c": c}, [
        op("concat", ("inputs", ["a", "c", "a"]), ("axis", 0), outputs="y0"),
        op("concat", ("inputs", ["b", "a"]), ("axis", 2), outputs="y2"),
        op("concat", ("inputs", ["a"]), ("axis", 1), outputs="y1"),
    ], ["y0", "y2", "y1"])
    _compare(doc, {"a": a, "b": b, "c": c},
             [helper.make_node("Concat", ["a", "c", "a"], ["y0"], axis=0),
              helper.make_node("Concat", ["b", "a"], ["y2"], axis=2),
              helper.make_node("Concat", ["a"], ["y1"], axis=1)],
             [(n, np.float32, None) for n in ["y0", "y2", "y1"]])


def test_slice_and_split(rng):
    x = _x(rng, (4, 6, 5), np.float32)
    doc = graph({"x": x}, [op("slice", ("input", "x"), ("starts", [1, 2, 0]), ("sizes", [2, 3, 5]), outputs="s"),
                           op("slice", ("input", "x"), ("starts", [3, 5, 4]), ("sizes", [1, 1, 1]), outputs="c"),
                           op("split", ("input", "x"), ("splits", [1, 2, 3]), outputs=["p0", "p1", "p2"], axis=1),
                           op("split", ("input", "x"), ("splits", 2), outputs=["q0", "q1"]),
                           op("split", ("input", "x"), ("splits", 5), outputs=[f"r{i}" for i in range(5)], axis=2)],
                ["s", "c", "p0", "p1", "p2", "q0", "q1"] + [f"r{i}" for i in range(5)])
    names = ["s", "c", "p0", "p1", "p2", "q0", "q1"] + [f"r{i}" for i in range(5)]
    _compare(doc, {"x": x},
             [helper.make_node("Slice", ["x", "st", "en"], ["s"]),
              helper.make_node("Slice", ["x", "cst", "cen"], ["c"]),
              helper.make_node("Split", ["x", "sp"], ["p0", "p1", "p2"], axis=1),
              helper.make_node("Split", ["x"], ["q0", "q1"], axis=0, num_outputs=2),
              helper.make_node("Split", ["x"], [f"r{i}" for i in range(5)], axis=2, num_outputs=5)],
             [(n, np.float32, None) for n in names],
             {"st": _i64(1, 2, 0), "en": _i64(3, 5, 5), "cst": _i64(3, 5, 4), "cen": _i64(4, 6, 5),
              "sp": _i64(1, 2, 3)})


@pytest.mark.parametrize("mode,onnx_mode", [("constant", "constant"), ("edge", "edge"), ("reflection", "reflect")])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_pad(mode, onnx_mode, dtype, rng):
    x = _x(rng, (3, 4, 5), dtype)
    begin, end = [1, 0, 2], [2, 3, 4]
    options = {"mode": mode} | ({"value": 7} if mode == "constant" else {})
    doc = graph({"x": x}, [op("pad", ("input", "x"), ("beginningPadding", begin), ("endingPadding", end), **options)],
                ["y"])
    init = {"p": np.array(begin + end, np.int64)}
    inputs = ["x", "p"]
    if mode == "constant":
        init["v"] = np.array(7, dtype)
        inputs.append("v")
    _compare(doc, {"x": x}, [helper.make_node("Pad", inputs, ["y"], mode=onnx_mode)], [("y", dtype, None)], init)


def test_pad_value_is_cast_like_the_spec(rng):
    """§7.7.31 casts the MLNumber value to the input's type (§8.2 "cast a number"): integers round
    half to even and clamp, float16 overflows to infinity. The oracle's values are those rules
    applied by hand."""
    cases = [(np.int32, 2.5, 2), (np.uint8, 300, 255), (np.int8, -1000.7, -128), (np.int64, -3.5, -4),
             (np.uint32, -5, 0), (np.float16, 70000, np.inf), (np.float32, 0.1, np.float32(0.1))]
    feeds = {f"x{i}": _x(rng, (2, 3), dt) for i, (dt, _, _) in enumerate(cases)}
    doc = graph(feeds, [op("pad", ("input", f"x{i}"), ("beginningPadding", [1, 0]), ("endingPadding", [0, 2]),
                           outputs=f"y{i}", value=v) for i, (_, v, _) in enumerate(cases)],
                [f"y{i}" for i in range(len(cases))])
    nodes = [helper.make_node("Pad", [f"x{i}", "p", f"v{i}"], [f"y{i}"]) for i in range(len(cases))]
    init = {"p": _i64(1, 0, 0, 2)} | {f"v{i}": np.array(want, dt) for i, (dt, _, want) in enumerate(cases)}
    _compare(doc, feeds, nodes, [(f"y{i}", dt, None) for i, (dt, _, _) in enumerate(cases)], init)


def test_pad_symmetric_spec_example():
    # the spec's own example (§7.7.31) for "symmetric"
    x = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    doc = graph({"x": x}, [op("pad", ("input", "x"), ("beginningPadding", [1, 2]), ("endingPadding", [1, 2]),
                              mode="symmetric")], ["y"])
    expected = [[2, 1, 1, 2, 3, 3, 2], [2, 1, 1, 2, 3, 3, 2], [5, 4, 4, 5, 6, 6, 5], [5, 4, 4, 5, 6, 6, 5]]
    assert_exact(run_graph(doc, {"x": x})["y"], np.array(expected, np.float32))


@pytest.mark.parametrize("dtype", [np.int32, np.uint64])
def test_pad_mirror_wider_than_input_matches_numpy(dtype, rng):
    """Symmetric padding, and mirror/edge padding wider than the dimension (this spec sets no
    limit; the reflection keeps bouncing between the edges): numpy.pad is the oracle."""
    x = _x(rng, (3, 4, 1), dtype)
    begin, end = [3, 9, 2], [7, 0, 5]
    modes = {"symmetric": "symmetric", "reflection": "reflect", "edge": "edge"}
    doc = graph({"x": x}, [op("pad", ("input", "x"), ("beginningPadding", begin), ("endingPadding", end),
                              outputs=f"y_{m}", mode=m) for m in modes], [f"y_{m}" for m in modes])
    got = run_graph(doc, {"x": x})
    for m, np_mode in modes.items():
        assert_exact(got[f"y_{m}"], np.pad(x, list(zip(begin, end)), mode=np_mode))


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_expand(dtype, rng):
    x = _x(rng, (3, 1), dtype)
    doc = graph({"x": x}, [op("expand", ("input", "x"), ("newShape", [2, 3, 4]), outputs="y"),
                           op("expand", ("input", "x"), ("newShape", [3, 1]), outputs="same")], ["y", "same"])
    _compare(doc, {"x": x}, [helper.make_node("Expand", ["x", "s"], ["y"]),
                             helper.make_node("Expand", ["x", "t"], ["same"])],
             [("y", dtype, None), ("same", dtype, None)], {"s": _i64(2, 3, 4), "t": _i64(3, 1)})


@pytest.mark.parametrize("axis,idx_dtype", [(0, np.int32), (1, np.int64), (2, np.uint32), (1, np.int32)])
def test_gather(axis, idx_dtype, rng):
    x = _x(rng, (4, 5, 6), np.float32)
    n = x.shape[axis]
    lo = 0 if idx_dtype == np.uint32 else -n  # the spec allows [-n, n)
    idx = rng.integers(lo, n, (2, 3)).astype(idx_dtype)
    doc = graph({"x": x, "i": idx}, [op("gather", ("input", "x"), ("indices", "i"), axis=axis)], ["y"])
    _compare(doc, {"x": x, "i": idx}, [helper.make_node("Gather", ["x", "i"], ["y"], axis=axis)],
             [("y", np.float32, None)], onnx_feeds={"x": x, "i": idx.astype(np.int64)})


def test_gather_spec_example_and_out_of_range_is_clamped():
    x = np.array([[0, 1, 2], [10, 11, 12], [20, 21, 22], [30, 31, 32]], np.float32)
    i = np.array([[0, 1], [1, 2]], np.uint32)
    doc = graph({"x": x, "i": i}, [op("gather", ("input", "x"), ("indices", "i"), axis=1)], ["y"])
    expected = [[[0, 1], [1, 2]], [[10, 11], [11, 12]], [[20, 21], [21, 22]], [[30, 31], [31, 32]]]
    assert_exact(run_graph(doc, {"x": x, "i": i})["y"], np.array(expected, np.float32))
    # Out of range is implementation-defined (§7.7.17 note): clamped, never read out of bounds.
    bad = np.array([7, -9, 2**31 - 1, -2**31], np.int32)
    big = np.array([2**32 - 1], np.uint32)
    doc = graph({"x": x, "i": bad, "u": big}, [op("gather", ("input", "x"), ("indices", "i"), outputs="y"),
                                              op("gather", ("input", "x"), ("indices", "u"), outputs="z")],
                ["y", "z"])
    got = run_graph(doc, {"x": x, "i": bad, "u": big})
    assert_exact(got["y"], x[[3, 0, 3, 0]])
    assert_exact(got["z"], x[[3]])


def test_triangular(rng):
    variants = [(True, 0), (True, 1), (True, -1), (False, 0), (False, 2), (False, -1), (True, 9), (False, -9),
                (True, -2 ** 31), (False, 2 ** 31 - 1)]  # WebNN's diagonal is a 32-bit long
    x = _x(rng, (2, 3, 4), np.float32)
    doc = graph({"x": x}, [op("triangular", ("input", "x"), outputs=f"y{i}", upper=u, diagonal=d)
                           for i, (u, d) in enumerate(variants)], [f"y{i}" for i in range(len(variants))])
    nodes = [helper.make_node("Trilu", ["x", f"k{i}"], [f"y{i}"], upper=int(u)) for i, (u, _) in enumerate(variants)]
    init = {f"k{i}": np.array(d, np.int64) for i, (_, d) in enumerate(variants)}
    _compare(doc, {"x": x}, nodes, [(f"y{i}", np.float32, None) for i in range(len(variants))], init)



def test_triangular_int64_extremes(rng):
    """The nn op takes any int64 diagonal, -2**63 included (the Core ML and NNEF forms are 64-bit)."""
    import estuary
    from estuary.dialects.core import TensorSpec
    from estuary.dialects.graph import Graph

    variants = [(True, -2 ** 63), (False, -2 ** 63), (True, 2 ** 63 - 1), (False, 2 ** 63 - 1)]
    x = _x(rng, (3, 4), np.float32)
    g = Graph()
    xv = g.input("x", TensorSpec(x.shape, "float32"))
    model = g.finish([(f"y{i}", g.op("triangular", [xv], {"upper": u, "diagonal": d}))
                      for i, (u, d) in enumerate(variants)])
    got = estuary.load(estuary.compile(model)).run({"x": x})
    nodes = [helper.make_node("Trilu", ["x", f"k{i}"], [f"y{i}"], upper=int(u)) for i, (u, _) in enumerate(variants)]
    ref = run_onnx(nodes, {"x": x}, [(f"y{i}", np.float32, None) for i in range(len(variants))],
                   initializers={f"k{i}": np.array(d, np.int64) for i, (_, d) in enumerate(variants)})
    for k in ref:
        assert_exact(got[k], ref[k])

@pytest.mark.vulkan
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_vulkan_concat_transpose(dtype, rng):
    a, b = _x(rng, (2, 3, 4), dtype), _x(rng, (2, 1, 4), dtype)
    doc = graph({"a": a, "b": b}, [op("concat", ("inputs", ["a", "b"]), ("axis", 1), outputs="c"),
                                   op("transpose", ("input", "c"), outputs="y", permutation=[1, 2, 0])], ["y"])
    got = run_graph(doc, {"a": a, "b": b}, target="vulkan-spirv")["y"]
    ref = run_onnx([helper.make_node("Concat", ["a", "b"], ["c"], axis=1),
                    helper.make_node("Transpose", ["c"], ["y"], perm=[1, 2, 0])],
                   {"a": a, "b": b}, [("y", dtype, None)])["y"]
    assert_exact(got, ref)
