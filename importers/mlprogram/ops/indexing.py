"""MIL gathers and scatters (gather, gather_along_axis, gather_nd, scatter, scatter_along_axis,
scatter_nd; iOS16+ batch_dims of gather and gather_nd), select, band_part, cumsum, one_hot, topk, argsort, sliding_windows,
reverse_sequence.

nn's gathers and scatters count negative indices from the end and clamp the rest (never an
out-of-bounds access), which covers MIL's iOS15/16 negative indices; iOS17's
validate_indices=False leaves out-of-range indices undefined.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from estuary.base import dims
from estuary.importers.mlprogram import symbolic
from estuary.importers.mlprogram.ops import OPS
from estuary.importers.mlprogram.ops.shape import axis_of, is_const, shape_of, transpose
from estuary.importers.mlprogram.symbolic import SymArray

MODES = {"update": "none", "add": "add", "sub": "sub", "mul": "mul", "div": "div", "max": "max", "min": "min"}


def _batch_dims(c: Any, op: Any, x: Any, idx: Any) -> int:
    """batch_dims (iOS16+): the leading axes x and indices share."""
    b = int(c.scalar(op, "batch_dims", 0))
    xs, ids = shape_of(c, x), shape_of(c, idx)
    c.check(0 <= b < len(xs) and b <= len(ids) and xs[:b] == ids[:b],
            f"batch_dims {b} does not fit x {xs} and indices {ids}")
    return b


def index_value(c: Any, v: Any) -> Any:
    """Indices as an nn int32 Value."""
    if is_const(v):
        return c.const(np.asarray(v).astype(np.int32), "int32")
    v = c.value(v)
    return v if c.spec(v).dtype in ("int32", "int64") else c.op("cast", [v], to="int32")


@OPS.op("gather")
def convert_gather(c: Any, op: Any) -> Any:
    x, idx = c.arg(op, "x"), c.arg(op, "indices")
    b = _batch_dims(c, op, x, idx)
    rank = len(shape_of(c, x))
    axis = axis_of(c, int(c.scalar(op, "axis", 0)), rank)
    c.check(axis >= b, f"axis {axis} must not be one of the {b} batch dimensions")
    if b:
        return _batched_gather(c, x, idx, b, axis)
    if is_const(x) and is_const(idx):
        return np.take(x, idx.astype(np.int64), axis=axis)
    if isinstance(x, SymArray) and is_const(idx):  # a dimension of a shape
        return x.map(lambda v: np.take(v, idx.astype(np.int64), axis=axis))
    return c.op("gather", [c.value(x), index_value(c, idx)], axis=axis)


def _flat_offsets(c: Any, idx: Any, batch: int, extent: int) -> Any:
    """Indices [batch, ...] into a flattened [batch * extent] axis: negatives counted from the
    end of their row, then batch row n shifted by n * extent."""
    shape = shape_of(c, idx)
    offsets = (np.arange(batch, dtype=np.int32) * extent).reshape([batch] + [1] * (len(shape) - 1))
    if is_const(idx):
        i = np.asarray(idx).astype(np.int32)
        return c.const(np.where(i < 0, i + extent, i) + offsets, "int32")
    i = index_value(c, idx)
    negative = c.op("lesser", [i, c.const(np.zeros((), np.int32), "int32")])
    i = c.op("where", [negative, c.op("add", [i, c.const(np.asarray(extent, np.int32), "int32")]), i])
    return c.op("add", [i, c.const(offsets, "int32")])


def _batched_gather(c: Any, x: Any, idx: Any, b: int, axis: int) -> Any:
    """gather with batch_dims b: out[B, pre, I, post] = x[B, pre, idx[B, I], post]. The batch
    axes and the gathered axis are merged into one axis of batch * extent rows, gathered once."""
    xs, ids = shape_of(c, x), shape_of(c, idx)
    batch, extent = int(dims.prod(xs[:b])), int(xs[axis])  # offsets are constants: fixed sizes
    pre, post, inner = xs[b:axis], xs[axis + 1:], ids[b:]
    x = c.reshape(c.value(x), [batch] + xs[b:])
    a = 1 + len(pre)  # the gathered axis in x
    x = transpose(c, x, [0, a] + list(range(1, a)) + list(range(a + 1, 2 + len(pre) + len(post))))
    x = c.reshape(x, [batch * extent] + pre + post)
    flat = _flat_offsets(c, c.reshape(c.value(idx), [batch] + inner) if not is_const(idx)
                         else np.asarray(idx).reshape([batch] + inner), batch, extent)
    y = c.op("gather", [x, flat], axis=0)  # [batch, *inner, *pre, *post]
    ni, npre = len(inner), len(pre)
    perm = [0] + list(range(1 + ni, 1 + ni + npre)) + list(range(1, 1 + ni)) + \
        list(range(1 + ni + npre, 1 + ni + npre + len(post)))
    return c.reshape(transpose(c, y, perm), xs[:b] + pre + inner + post)


@OPS.op("gather_along_axis")
def convert_gather_along_axis(c: Any, op: Any) -> Any:
    x = c.x(op)
    axis = axis_of(c, int(c.scalar(op, "axis", 0)), len(shape_of(c, x)))
    return c.op("gather_elements", [x, index_value(c, c.arg(op, "indices"))], axis=axis)


@OPS.op("gather_nd")
def convert_gather_nd(c: Any, op: Any) -> Any:
    """With batch_dims b: out[B, I] = x[B][idx[B, I]]; the batch axes are merged into one and its
    position prepended to every index tuple."""
    x, idx = c.x(op), c.arg(op, "indices")
    b = _batch_dims(c, op, x, idx)
    if not b and not dims.is_static(shape_of(c, x) + shape_of(c, idx)):
        return _gather_nd_flat(c, x, index_value(c, idx))
    if not b:
        return c.op("gather_nd", [x, index_value(c, idx)])
    xs, ids = shape_of(c, x), shape_of(c, idx)
    c.check(len(ids) > b and b + ids[-1] <= len(xs), f"indices {ids} do not fit x {xs} with batch_dims {b}")
    batch = int(dims.prod(xs[:b]))
    x = c.reshape(x, [batch] + xs[b:])
    idx = c.reshape(index_value(c, idx), [batch] + ids[b:])
    rows = np.broadcast_to(np.arange(batch, dtype=np.int32).reshape([batch] + [1] * (len(ids) - b)),
                           [batch] + [int(d) for d in ids[b:-1]] + [1])
    y = c.op("gather_nd", [x, c.op("concat", [[c.const(np.ascontiguousarray(rows), "int32"), idx]],
                                   axis=len(ids) - b)])
    return c.reshape(y, ids[:-1] + xs[b + ids[-1]:])


def _gather_nd_flat(c: Any, x: Any, idx: Any) -> Any:
    """gather_nd with dynamic dimensions (nn.gather_nd takes fixed shapes): each index tuple, its
    entries normalized and clamped per axis as nn's gathers do, becomes a position in x's first k
    axes flattened, read by one gather."""
    xs, ids = shape_of(c, x), shape_of(c, idx)
    k = ids[-1]
    c.check(isinstance(k, int) and 1 <= k <= len(xs), f"indices {ids} do not fit x {xs}")
    lead = ids[:-1]
    idx = idx if c.spec(idx).dtype == "int32" else c.op("cast", [idx], to="int32")
    flat: Any = None
    for j in range(k):
        i = c.reshape(c.op("slice", [idx], starts=[0] * len(lead) + [j], sizes=lead + [1]), lead)
        d = symbolic.dims_tensor(c, [xs[j]], [])
        i = c.op("where", [c.op("lesser", [i, symbolic.dims_tensor(c, [0], [])]), c.op("add", [i, d]), i])
        i = c.op("min", [c.op("max", [i, symbolic.dims_tensor(c, [0], [])]),
                         symbolic.dims_tensor(c, [xs[j] - 1], [])])
        stride = dims.size(xs[j + 1:k])
        if stride != 1:
            i = c.op("mul", [i, symbolic.dims_tensor(c, [stride], [])])
        flat = i if flat is None else c.op("add", [flat, i])
    rows = c.reshape(x, [dims.size(xs[:k])] + xs[k:])
    return c.op("gather", [rows, flat], axis=0)


def _mode(c: Any, op: Any) -> str:
    mode = str(c.val(op, "mode", "add"))
    c.check(mode in MODES, f"unknown scatter mode {mode!r}")
    return MODES[mode]


@OPS.op("scatter")
def convert_scatter(c: Any, op: Any) -> Any:
    """data[..., indices[i], ...] (along axis) combined with updates[..., i, ...]: the axis moved to
    the front, one scatter_nd with indices [N, 1], moved back."""
    data, upd = c.x(op, "data"), c.x(op, "updates")
    idx = index_value(c, c.arg(op, "indices"))
    rank = len(shape_of(c, data))
    axis = axis_of(c, int(c.scalar(op, "axis", 0)), rank)
    c.check(len(shape_of(c, idx)) == 1, f"indices must have rank 1, got {shape_of(c, idx)}")
    perm = [axis] + [i for i in range(rank) if i != axis]
    inv = list(np.argsort(perm))
    y = c.op("scatter_nd", [transpose(c, data, perm), c.reshape(idx, shape_of(c, idx) + [1]),
                            transpose(c, upd, perm)], reduction=_mode(c, op))
    return transpose(c, y, [int(i) for i in inv])


@OPS.op("scatter_along_axis")
def convert_scatter_along_axis(c: Any, op: Any) -> Any:
    data = c.x(op, "data")
    axis = axis_of(c, int(c.scalar(op, "axis", 0)), len(shape_of(c, data)))
    return c.op("scatter_elements", [data, index_value(c, c.arg(op, "indices")), c.x(op, "updates")],
                axis=axis, reduction=_mode(c, op))


@OPS.op("scatter_nd")
def convert_scatter_nd(c: Any, op: Any) -> Any:
    return c.op("scatter_nd", [c.x(op, "data"), index_value(c, c.arg(op, "indices")), c.x(op, "updates")],
                reduction=_mode(c, op))


def truth(c: Any, v: Any) -> Any:
    """A uint8 mask of v != 0."""
    if c.spec(v).dtype == "uint8":
        return v
    zero = c.const(np.zeros((), dtype=np.dtype(c.spec(v).dtype)))
    return c.op("logical_not", [c.op("equal", [v, zero])])


@OPS.op("select")
def convert_select(c: Any, op: Any) -> Any:
    cond, a, b = c.arg(op, "cond"), c.arg(op, "a"), c.arg(op, "b")
    if is_const(cond) and is_const(a) and is_const(b):
        return np.where(cond != 0, a, b)
    if is_const(cond) and symbolic.known(a) and symbolic.known(b):  # shape arithmetic
        return symbolic.make(np.where(cond != 0, symbolic.objects(a), symbolic.objects(b)),
                             np.result_type(a.dtype, b.dtype))
    return c.op("where", [truth(c, c.value(cond)), c.value(a), c.value(b)])


@OPS.op("band_part")
def convert_band_part(c: Any, op: Any) -> Any:
    """Keep j - i <= upper and i - j <= lower on the last two axes (negative: no limit)."""
    x = c.x(op)
    c.check(len(shape_of(c, x)) >= 2, f"x must have rank >= 2, got {shape_of(c, x)}")
    lower, upper = int(c.scalar(op, "lower", -1)), int(c.scalar(op, "upper", -1))
    return c.band(x, lower, upper)


@OPS.op("cumsum")
def convert_cumsum(c: Any, op: Any) -> Any:
    x = c.x(op)
    axis = axis_of(c, int(c.scalar(op, "axis", 0)), len(shape_of(c, x)))
    return c.op("cumulative_sum", [x], axis=axis, exclusive=bool(c.scalar(op, "exclusive", False)),
                reversed=bool(c.scalar(op, "reverse", False)))


@OPS.op("one_hot")
def convert_one_hot(c: Any, op: Any) -> Any:
    """on_value where the index equals the position along the new axis, off_value elsewhere."""
    idx = index_value(c, c.arg(op, "indices"))
    shape = shape_of(c, idx)
    depth = int(c.scalar(op, "one_hot_vector_size"))
    c.check(depth >= 1, f"one_hot_vector_size {depth} must be positive")
    rank = len(shape) + 1
    axis = axis_of(c, int(c.scalar(op, "axis", -1)), rank)
    on, off = np.asarray(c.val(op, "on_value", 1.0)), np.asarray(c.val(op, "off_value", 0.0))
    out = shape[:axis] + [depth] + shape[axis:]
    idx = c.reshape(idx, shape[:axis] + [1] + shape[axis:])
    iota = np.arange(depth, dtype=np.int32).reshape([depth] + [1] * (rank - axis - 1))
    hit = c.op("equal", [idx, c.const(iota, "int32")])
    return c.op("where", [hit, c.value(np.full(out, on.reshape(()), dtype=on.dtype)), c.value(off.reshape(()))])


@OPS.op("topk")
def convert_topk(c: Any, op: Any) -> Any:
    """Always sorted (sort=False leaves the order free, so sorted is one valid order); iOS16+
    return_indices=False returns the values alone; iOS17's uint16 indices are computed as int32."""
    x = c.x(op)
    shape = shape_of(c, x)
    axis = axis_of(c, int(c.scalar(op, "axis", -1)), len(shape))
    k: dims.Value = int(c.scalar(op, "k", 1))
    if k == -1 and c.opset >= 16:
        k = shape[axis]
    c.check(1 <= k <= shape[axis], f"k = {k} is out of range for a dimension of {shape[axis]}")
    ascending = bool(c.scalar(op, "ascending", False))
    values, indices = c.op("top_k", [x], k=k, axis=axis, largest=not ascending)
    return [values, indices] if bool(c.scalar(op, "return_indices", True)) else values


