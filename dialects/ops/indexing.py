"""Declarations: Indexing and generation ops: tile, gather/scatter variants, cumsum, top-k, reverse.

Index operands are int32, uint32 or int64. Negative indices count from the end of their dimension
(index + size); indices still out of range after that are clamped to the dimension, so an op never
reads or writes out of bounds (ONNX leaves that case undefined, Core ML and WebNN do not define it).
Scatter reductions apply the updates one after another in row-major order of the update tensor, so
duplicates accumulate ("none": the last update wins).
"""
import numpy as np

from estuary.base import dtypes
from estuary.dialects.core import (Bool, Float, Int, Ints, Str, TensorSpec, axes_valid, check, dtype_in, nn_op,
                                   same_dim, same_dtype)

INDEX_TYPES = ("int32", "uint32", "int64")
REDUCTIONS = ("none", "add", "sub", "mul", "div", "max", "min")


def _fix(idx, n):
    idx = np.asarray(idx).astype(np.int64)
    return np.clip(np.where(idx < 0, idx + n, idx), 0, n - 1)


def _axis(axis, rank, what="axis"):
    check(0 <= axis < rank, f"{what} {axis} out of range for rank {rank}")


# ---------------------------------------------------------------- tile / reverse


@nn_op("tile", ["input"], {"repetitions": Ints()}, reference=lambda x, repetitions: np.tile(x, repetitions), dynamic=True)
def tile(input, repetitions):
    """Repeat the input `repetitions[d]` times along each dimension d (WebNN tile)."""
    check(len(repetitions) == input.rank,
          f"repetitions {list(repetitions)} must have {input.rank} entries (the input rank)")
    check(all(r > 0 for r in repetitions), f"repetitions {list(repetitions)} must be positive")
    return input.with_shape([d * r for d, r in zip(input.shape, repetitions)])


@nn_op("reverse", ["input"], {"axes": Ints()}, reference=lambda x, axes: np.flip(x, tuple(axes)).copy(), dynamic=True)
def reverse(input, axes):
    """Reverse the order of the elements along each of `axes`."""
    axes_valid(axes, input.rank)
    return input


def _reverse_seq_ref(x, lengths, batch_axis, sequence_axis):
    out = x.copy()
    for b, n in enumerate(np.asarray(lengths).astype(np.int64)):
        n = int(min(max(n, 0), x.shape[sequence_axis]))
        src = [slice(None)] * x.ndim
        src[batch_axis], src[sequence_axis] = b, slice(0, n)
        out[tuple(src)] = np.flip(x[tuple(src)], axis=sequence_axis - (sequence_axis > batch_axis))
    return out


@nn_op("reverse_sequence", ["input", "lengths"], {"batch_axis": Int(0), "sequence_axis": Int(1)},
       reference=_reverse_seq_ref)
def reverse_sequence(input, lengths, batch_axis, sequence_axis):
    """For each b, reverse the first lengths[b] elements along `sequence_axis` (clamped to its size)."""
    _axis(batch_axis, input.rank, "batch_axis")
    _axis(sequence_axis, input.rank, "sequence_axis")
    check(batch_axis != sequence_axis, "batch_axis and sequence_axis must differ")
    dtype_in(lengths, INDEX_TYPES, "lengths")
    check(lengths.shape == (input.shape[batch_axis],),
          f"lengths must have shape [{input.shape[batch_axis]}], got {list(lengths.shape)}")
    return input


# ---------------------------------------------------------------- gathers


def _gather_elements_ref(x, indices, axis):
    return np.take_along_axis(x, _fix(indices, x.shape[axis]), axis=axis)


@nn_op("gather_elements", ["input", "indices"], {"axis": Int(0)}, reference=_gather_elements_ref, dynamic=True)
def gather_elements(input, indices, axis):
    """out[i..] = input[i.. with dimension `axis` replaced by indices[i..]] (take_along_axis)."""
    dtype_in(indices, INDEX_TYPES, "indices")
    _axis(axis, input.rank)
    check(indices.rank == input.rank, f"indices must have the input rank {input.rank}, got {list(indices.shape)}")
    for d, (a, b) in enumerate(zip(indices.shape, input.shape)):
        if d != axis:
            same_dim(a, b, f"indices shape {list(indices.shape)} must match input shape {list(input.shape)} outside "
                           f"axis {axis}")
    return input.with_shape(indices.shape)


def _gather_nd_ref(x, indices):
    k = indices.shape[-1]
    idx = np.stack([_fix(indices[..., d], x.shape[d]) for d in range(k)], axis=-1)
    return x[tuple(np.moveaxis(idx, -1, 0))]


