"""Indexing ops vs onnxruntime (Tile, GatherElements, GatherND, ScatterElements, ScatterND, CumSum,
TopK, ReverseSequence) and a float64/int numpy formula where ONNX has no reduction mode (sub, div)."""
import numpy as np
import pytest
from onnx import helper

import estuary
from estuary.dialects.core import TensorSpec
from estuary.dialects.graph import Graph
from helpers import assert_exact, run_onnx


def _run(inputs, build, consts=None):
    g = Graph()
    vals = {k: g.input(k, TensorSpec(v.shape, str(v.dtype))) for k, v in inputs.items()}
    for k, v in (consts or {}).items():
        vals[k] = g.constant(v, TensorSpec(v.shape, str(v.dtype)))
    outs = build(g, vals)
    return estuary.load(estuary.compile(g.finish(outs))).run(inputs)


@pytest.mark.parametrize("dtype", [np.float32, np.int32], ids=["float32", "int32"])
def test_gathers_tile_reverse_cumsum_topk(dtype, rng):
    x = (rng.standard_normal((3, 4, 5)) * 10).astype(dtype)
    ge_idx = np.array(rng.integers(-4, 4, (3, 2, 5)), np.int64)
    nd_idx = np.array([[[2, -1], [0, 1]], [[1, 3], [-3, 0]]], np.int32)
    lengths = np.array([4, 1, 0], np.int64)
    if dtype == np.int32:  # ties, to check the stable order
        x = rng.integers(-3, 3, (3, 4, 5)).astype(dtype)

    def build(g, v):
        vals, idx = g.op("top_k", [v["x"]], {"k": 3, "axis": 2})
        svals, sidx = g.op("top_k", [v["x"]], {"k": 4, "axis": 1, "largest": False, "indices_data_type": "int64"})
        return [("tile", g.op("tile", [v["x"]], {"repetitions": [2, 1, 3]})),
                ("rev", g.op("reverse", [v["x"]], {"axes": [0, 2]})),
                ("ge", g.op("gather_elements", [v["x"], v["ge"]], {"axis": 1})),
                ("nd", g.op("gather_nd", [v["x"], v["nd"]])),
                ("cs", g.op("cumulative_sum", [v["x"]], {"axis": 2})),
                ("csx", g.op("cumulative_sum", [v["x"]], {"axis": 1, "exclusive": True, "reversed": True})),
                ("rs", g.op("reverse_sequence", [v["x"], v["len"]], {"batch_axis": 0, "sequence_axis": 1})),
                ("tv", vals), ("ti", idx), ("sv", svals), ("si", sidx)]

    got = _run({"x": x}, build, {"ge": ge_idx, "nd": nd_idx, "len": lengths})
    n = helper.make_node
    nodes = [n("Tile", ["x", "reps"], ["tile"]), n("Slice", ["x", "rst", "ren", "rax", "rstep"], ["rev"]),
             n("GatherElements", ["x", "gei"], ["ge"], axis=1), n("GatherND", ["x", "ndi"], ["nd"]),
             n("CumSum", ["x", "a2"], ["cs"]), n("CumSum", ["x", "a1"], ["csx"], exclusive=1, reverse=1),
             n("ReverseSequence", ["x", "len"], ["rs"], batch_axis=0, time_axis=1),
             n("TopK", ["x", "k3"], ["tv", "ti"], axis=2), n("TopK", ["x", "k4"], ["sv", "si"], axis=1, largest=0)]
    i64 = lambda *a: np.array(a, np.int64)  # noqa: E731
    init = {"reps": i64(2, 1, 3), "rst": i64(-1, -1), "ren": i64(-2**62, -2**62), "rax": i64(0, 2),
            "rstep": i64(-1, -1), "gei": ge_idx, "ndi": nd_idx.astype(np.int64), "a2": i64(2), "a1": i64(1),
            "len": lengths, "k3": i64(3), "k4": i64(4)}
    outs = [(k, dtype, None) for k in ("tile", "rev", "ge", "nd", "cs", "csx", "rs", "tv", "sv")]
    outs += [("ti", np.int64, None), ("si", np.int64, None)]
    # onnxruntime's ReverseSequence wants lengths >= 1: length 0 and 1 both leave a batch untouched
    ref = run_onnx(nodes, {"x": x}, outs, initializers=dict(init, len=np.maximum(lengths, 1)))
    for k in ("tile", "rev", "ge", "nd", "cs", "csx", "rs", "tv", "sv", "ti"):
        assert_exact(got[k], ref[k].astype(got[k].dtype))
    assert got["ti"].dtype == np.int32 and got["si"].dtype == np.int64
    if dtype == np.float32:
        assert_exact(got["si"], ref["si"])
    else:  # onnxruntime's smallest-k order of ties is not specified: check a stable sort instead
        assert_exact(got["si"], np.argsort(x, axis=1, kind="stable")[:, :4])


