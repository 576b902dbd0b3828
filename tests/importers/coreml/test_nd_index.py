"""Core ML ND indexing layers (tile, stack, gathers/scatters, reverse(Seq), slidingWindows, topK,
argMin/Max, argSort, cumSum, oneHot, whereNonZero, band/triangular, whereBroadcastable, copy) vs
numpy implementations of the spec's formulas (float64 where arithmetic is involved)."""
import numpy as np
import pytest

pytest.importorskip("coremltools")
from coremltools.models import datatypes  # noqa: E402
from coremltools.models.neural_network import NeuralNetworkBuilder  # noqa: E402

from tests.importers.coreml.util import run, save  # noqa: E402
from helpers import assert_exact, assert_ulp  # noqa: E402
from estuary.base.errors import EstuaryError  # noqa: E402


def builder(inputs, outputs):
    return NeuralNetworkBuilder([(n, datatypes.Array(*s)) for n, s in inputs], [(n, None) for n in outputs],
                                disable_rank5_shape_mapping=True)


def _fix(i, n):
    i = np.asarray(i).astype(np.int64)
    return np.where(i < 0, i + n, i)


def test_gathers_and_data_movement(tmp_path, rng):
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    x2 = rng.standard_normal((3, 4, 5)).astype(np.float32)
    gi = np.array([[0, -1], [3, 2]], np.float32)
    ndi = np.array([[2, -1], [0, 1]], np.float32)
    ai = rng.integers(-4, 4, (3, 2, 5)).astype(np.float32)
    lengths = np.array([5, 2, 0], np.float32)
    outs = ["tile", "stack", "gather", "gnd", "gaa", "rev", "rseq", "win", "copy", "band", "low", "up", "wb"]
    b = builder([("x", x.shape), ("x2", x2.shape), ("gi", gi.shape), ("ndi", ndi.shape), ("ai", ai.shape),
                 ("len", lengths.shape), ("cond", (4, 5)), ("y", (1, 5))], outs)
    b.add_tile("tile", "x", "tile", reps=[2, 1])
    b.add_stack("stack", ["x", "x2"], "stack", axis=-2)
    b.add_gather("gather", ["x", "gi"], "gather", axis=-1)
    b.add_gather_nd("gnd", ["x", "ndi"], "gnd")
    b.add_gather_along_axis("gaa", ["x", "ai"], "gaa", axis=-2)
    b.add_reverse("rev", "x", "rev", reverse_dim=[True, False, True])
    b.add_reverse_sequence("rseq", ["x", "len"], "rseq", batch_axis=0, seq_axis=-1)
    b.add_sliding_windows("win", "x", "win", axis=2, window_size=3, step=2)
    b.add_copy("copy", "x", "copy")
    b.add_matrix_band_part("band", "x", "band", num_lower=1, num_upper=0)
    b.add_lower_triangular("low", "x", "low", k=-1)
    b.add_upper_triangular("up", "x", "up", k=1)
    b.add_where_broadcastable("wb", ["cond", "x", "y"], "wb")
    cond = (rng.random((4, 5)) > 0.5).astype(np.float32) * 3.0
    y = rng.standard_normal((1, 5)).astype(np.float32)
    got = run(save(b, tmp_path), {"x": x, "x2": x2, "gi": gi, "ndi": ndi, "ai": ai, "len": lengths, "cond": cond,
                                  "y": y})
    assert_exact(got["tile"], np.tile(x, (1, 2, 1)))
    assert_exact(got["stack"], np.stack([x, x2], axis=-2))
    assert_exact(got["gather"], np.take(x, _fix(gi, 5), axis=-1))
    n = _fix(ndi, np.array([3, 4]))
    assert_exact(got["gnd"], x[n[:, 0], n[:, 1]])
    assert_exact(got["gaa"], np.take_along_axis(x, _fix(ai, 4), axis=1))
    assert_exact(got["rev"], x[::-1, :, ::-1])
    rseq = x.copy()
    for bi, ln in enumerate(lengths.astype(int)):
        rseq[bi, :, :ln] = x[bi, :, :ln][:, ::-1]
    assert_exact(got["rseq"], rseq)
    assert_exact(got["win"], np.stack([x[:, :, 0:3], x[:, :, 2:5]], axis=2))
    assert_exact(got["copy"], x)
    i, j = np.indices((4, 5))
    assert_exact(got["band"], np.where((i - j <= 1) & (j - i <= 0), x, 0))
    assert_exact(got["low"], np.where(j - i <= -1, x, 0))
    assert_exact(got["up"], np.where(j - i >= 1, x, 0))
    assert_exact(got["wb"], np.where(cond != 0, x, y))