@nn_op("gather_nd", ["input", "indices"], reference=_gather_nd_ref)
def gather_nd(input, indices):
    """out[i.., j..] = input[indices[i.., :], j..] (ONNX GatherND with batch_dims 0)."""
    dtype_in(indices, INDEX_TYPES, "indices")
    check(indices.rank >= 1, "indices must have rank >= 1")
    k = indices.shape[-1]
    check(1 <= k <= input.rank, f"indices.shape[-1] = {k} must be in 1..{input.rank} (the input rank)")
    return input.with_shape(indices.shape[:-1] + input.shape[k:])


# ---------------------------------------------------------------- scatters


def _combine(reduction, a, b):
    with np.errstate(all="ignore"):
        if reduction == "none":
            return b
        if reduction == "add":
            return a + b
        if reduction == "sub":
            return a - b
        if reduction == "mul":
            return a * b
        if reduction == "div":
            return a / b if a.dtype.kind == "f" else (np.trunc(a / b) if b != 0 else 0)
        return np.maximum(a, b) if reduction == "max" else np.minimum(a, b)


def _scatter_elements_ref(x, indices, updates, axis, reduction):
    out = x.copy()
    idx = _fix(indices, x.shape[axis])
    for u in np.ndindex(*updates.shape):
        p = list(u)
        p[axis] = idx[u]
        out[tuple(p)] = _combine(reduction, out[tuple(p)], updates[u])
    return out


def _scatter_rule(input, updates, reduction):
    same_dtype(input, updates, what="input and updates")
    check(reduction in ("none", "add", "sub", "mul", "max", "min") or input.dtype in dtypes.FLOATS,
          f"reduction 'div' needs a float input, got {input.dtype}")


@nn_op("scatter_elements", ["input", "indices", "updates"],
       {"axis": Int(0), "reduction": Str("none", REDUCTIONS)}, reference=_scatter_elements_ref)
def scatter_elements(input, indices, updates, axis, reduction):
    """A copy of input where each updates[u..] is combined into the element at u.. with dimension `axis`
    replaced by indices[u..] (put_along_axis / ONNX ScatterElements)."""
    dtype_in(indices, INDEX_TYPES, "indices")
    _axis(axis, input.rank)
    check(indices.shape == updates.shape,
          f"indices {list(indices.shape)} and updates {list(updates.shape)} must have the same shape")
    check(indices.rank == input.rank, f"indices must have the input rank {input.rank}, got {list(indices.shape)}")
    check(all(a <= b for d, (a, b) in enumerate(zip(indices.shape, input.shape)) if d != axis),
          f"indices shape {list(indices.shape)} exceeds input shape {list(input.shape)} outside axis {axis}")
    _scatter_rule(input, updates, reduction)
    return input


def _scatter_nd_ref(x, indices, updates, reduction):
    out = x.copy()
    k = indices.shape[-1]
    for u in np.ndindex(*indices.shape[:-1]):
        p = tuple(int(_fix(indices[u][d], x.shape[d])) for d in range(k))
        out[p] = _combine(reduction, out[p], updates[u])
    return out


@nn_op("scatter_nd", ["input", "indices", "updates"], {"reduction": Str("none", REDUCTIONS)},
       reference=_scatter_nd_ref)
def scatter_nd(input, indices, updates, reduction):
    """A copy of input where each slice updates[u..] is combined into input[indices[u.., :]] (ONNX ScatterND)."""
    dtype_in(indices, INDEX_TYPES, "indices")
    check(indices.rank >= 1, "indices must have rank >= 1")
    k = indices.shape[-1]
    check(1 <= k <= input.rank, f"indices.shape[-1] = {k} must be in 1..{input.rank} (the input rank)")
    want = indices.shape[:-1] + input.shape[k:]
    check(updates.shape == want, f"updates must have shape {list(want)}, got {list(updates.shape)}")
    _scatter_rule(input, updates, reduction)
    return input


# ---------------------------------------------------------------- cumsum, top-k


def _cumsum_ref(x, axis, exclusive, reversed):
    y = np.flip(x, axis) if reversed else x
    s = np.cumsum(y, axis=axis, dtype=x.dtype)
    if exclusive:
        s = np.concatenate([np.zeros_like(np.take(s, [0], axis)), np.take(s, range(x.shape[axis] - 1), axis)], axis)
    return np.flip(s, axis).copy() if reversed else s


@nn_op("cumulative_sum", ["input"], {"axis": Int(), "exclusive": Bool(False), "reversed": Bool(False)},
       reference=_cumsum_ref, dynamic=True)