def _scatter_ref(x, idx, upd, axis, red):
    out = x.copy()  # float32 arithmetic, one update after another
    for u in np.ndindex(*upd.shape):
        p = list(u)
        i = int(idx[u])
        p[axis] = i + x.shape[axis] if i < 0 else i
        p = tuple(p)
        a, b = out[p], upd[u]
        out[p] = {"none": b, "add": a + b, "sub": a - b, "mul": a * b, "div": a / b, "max": np.maximum(a, b),
                  "min": np.minimum(a, b)}[red]
    return out


def test_scatters_every_reduction(rng):
    """Duplicate indices accumulate in order; 'none' (no duplicates) is checked against ScatterElements/ND."""
    x = rng.integers(-5, 6, (4, 3)).astype(np.float32)
    upd = rng.integers(1, 4, (3, 3)).astype(np.float32)
    idx = np.array([[1, -1, 0], [1, 2, 0], [-3, 3, 0]], np.int32)  # duplicates in each column
    uniq = np.array([[1, 3, 0], [2, 0, 1], [0, 1, 3]], np.int64)
    nd_idx = np.array([[[1, 2]], [[-1, 0]]], np.int64)
    nd_upd = np.array([[7.0], [8.0]], np.float32)
    nd_rows = np.array([[3], [0]], np.int32)
    rows_upd = rng.standard_normal((2, 3)).astype(np.float32)
    reds = ("add", "sub", "mul", "div", "max", "min")

    def build(g, v):
        outs = [(r, g.op("scatter_elements", [v["x"], v["i"], v["u"]], {"axis": 0, "reduction": r})) for r in reds]
        outs.append(("none", g.op("scatter_elements", [v["x"], v["q"], v["u"]], {"axis": 0})))
        outs.append(("part", g.op("scatter_elements", [v["x"], v["pi"], v["pu"]], {"axis": 1, "reduction": "mul"})))
        outs.append(("nd", g.op("scatter_nd", [v["x"], v["ni"], v["nu"]])))
        outs.append(("ndrows", g.op("scatter_nd", [v["x"], v["nr"], v["ru"]], {"reduction": "add"})))
        return outs

    part_i = np.array([[2, 0], [1, 2]], np.int64)  # updates cover rows 0..1 of 4 only
    part_u = np.array([[2.0, -3.0], [0.5, 4.0]], np.float32)
    got = _run({"x": x, "u": upd, "ru": rows_upd}, build, {"i": idx, "q": uniq, "ni": nd_idx, "nu": nd_upd,
                                                           "nr": nd_rows, "pi": part_i, "pu": part_u})
    for r in reds:
        assert_exact(got[r], _scatter_ref(x, idx, upd, 0, r).astype(np.float32))
    n = helper.make_node
    ref = run_onnx([n("ScatterElements", ["x", "q", "u"], ["none"], axis=0),
                    n("ScatterND", ["x", "ni", "nu"], ["nd"]),
                    n("ScatterND", ["x", "nr", "ru"], ["ndrows"], reduction="add"),
                    n("ScatterElements", ["x", "pi", "pu"], ["part"], axis=1, reduction="mul")],
                   {"x": x, "u": upd, "ru": rows_upd}, [("none", np.float32, None), ("nd", np.float32, None),
                                                        ("ndrows", np.float32, None), ("part", np.float32, None)],
                   initializers={"pi": part_i, "pu": part_u, "q": uniq, "ni": np.where(nd_idx < 0, nd_idx + 4, nd_idx), "nu": nd_upd,
                                 "nr": nd_rows.astype(np.int64)})  # onnxruntime refuses negative indices
    for k in ("none", "nd", "ndrows", "part"):
        assert_exact(got[k], ref[k])