def test_scatters_every_mode(tmp_path, rng):
    x = rng.integers(-4, 5, (3, 4, 2)).astype(np.float32)
    si = np.array([1, -1, 1], np.float32)  # duplicate row 1
    su = rng.integers(1, 4, (3, 3, 2)).astype(np.float32)
    ndi = np.array([[0, 1], [2, -1], [0, 1]], np.float32)  # duplicate (0, 1)
    ndu = rng.integers(1, 4, (3, 2)).astype(np.float32)
    ai = np.array(rng.permutation(4)[:2], np.float32)[None, :, None] * np.ones((3, 1, 2), np.float32)
    au = rng.integers(1, 4, (3, 2, 2)).astype(np.float32)
    modes = ["UPDATE", "ADD", "SUB", "MUL", "DIV", "MAX", "MIN"]
    outs = [f"s_{m}" for m in modes] + [f"nd_{m}" for m in modes] + ["saa", "saa_add"]
    b = builder([("x", x.shape), ("si", si.shape), ("su", su.shape), ("ndi", ndi.shape), ("ndu", ndu.shape),
                 ("ai", ai.shape), ("au", au.shape)], outs)
    for m in modes:
        b.add_scatter(f"s_{m}", ["x", "si", "su"], f"s_{m}", axis=1, mode=m)
        b.add_scatter_nd(f"nd_{m}", ["x", "ndi", "ndu"], f"nd_{m}", mode=m)
    b.add_scatter_along_axis("saa", ["x", "ai", "au"], "saa", axis=-2)
    b.add_scatter_along_axis("saa_add", ["x", "ai", "au"], "saa_add", axis=1, mode="ADD")
    got = run(save(b, tmp_path), {"x": x, "si": si, "su": su, "ndi": ndi, "ndu": ndu, "ai": ai, "au": au})
    op = {"UPDATE": lambda a, u: u, "ADD": np.add, "SUB": np.subtract, "MUL": np.multiply, "DIV": np.divide,
          "MAX": np.maximum, "MIN": np.minimum}
    for m in modes:
        ref = x.copy()  # float32 arithmetic, updates applied in order
        for k, i in enumerate(_fix(si, 4)):
            ref[:, i, :] = op[m](ref[:, i, :], su[:, k, :])
        assert_exact(got[f"s_{m}"], ref)
        ref = x.copy()
        for k, (i, j) in enumerate(_fix(ndi, np.array([3, 4]))):
            ref[i, j, :] = op[m](ref[i, j, :], ndu[k])
        assert_exact(got[f"nd_{m}"], ref)
    ref, ref_add = x.copy(), x.copy()
    idx = ai.astype(np.int64)
    np.put_along_axis(ref, idx, au, axis=1)
    for u in np.ndindex(*au.shape):
        ref_add[u[0], idx[u], u[2]] += au[u]
    assert_exact(got["saa"], ref)
    assert_exact(got["saa_add"], ref_add)


def test_sorting_cumsum_onehot(tmp_path, rng):
    x = rng.integers(-3, 4, (3, 6)).astype(np.float32)  # ties: the order is a stable sort's
    k = np.array([2.0], np.float32)
    hot = np.array([0, 4, -1, 2, 7], np.float32)
    outs = ["tv", "ti", "bv", "bi", "kv", "ki", "amax", "amin", "asort", "dsort", "cs", "csx", "oh", "nz"]
    b = builder([("x", x.shape), ("hot", hot.shape)], outs)
    b.add_topk("top", ["x"], ["tv", "ti"], k=3, axis=-1)
    b.add_topk("bottom", ["x"], ["bv", "bi"], k=2, axis=0, use_bottom_k=True)
    b.add_load_constant_nd("k", "k", k, k.shape)
    b.add_topk("topk_dyn", ["x", "k"], ["kv", "ki"], axis=1)
    b.add_argmax("amax", "x", "amax", axis=1, keepdims=False)
    b.add_argmin("amin", "x", "amin", axis=-2, keepdims=True)
    b.add_argsort("asort", "x", "asort", axis=1)
    b.add_argsort("dsort", "x", "dsort", axis=-1, descending=True)
    b.add_cumsum("cs", ["x"], "cs", axis=1)
    b.add_cumsum("csx", ["x"], "csx", axis=-1, reverse=True, exclusive=True)
    b.add_one_hot("oh", ["hot"], "oh", one_hot_vector_size=5, axis=0, on_value=2.0, off_value=-1.0)
    nz = np.array([[0, 1.5, 0], [2, 0, -1]], np.float32)
    b.add_load_constant_nd("nzc", "nzc", nz, nz.shape)
    b.add_where_nonzero("nz", "nzc", "nz")
    got = run(save(b, tmp_path), {"x": x, "hot": hot})
    desc = np.argsort(-x, axis=1, kind="stable")
    asc0 = np.argsort(x, axis=0, kind="stable")
    assert_exact(got["ti"], desc[:, :3].astype(np.float32))
    assert_exact(got["tv"], np.take_along_axis(x, desc[:, :3], 1))
    assert_exact(got["bi"], asc0[:2].astype(np.float32))
    assert_exact(got["bv"], np.take_along_axis(x, asc0[:2], 0))
    assert_exact(got["ki"], desc[:, :2].astype(np.float32))
    assert_exact(got["kv"], np.take_along_axis(x, desc[:, :2], 1))
    assert_exact(got["amax"], np.argmax(x, axis=1).astype(np.float32))
    assert_exact(got["amin"], np.argmin(x, axis=0)[None].astype(np.float32))
    assert_exact(got["asort"], np.argsort(x, axis=1, kind="stable").astype(np.float32))
    assert_exact(got["dsort"], desc.astype(np.float32))
    x64 = x.astype(np.float64)
    assert_ulp(got["cs"], np.cumsum(x64, axis=1).astype(np.float32), 0)
    rev = np.flip(np.cumsum(np.flip(x64, 1), axis=1), 1) - x64
    assert_ulp(got["csx"], rev.astype(np.float32), 0)
    oh = np.where(np.arange(5)[:, None] == hot[None, :], 2.0, -1.0).astype(np.float32)
    assert_exact(got["oh"], oh)
    assert_exact(got["nz"], np.argwhere(nz != 0).astype(np.float32))