def cumulative_sum(input, axis, exclusive, reversed):
    """Running sum along `axis` (WebNN cumulativeSum): `exclusive` leaves the current element out,
    `reversed` sums from the end. Floats are added in order, one term at a time."""
    _axis(axis, input.rank)
    dtype_in(input, ("float32", "float16", "int32", "uint32", "int64", "uint64"))
    return input


def _top_k_ref(x, k, axis, largest, indices_data_type):
    key = -x if largest else x
    order = np.argsort(key, axis=axis, kind="stable")
    idx = np.take(order, range(k), axis=axis)
    return [np.take_along_axis(x, idx, axis=axis), idx.astype(dtypes.to_numpy(indices_data_type))]


@nn_op("top_k", ["input"], {"k": Int(), "axis": Int(), "largest": Bool(True),
                            "indices_data_type": Str("int32", ("int32", "int64"))},
       reference=_top_k_ref)
def top_k(input, k, axis, largest, indices_data_type):
    """The k largest (or smallest) values along `axis` in sorted order and their indices; equal values
    keep their input order (a stable sort). k = the dimension size is a full (arg)sort."""
    check(input.dtype in ("float32", "float16", "int32", "int64"),
          f"input data type must be one of float32, float16, int32, int64, got {input.dtype}")
    _axis(axis, input.rank)
    check(1 <= k <= input.shape[axis], f"k = {k} must be in 1..{input.shape[axis]} (dimension {axis})")
    shape = list(input.shape)
    shape[axis] = k
    return [input.with_shape(shape), TensorSpec(shape, indices_data_type)]


# ---------------------------------------------------------------- non-maximum suppression


def _iou_center(a, b):
    """IoU of two (x_center, y_center, width, height) boxes, float64."""
    ax1, ay1, ax2, ay2 = a[0] - a[2] / 2, a[1] - a[3] / 2, a[0] + a[2] / 2, a[1] + a[3] / 2
    bx1, by1, bx2, by2 = b[0] - b[2] / 2, b[1] - b[3] / 2, b[0] + b[2] / 2, b[1] + b[3] / 2
    iw = max(0.0, min(ax2, bx2) - max(ax1, bx1))
    ih = max(0.0, min(ay2, by2) - max(ay1, by1))
    inter = iw * ih
    union = a[2] * a[3] + b[2] * b[3] - inter
    return inter / union if union > 0 else 0.0


def _nms_ref(boxes, scores, classes, iou_threshold, score_threshold, max_boxes):
    bsz, n = scores.shape
    idx = np.full((bsz, max_boxes), -1, np.int32)
    count = np.zeros(bsz, np.int32)
    for b in range(bsz):
        order = np.argsort(-scores[b], kind="stable")
        kept = []
        for i in order:
            if not scores[b, i] > score_threshold:
                continue
            if all(_iou_center(boxes[b, i].astype(np.float64), boxes[b, j].astype(np.float64)) <= iou_threshold
                   or (classes is not None and classes[b, i] != classes[b, j]) for j in kept):
                kept.append(i)
        kept = kept[:max_boxes] or [order[0]]
        idx[b, :len(kept)] = kept
        count[b] = len(kept)
    return [idx, count]


@nn_op("non_max_suppression", ["boxes", "scores", "classes?"],
       {"iou_threshold": Float(0.5), "score_threshold": Float(float("-inf")), "max_boxes": Int()},
       reference=_nms_ref)
def non_max_suppression(boxes, scores, classes, iou_threshold, score_threshold, max_boxes):
    """Greedy NMS per batch over boxes [B, N, 4] (x_center, y_center, width, height) with scores [B, N]:
    in descending score order (ties: lower index first), keep a box whose score > score_threshold and
    whose IoU with every kept box (of the same class, when `classes` [B, N] is given) is <=
    iou_threshold. Results: the first max_boxes kept indices [B, max_boxes] (int32, -1 padded) and
    their count [B]; when no box passes, the best-scoring box alone (Core ML's rule)."""
    check(boxes.rank == 3 and boxes.shape[2] == 4, f"boxes must have shape [B, N, 4], got {list(boxes.shape)}")
    check(scores.shape == boxes.shape[:2], f"scores must have shape {list(boxes.shape[:2])}, got {list(scores.shape)}")
    check(boxes.dtype == "float32" and scores.dtype == "float32", "boxes and scores must be float32")
    if classes is not None:
        check(classes.shape == scores.shape and classes.dtype == "int32",
              f"classes must be int32 of shape {list(scores.shape)}, got {classes}")
    check(max_boxes >= 1, f"max_boxes {max_boxes} must be positive")
    bsz = boxes.shape[0]
    return [TensorSpec((bsz, max_boxes), "int32"), TensorSpec((bsz,), "int32")]
