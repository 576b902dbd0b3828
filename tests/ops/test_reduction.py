"""Reductions (WebNN §7.7.34) and argMin/argMax (§7.7.5) vs onnxruntime.

ONNX opset 18 takes `axes` as an input; WebNN's "axes present and empty" (the reduction function
applied to each value alone) is ONNX's noop_with_empty_axes=1, which onnxruntime evaluates that way.
Several reductions share one compiled graph to keep the suite fast. Where onnxruntime differs from
our documented choice (NaN in max/min/argMax/argMin, integer overflow), numpy is the oracle.
"""
import numpy as np
import pytest
from onnx import helper

import estuary
from estuary.importers.webnn import load_graph
from helpers import assert_accumulated, assert_exact, graph, op, run_graph, run_onnx

ONNX = {"reduceSum": "ReduceSum", "reduceMean": "ReduceMean", "reduceMax": "ReduceMax", "reduceMin": "ReduceMin",
        "reduceProduct": "ReduceProd", "reduceL1": "ReduceL1", "reduceL2": "ReduceL2",
        "reduceLogSum": "ReduceLogSum", "reduceLogSumExp": "ReduceLogSumExp", "reduceSumSquare": "ReduceSumSquare"}
INT_OPS = ["reduceSum", "reduceMax", "reduceMin", "reduceProduct", "reduceL1", "reduceSumSquare"]
EXACT = {"reduceMax", "reduceMin"}


def _length(shape, axes):
    """Number of values folded into each output (1 for empty axes and scalars)."""
    axes = range(len(shape)) if axes is None else axes
    return int(np.prod([shape[a] for a in axes]))


def run_reductions(ops, feeds, axes, keep, target="llvm-cpu", cast_to=None):
    """One WebNN graph with a reduction per (js, input name), and the same in onnxruntime.

    Returns {output: (ours, onnxruntime's)}. float16 feeds go to onnxruntime as float32;
    `cast_to` routes inputs through an ONNX Cast (for types onnxruntime has no kernel for)."""
    options = {"keepDimensions": keep}
    if axes is not None:
        options["axes"] = axes
    attrs = {"keepdims": int(keep)}
    if axes == []:
        attrs["noop_with_empty_axes"] = 1
    operators, nodes, outs = [], [], []
    for k, (js, src) in enumerate(ops):
        name = f"{js}_{src}_{k}"
        operators.append(op(js, ("input", src), outputs=name, **options))
        onnx_in = src
        if cast_to is not None:
            onnx_in = f"{name}_in"
            to = helper.np_dtype_to_tensor_dtype(np.dtype(cast_to))
            nodes.append(helper.make_node("Cast", [src], [onnx_in], to=to))
        nodes.append(helper.make_node(ONNX[js], [onnx_in] + (["axes"] if axes is not None else []), [name], **attrs))
        outs.append((name, src))
    got = run_graph(graph(feeds, operators, [n for n, _ in outs]), feeds, target=target)
    onnx_feeds = {k: v.astype(np.float32) if v.dtype == np.float16 else v for k, v in feeds.items()}
    out_type = lambda src: cast_to or onnx_feeds[src].dtype  # noqa: E731
    ref = run_onnx(nodes, onnx_feeds, [(n, out_type(src), None) for n, src in outs],
                   initializers=None if axes is None else {"axes": np.array(axes, np.int64)}, opset=18)
    return {n: (got[n], ref[n]) for n, _ in outs}


def compare(name, got, ref, n):
    """Exact for max/min and integers, else an accumulation tolerance for `n` terms."""
    try:
        with np.errstate(invalid="ignore"):  # inf - inf inside the tolerance check
            if name.split("_")[0] in EXACT or got.dtype.kind in "iu":
                assert_exact(got, ref.astype(got.dtype))
            else:
                assert_accumulated(got, ref, n)
    except AssertionError as e:
        raise AssertionError(f"{name}: {e}") from None