def test_non_max_suppression(rng):
    """vs onnxruntime NonMaxSuppression (center_point_box=1): one class = across classes; per-class
    suppression = one ONNX class per box holding its score (0 elsewhere, removed by threshold 0)."""
    B, N, C = 2, 40, 3
    boxes = np.concatenate([rng.uniform(0, 10, (B, N, 2)), rng.uniform(1, 4, (B, N, 2))], -1).astype(np.float32)
    scores = rng.permutation(B * N).reshape(B, N).astype(np.float32) / (B * N) + 0.01  # distinct
    cls = rng.integers(0, C, (B, N)).astype(np.int32)

    def build(g, v):
        i1, c1 = g.op("non_max_suppression", [v["b"], v["s"]], {"iou_threshold": 0.3, "score_threshold": 0.25,
                                                                 "max_boxes": 10})
        i2, c2 = g.op("non_max_suppression", [v["b"], v["s"], v["c"]], {"iou_threshold": 0.2, "max_boxes": 50})
        i3, c3 = g.op("non_max_suppression", [v["b"], v["s"]], {"iou_threshold": 0.3, "score_threshold": 5.0,
                                                                 "max_boxes": 2})
        return [("i1", i1), ("c1", c1), ("i2", i2), ("c2", c2), ("i3", i3), ("c3", c3)]

    got = _run({"b": boxes, "s": scores, "c": cls}, build)

    def ort(sc, iou, thr):
        n = helper.make_node("NonMaxSuppression", ["b", "s", "m", "iou", "thr"], ["sel"], center_point_box=1)
        r = run_onnx([n], {"b": boxes, "s": sc}, [("sel", np.int64, None)],
                     initializers={"m": np.array([N], np.int64), "iou": np.array([iou], np.float32),
                                   "thr": np.array([thr], np.float32)})["sel"]
        return [sorted(r[r[:, 0] == b][:, 2], key=lambda i: -scores[b, i]) for b in range(B)]

    def check(idx, cnt, kept, m):
        for b in range(B):
            want = kept[b][:m] or [int(np.argmax(scores[b]))]
            assert cnt[b] == len(want)
            assert_exact(idx[b], np.array(want + [-1] * (m - len(want)), np.int32))

    check(got["i1"], got["c1"], ort(scores[:, None, :], 0.3, 0.25), 10)
    per_class = np.stack([np.where(cls == k, scores, 0.0) for k in range(C)], axis=1).astype(np.float32)
    check(got["i2"], got["c2"], ort(per_class, 0.2, 0.0), 50)
    check(got["i3"], got["c3"], [[], []], 2)


@pytest.mark.parametrize("dtype", [np.int32, np.uint8], ids=["int32", "uint8"])
def test_integer_scatters(dtype, rng):
    """Integer reductions (wrapping add/sub/mul, signed or unsigned max/min) with duplicate indices."""
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, (5, 3), dtype=dtype, endpoint=True)
    upd = rng.integers(info.min, info.max, (4, 3), dtype=dtype, endpoint=True)
    idx = np.array([[0, 4, -1], [0, 1, 4], [3, 4, 2], [0, -5, 4]], np.int64)
    reds = ("none", "add", "sub", "mul", "max", "min")
    nd_idx = np.array([[1], [-1], [1]], np.int32)
    nd_upd = upd[:3]

    def build(g, v):
        outs = [(r, g.op("scatter_elements", [v["x"], v["i"], v["u"]], {"axis": 0, "reduction": r})) for r in reds]
        outs += [("nd_" + r, g.op("scatter_nd", [v["x"], v["ni"], v["nu"]], {"reduction": r})) for r in reds]
        return outs

    got = _run({"x": x, "u": upd}, build, {"i": idx, "ni": nd_idx, "nu": nd_upd})
    with np.errstate(over="ignore"):
        for r in reds:
            assert_exact(got[r], _scatter_ref(x, idx, upd, 0, r))
            rows = np.repeat(nd_idx, 3, axis=1)  # scatter_nd of whole rows = scatter_elements on axis 0
            assert_exact(got["nd_" + r], _scatter_ref(x, rows, nd_upd, 0, r))