@OPS.op("argsort")
def convert_argsort(c: Any, op: Any) -> Any:
    x = c.x(op)
    shape = shape_of(c, x)
    axis = axis_of(c, int(c.scalar(op, "axis", -1)), len(shape))
    _, indices = c.op("top_k", [x], k=shape[axis], axis=axis, largest=not bool(c.scalar(op, "ascending", False)))
    return indices


@OPS.op("sliding_windows")
def convert_sliding_windows(c: Any, op: Any) -> Any:
    """Windows j*stride .. j*stride + size - 1 along axis, as a new axis after it: a constant gather."""
    x = c.x(op)
    shape = shape_of(c, x)
    axis = axis_of(c, int(c.scalar(op, "axis")), len(shape))
    size, step = int(c.scalar(op, "size")), int(c.scalar(op, "stride", 1))
    c.check(size >= 1 and step >= 1 and size <= shape[axis], f"size {size} / stride {step} do not fit {shape[axis]}")
    m = (shape[axis] - size) // step + 1
    idx = np.arange(m)[:, None] * step + np.arange(size)[None, :]
    return c.op("gather", [x, c.const(idx.astype(np.int32), "int32")], axis=axis)


@OPS.op("reverse_sequence")
def convert_reverse_sequence(c: Any, op: Any) -> Any:
    x = c.x(op)
    rank = len(shape_of(c, x))
    seq = axis_of(c, int(c.scalar(op, "seq_axis", 0)), rank)
    batch = axis_of(c, int(c.scalar(op, "batch_axis", 0)), rank)
    return c.op("reverse_sequence", [x, index_value(c, c.arg(op, "lengths"))], batch_axis=batch, sequence_axis=seq)