@pytest.mark.parametrize("axes,keep", [([1], False), ([0, 2], True), ([2, 1], False), (None, False), (None, True),
                                       ([], False), ([], True)])
def test_float32(axes, keep, rng):
    feeds = {"x": rng.uniform(-1.5, 1.5, (3, 4, 5)).astype(np.float32),
             "p": rng.uniform(0.5, 1.5, (3, 4, 5)).astype(np.float32)}  # reduceLogSum needs a positive sum
    ops = [(js, "p" if js == "reduceLogSum" else "x") for js in sorted(ONNX)]
    for name, (got, ref) in run_reductions(ops, feeds, axes, keep).items():
        compare(name, got, ref, _length((3, 4, 5), axes))


@pytest.mark.parametrize("shape", [(1, 7, 7, 32), (2, 5, 3, 16), (1, 4, 4, 24)])
def test_spatial_axes(shape, rng):
    """Sums over axes [1, 2] of a 4-D tensor (global pooling written as a reduction): a pooling op
    over the whole image when the channels are a multiple of 16, tosa.reduce_sum otherwise."""
    feeds = {"x": rng.uniform(-1.5, 1.5, shape).astype(np.float32)}
    ops = [(js, "x") for js in ("reduceSum", "reduceMean", "reduceL1", "reduceL2", "reduceSumSquare")]
    for keep in (True, False):
        for name, (got, ref) in run_reductions(ops, feeds, [1, 2], keep).items():
            compare(name, got, ref, shape[1] * shape[2])


@pytest.mark.parametrize("dtype,axes,keep", [(np.int32, [0, 2], True), (np.int64, None, False)])
def test_integers(dtype, axes, keep, rng):
    x = rng.choice(np.array([-2, -1, 1, 2], dtype), (3, 4, 5))  # the full product stays in range
    for name, (got, ref) in run_reductions([(js, "x") for js in INT_OPS], {"x": x}, axes, keep).items():
        compare(name, got, ref, 0)


def test_int32_wraps():
    # WebNN leaves overflow unspecified; Estuary wraps like its integer arithmetic (onnxruntime saturates).
    x = np.array([[2**31 - 1, 5, 1], [2**16, 2**16, 3]], np.int32)
    doc = graph({"x": x}, [op("reduceSum", ("input", "x"), outputs="s", axes=[1]),
                           op("reduceProduct", ("input", "x"), outputs="p", axes=[1])], ["s", "p"])
    got = run_graph(doc, {"x": x})
    assert_exact(got["s"], np.sum(x, axis=1, dtype=np.int32))
    assert_exact(got["p"], np.prod(x, axis=1, dtype=np.int32))


def test_uint32():
    # onnxruntime has no uint32 reductions (and 1.31 gets int64 ReduceMax/Min wrong past 2**31), so
    # its oracle reduces the values as float64 (exact here); sums wrap mod 2**32 as documented.
    x = np.array([[1, 4000000000, 7, 3000000000], [0, 5, 3000000000, 2]], np.uint32)
    ops = [("reduceMax", "x"), ("reduceMin", "x"), ("reduceSum", "x"), ("reduceL1", "x")]
    for name, (got, ref) in run_reductions(ops, {"x": x}, [1], False, cast_to=np.float64).items():
        compare(name, got, ref.astype(np.int64).astype(np.uint32), 0)
    doc = graph({"x": x}, [op("argMax", ("input", "x"), ("axis", 1), outputs="a"),
                           op("argMin", ("input", "x"), ("axis", 1), outputs="b")], ["a", "b"])
    got = run_graph(doc, {"x": x})
    wide = {"x": x.astype(np.float64)}
    ref = run_onnx([helper.make_node("ArgMax", ["x"], ["a"], axis=1, keepdims=0),
                    helper.make_node("ArgMin", ["x"], ["b"], axis=1, keepdims=0)], wide,
                   [("a", np.int64, None), ("b", np.int64, None)])
    assert_exact(got["a"], ref["a"].astype(np.int32))
    assert_exact(got["b"], ref["b"].astype(np.int32))