def test_where_non_zero_needs_constant(tmp_path):
    b = builder([("x", (2, 3))], ["nz"])
    b.add_where_nonzero("find_them", "x", "nz")
    with pytest.raises(EstuaryError) as e:
        run(save(b, tmp_path), {"x": np.ones((2, 3), np.float32)})
    assert "find_them" in str(e.value) and "whereNonZero" in str(e.value) and "data-dependent" in str(e.value)


def _greedy_nms(boxes, scores, iou_t, score_t, m, per_class):
    """The spec's algorithm in float64: max class score, descending order, greedy IoU suppression."""
    best, cls = scores.max(-1), scores.argmax(-1)
    corners = np.concatenate([boxes[..., :2] - boxes[..., 2:] / 2, boxes[..., :2] + boxes[..., 2:] / 2], -1)
    out = []
    for b in range(boxes.shape[0]):
        kept = []
        for i in sorted(range(boxes.shape[1]), key=lambda i: -best[b, i]):
            if best[b, i] <= score_t:
                continue
            ok = True
            for j in kept:
                lo = np.maximum(corners[b, i, :2], corners[b, j, :2])
                hi = np.minimum(corners[b, i, 2:], corners[b, j, 2:])
                inter = np.prod(np.maximum(hi - lo, 0))
                union = np.prod(boxes[b, i, 2:]) + np.prod(boxes[b, j, 2:]) - inter
                if inter / union > iou_t and (not per_class or cls[b, i] == cls[b, j]):
                    ok = False
            if ok:
                kept.append(i)
        out.append(kept[:m] or [int(np.argmax(best[b]))])
    return out


def test_non_maximum_suppression(tmp_path, rng):
    B, N, C = 2, 25, 3
    boxes = np.concatenate([rng.uniform(0, 8, (B, N, 2)), rng.uniform(1, 4, (B, N, 2))], -1).astype(np.float32)
    scores = (rng.permutation(B * N * C).reshape(B, N, C) / (B * N * C)).astype(np.float32)
    outs = ["ob", "os", "oi", "on", "pb", "ps", "pi", "pn"]
    b = builder([("boxes", boxes.shape), ("scores", scores.shape)], outs)
    b.add_nms("nms", ["boxes", "scores"], ["ob", "os", "oi", "on"], iou_threshold=0.3, score_threshold=0.4,
              max_boxes=6)
    iou = np.array([0.2], np.float32)  # the optional third input overrides iouThreshold
    b.add_load_constant_nd("iou", "iou", iou, iou.shape)
    b.add_nms("nms_pc", ["boxes", "scores", "iou"], ["pb", "ps", "pi", "pn"], iou_threshold=0.9,
              score_threshold=0.0, max_boxes=30, per_class_suppression=True)
    got = run(save(b, tmp_path), {"boxes": boxes, "scores": scores})
    b64, s64 = boxes.astype(np.float64), scores.astype(np.float64)
    for pre, iou_t, score_t, m, pc in (("o", 0.3, 0.4, 6, False), ("p", 0.2, 0.0, 30, True)):
        kept = _greedy_nms(b64, s64, iou_t, score_t, m, pc)
        for bi, k in enumerate(kept):
            pad = m - len(k)
            assert_exact(got[pre + "i"][bi], np.array(k + [-1] * pad, np.float32))
            assert got[pre + "n"][bi] == len(k)
            assert_exact(got[pre + "b"][bi], np.concatenate([boxes[bi, k], np.zeros((pad, 4), np.float32)]))
            assert_exact(got[pre + "s"][bi], np.concatenate([scores[bi, k], np.zeros((pad, C), np.float32)]))