@OPS.op("non_maximum_suppression")
def convert_non_maximum_suppression(c: Any, op: Any) -> Any:
    """Greedy NMS (nn.non_max_suppression, Core ML's rule) on boxes [n, B, 4] (x, y, width, height)
    scored by their best class; per-class suppression assigns each box its argmax class. Outputs:
    the kept boxes and scores (0-padded), their indices (-1-padded) and counts, int32."""
    boxes, scores = c.x(op, "boxes"), c.x(op, "scores")
    bs, ss = shape_of(c, boxes), shape_of(c, scores)
    c.check(len(bs) == 3 and bs[2] == 4, f"boxes must have shape [n, B, 4], got {bs}")
    c.check(len(ss) == 3 and ss[:2] == bs[:2], f"scores must have shape [{bs[0]}, {bs[1]}, K], got {ss}")
    m = int(c.scalar(op, "max_boxes"))
    c.check(m >= 1, f"max_boxes {m} must be positive")
    best = c.op("reduce_max", [scores], axes=[2])
    operands = [boxes, best]
    if bool(c.scalar(op, "per_class_suppression", False)) and ss[2] > 1:
        operands.append(c.op("arg_max", [scores], axis=2))
    idx, count = c.op("non_max_suppression", operands, iou_threshold=float(c.scalar(op, "iou_threshold")),
                      score_threshold=float(c.scalar(op, "score_threshold")), max_boxes=m)
    kept = c.reshape(c.op("greater_or_equal", [idx, c.const(np.asarray(0, np.int32), "int32")]), [bs[0], m, 1])
    idx3 = c.reshape(idx, [bs[0], m, 1])

    def pick(data: Any, width: dims.Value) -> Any:
        got = c.op("gather_elements", [data, c.op("expand", [idx3], new_shape=[bs[0], m, width])], axis=1)
        return c.op("where", [kept, got, c.const(np.asarray(0, np.float32))])

    return [pick(boxes, 4), pick(scores, ss[2]), idx, count]