def test_int8_uint8_extremes_and_args(rng):
    feeds = {"s": rng.integers(-128, 128, (4, 6)).astype(np.int8), "u": rng.integers(0, 256, (4, 6)).astype(np.uint8)}
    feeds["s"][0] = -128  # all-minimum slice: index 0, value -128
    feeds["u"][1, :] = 255
    ops, nodes, outs = [], [], []
    for src in feeds:
        for js, onnx_op in [("reduceMax", "ReduceMax"), ("reduceMin", "ReduceMin"), ("argMax", "ArgMax"),
                            ("argMin", "ArgMin")]:
            name = f"{js}_{src}"
            if js.startswith("arg"):
                ops.append(op(js, ("input", src), ("axis", 1), outputs=name, outputDataType="int64"))
                nodes.append(helper.make_node(onnx_op, [src], [name], axis=1, keepdims=0))
                outs.append((name, np.int64, None))
            else:
                ops.append(op(js, ("input", src), outputs=name, axes=[1]))
                nodes.append(helper.make_node(onnx_op, [src, "axes"], [name], keepdims=0))
                outs.append((name, feeds[src].dtype, None))
    got = run_graph(graph(feeds, ops, [o[0] for o in outs]), feeds)
    ref = run_onnx(nodes, feeds, outs, initializers={"axes": np.array([1], np.int64)}, opset=18)
    for name, _, _ in outs:
        compare(name, got[name], ref[name], 0)


@pytest.mark.parametrize("axes,keep", [([2], False), (None, True)])
def test_float16(axes, keep, rng):
    # float16 accumulates in float32, so it lands within an ULP or so of onnxruntime's float32 result.
    feeds = {"h": rng.uniform(0.5, 1.5, (3, 4, 5)).astype(np.float16)}
    ops = [(js, "h") for js in ["reduceSum", "reduceMean", "reduceL2", "reduceLogSumExp", "reduceMax"]]
    for name, (got, ref) in run_reductions(ops, feeds, axes, keep).items():
        assert got.dtype == np.float16
        compare(name, got, ref, _length((3, 4, 5), axes))


def test_log_sum_exp_is_stable(rng):
    x = (rng.standard_normal((6, 7)) * 50 + 500).astype(np.float32)  # exp would overflow without the max shift
    x[1] -= 1500
    x[2] = -np.inf  # a slice of -inf: -inf
    x[3, 2] = np.inf  # +inf anywhere: +inf
    x[4, :3] = -np.inf  # some -inf: ignored
    x[5, 4] = np.nan
    (got, ref), = run_reductions([("reduceLogSumExp", "x")], {"x": x}, [1], False).values()
    compare("reduceLogSumExp", got, ref, 7)


def test_max_min_infinities_and_nan():
    x = np.array([[-np.inf, -np.inf, -np.inf], [np.inf, np.inf, np.inf], [1, -np.inf, np.inf],
                  [1, np.nan, 3], [np.nan, 2, 1]], np.float32)
    res = run_reductions([("reduceMax", "x"), ("reduceMin", "x")], {"x": x}, [1], False)
    for name, (got, ref) in res.items():
        fn = np.max if name.startswith("reduceMax") else np.min
        assert_exact(got[:3], ref[:3])  # slices of infinities: onnxruntime agrees
        assert_exact(got[3:], fn(x[3:], axis=1))  # NaN propagates (numpy; onnxruntime skips a NaN)


def test_scalar_input():
    # "If the input operand is a scalar, the reduction function is applied to the scalar value."
    # The scalars come from a reshape of [1] inputs (the runtime cannot feed rank-0 arrays yet).
    feeds = {"x": np.array([-2.5], np.float32), "p": np.array([3.0], np.float32)}
    names = [("reduceL1", "x"), ("reduceL2", "x"), ("reduceSumSquare", "x"), ("reduceMean", "x"),
             ("reduceLogSumExp", "x"), ("reduceLogSum", "p"), ("reduceLogSum", "x"), ("reduceMax", "x")]
    ops = [op("reshape", ("input", src), ("newShape", []), outputs=f"{src}0") for src in feeds]
    nodes = [helper.make_node("Reshape", [src, "scalar"], [f"{src}0"]) for src in feeds]
    outs = []
    for k, (js, src) in enumerate(names):
        name = f"{js}_{k}"
        ops.append(op(js, ("input", f"{src}0"), outputs=name))
        nodes.append(helper.make_node(ONNX[js], [f"{src}0"], [name], keepdims=0))
        outs.append((name, np.float32, None))
    got = run_graph(graph(feeds, ops, [n for n, _, _ in outs]), feeds)
    ref = run_onnx(nodes, feeds, outs, initializers={"scalar": np.zeros(0, np.int64)}, opset=18)
    for name, _, _ in outs:
        assert got[name].shape == ()
        compare(name, got[name], ref[name], 1)


def run_args(feeds, axis, keep, out):
    """argMax and argMin of every feed, ours vs onnxruntime's."""
    ops, nodes, outs = [], [], []
    for src in feeds:
        for js in ("argMax", "argMin"):
            name = f"{js}_{src}"
            ops.append(op(js, ("input", src), ("axis", axis), outputs=name, keepDimensions=keep, outputDataType=out))
            nodes.append(helper.make_node("ArgMax" if js == "argMax" else "ArgMin", [src], [name], axis=axis,
                                          keepdims=int(keep)))
            outs.append((name, np.int64, None))
    got = run_graph(graph(feeds, ops, [o[0] for o in outs]), feeds)
    ref = run_onnx(nodes, feeds, outs)
    for name, _, _ in outs:
        assert got[name].dtype == np.dtype(out), name
        compare(name, got[name], ref[name], 0)


@pytest.mark.parametrize("axis,keep,out", [(0, False, "int32"), (1, True, "int64"), (2, False, "int64")])
def test_arg(axis, keep, out, rng):
    # small integers: many ties, and the first index must win (onnxruntime's select_last_index=0)
    x = rng.integers(0, 5, (3, 4, 5))
    run_args({"x": x.astype(np.float32), "h": x.astype(np.float16)}, axis, keep, out)



def test_outer_axis_reductions_read_back_over_their_input(rng):
    """x - max(x, outer axes), x - min(...), x - sum(...): IREE's SPIR-V code got these wrong when
    it fused the subtraction into the reduction's dispatch (spirv_workarounds.py); with
    ESTUARY_TEST_TARGET=vulkan-spirv (CI) this runs on lavapipe."""
    x = rng.standard_normal((3, 20, 6)).astype(np.float32)
    cases = [("reduceMax", "ReduceMax", [0]), ("reduceMin", "ReduceMin", [0, 2]), ("reduceSum", "ReduceSum", [0, 1])]
    ops, nodes, init = [], [], {}
    for i, (js, onnx_op, axes) in enumerate(cases):
        ops += [op(js, ("input", "x"), outputs=f"r{i}", axes=axes, keepDimensions=True),
                op("sub", ("a", "x"), ("b", f"r{i}"), outputs=f"y{i}")]
        init[f"axes{i}"] = np.array(axes, np.int64)
        nodes += [helper.make_node(onnx_op, ["x", f"axes{i}"], [f"r{i}"], keepdims=1),
                  helper.make_node("Sub", ["x", f"r{i}"], [f"y{i}"])]
    names = [f"y{i}" for i in range(len(cases))]
    got = run_graph(graph({"x": x}, ops, names), {"x": x})
    ref = run_onnx(nodes, {"x": x}, [(n, np.float32, None) for n in names], initializers=init)
    for i, (_, _, axes) in enumerate(cases):
        assert_accumulated(got[f"y{i}"], ref[f"y{i}"], int(np.prod([x.shape[a] for a in axes])))


@pytest.mark.parametrize("axes,isolated", [([0], 1), ([2], 0), ([1, 2], 0), ([0, 2], 1)])
def test_spirv_isolates_outer_axis_reductions(axes, isolated):
    """The SPIR-V targets keep a reduction over a non-innermost axis out of its consumers' dispatch
    (a barrier after it); innermost reductions are left to fuse. Compile only: no device needed."""
    doc = graph({"x": ((3, 20, 6), "float32")},
                [op("reduceMax", ("input", "x"), outputs="r", axes=axes, keepDimensions=True),
                 op("sub", ("a", "x"), ("b", "r"))], ["y"])
    art = estuary.compile(doc, target="vulkan-spirv", format="webnn")
    assert art.stats["isolated_reductions"] == isolated
    assert "isolated_reductions" not in estuary.compile(doc, format="webnn").stats

def test_arg_long_axis_ties(rng):
    x = rng.integers(-4, 5, (3, 3001))
    run_args({"f": x.astype(np.float32), "i": x.astype(np.int32), "l": x.astype(np.int64)}, 1, False, "int32")


def test_arg_integer_extremes():
    x = np.array([[3, -7, 2**31 - 1], [-(2**31), 0, 5], [-(2**31)] * 3, [2**31 - 1] * 3], np.int32)
    run_args({"x": x, "l": x.astype(np.int64) * 2**32}, 1, True, "int64")


def test_arg_nan_and_infinities():
    # The first NaN wins (TOSA argmax nan_mode PROPAGATE, numpy); onnxruntime skips a NaN not in front.
    x = np.array([[1, np.nan, 3, np.nan], [np.nan, 5, 2, 1], [-np.inf] * 4, [np.inf] * 4, [2, -np.inf, np.inf, 2]],
                 np.float32)
    doc = graph({"x": x}, [op("argMax", ("input", "x"), ("axis", 1), outputs="a"),
                           op("argMin", ("input", "x"), ("axis", 1), outputs="b")], ["a", "b"])
    got = run_graph(doc, {"x": x})
    assert_exact(got["a"], np.argmax(x, axis=1).astype(np.int32))
    assert_exact(got["b"], np.argmin(x, axis=1).astype(np.int32))


@pytest.mark.parametrize("operator,message", [
    (op("reduceSum", ("input", "x"), axes=[1.5]), r"axes must be of type sequence<unsigned long>, got \[1.5\]"),
    (op("reduceSum", ("input", "x"), axes=[-1]), r"axes must be of type sequence<unsigned long>, got \[-1\]"),
    (op("reduceSum", ("input", "x"), axes=[0, 0]), r"axes \[0, 0\] contain duplicates"),
    (op("reduceMax", ("input", "x"), axes=[2]), r"axes \[2\] out of range for rank 2"),
    (op("reduceMean", ("input", "x"), keepDimensions="yes"), "keepDimensions must be of type boolean"),
    (op("reduceL2", ("input", "i")), "input data type must be one of"),
    (op("argMax", ("input", "x"), ("axis", 2)), "axis 2 out of range for rank 2"),
    (op("argMin", ("input", "x"), ("axis", 0), outputDataType="float32"), "'output_data_type' must be one of"),
])
def test_invalid(operator, message):
    doc = graph({"x": ((2, 3), "float32"), "i": ((2, 3), "int32")}, [operator], ["y"])
    with pytest.raises(estuary.VerificationError, match=message):
        load_graph(doc)


@pytest.mark.vulkan
@pytest.mark.parametrize("js,axes,keep", [("reduceSum", [1], False), ("reduceMean", [0, 2], True),
                                          ("reduceMax", None, False)])
def test_vulkan(js, axes, keep, rng):
    feeds = {"x": rng.uniform(-1.5, 1.5, (3, 4, 5)).astype(np.float32)}
    for name, (got, ref) in run_reductions([(js, "x")], feeds, axes, keep, target="vulkan-spirv").items():
        compare(name, got, ref, _length((3, 4, 5), axes))
