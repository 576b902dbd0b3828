"""Core ML ND layers: tile, stack, gathers and scatters, reverse(Seq), slidingWindows, topK, argMin/Max,
argSort, cumSum, oneHot, whereNonZero, matrixBandPart, lower/upperTriangular, whereBroadcastable, copy.

Core ML tensors hold floats: index inputs are converted to int32 (they hold integers), index results
(argMin/argMax/argSort/topK indices) are returned as float32 values. Negative indices count from the
end of their dimension; out-of-range indices are clamped (the spec leaves them undefined). Scatter
modes combine the updates in row-major order, so duplicate indices accumulate. Layer inputs that
give a shape, K, reps or axis must be compile-time constants (data-dependent shapes are refused).
"""
import numpy as np

from estuary.importers.coreml.nd import at_least_1d, axis_of, constant_input, truth
from estuary.importers.coreml.ops import OPS


MODES = {0: "none", 1: "add", 2: "sub", 3: "mul", 4: "div", 5: "max", 6: "min"}


def _shape(c, v):
    return list(c.spec(v).shape)


def as_index(c, v):
    """An index tensor as int32 (Core ML passes indices as float values)."""
    return v if c.spec(v).dtype == "int32" else c.op("cast", [v], to="int32")


def as_float(c, v):
    return c.op("cast", [v], to="float32")


def _mode(c, mode):
    c.check(int(mode) in MODES, f"unknown scatter mode {int(mode)}")
    return MODES[int(mode)]


def _int_values(c, layer, k, what):
    a = np.asarray(constant_input(c, layer, k, what), dtype=np.float64).reshape(-1)
    c.check(np.all(a == np.round(a)), f"{what} {a.tolist()} must hold integers")
    return [int(v) for v in a]


@OPS.op("tile")
def convert_tile(c, layer):
    """reps from the parameter (ones prepended up to the rank) or the constant second input."""
    x = c.input(layer)
    rank = len(_shape(c, x))
    reps = _int_values(c, layer, 1, "reps") if len(layer.input) > 1 else [int(r) for r in layer.tile.reps]
    c.check(1 <= len(reps) <= rank, f"reps {reps} must have 1..{rank} entries (the input rank)")
    reps = [1] * (rank - len(reps)) + reps
    c.check(all(r > 0 for r in reps), f"reps {reps} must be positive")
    return x if all(r == 1 for r in reps) else c.op("tile", [x], repetitions=reps)


@OPS.op("stack")
def convert_stack(c, layer):
    xs = c.inputs(layer)
    shape = _shape(c, xs[0])
    c.check(all(_shape(c, x) == shape for x in xs), f"inputs must have the same shape, got "
            f"{[_shape(c, x) for x in xs]}")
    axis = axis_of(c, int(layer.stack.axis), len(shape) + 1)
    new = shape[:axis] + [1] + shape[axis:]
    parts = [c.op("reshape", [x], new_shape=new) for x in xs]
    return parts[0] if len(parts) == 1 else c.op("concat", [parts], axis=axis)


@OPS.op("gather")
def convert_gather(c, layer):
    x, idx = c.input(layer), as_index(c, c.input(layer, 1))
    axis = axis_of(c, int(layer.gather.axis), len(_shape(c, x)))
    return at_least_1d(c, c.op("gather", [x, idx], axis=axis))


@OPS.op("scatter")
def convert_scatter(c, layer):
    """output[..., indices[i], ...] (on `axis`) op= updates[..., i, ...]: updates have the shape
    data.shape[:axis] + indices.shape + data.shape[axis + 1:], done as scatter_elements with the
    indices broadcast over the other dimensions."""
    x, idx, upd = c.input(layer), as_index(c, c.input(layer, 1)), c.input(layer, 2)
    shape, ishape = _shape(c, x), _shape(c, idx)
    axis = axis_of(c, int(layer.scatter.axis), len(shape))
    n = int(np.prod(ishape))
    want = shape[:axis] + ishape + shape[axis + 1:]
    c.check(_shape(c, upd) == want, f"updates must have shape {want}, got {_shape(c, upd)}")
    flat = shape[:axis] + [n] + shape[axis + 1:]
    upd = c.op("reshape", [upd], new_shape=flat)
    idx = c.op("reshape", [idx], new_shape=[1] * axis + [n] + [1] * (len(shape) - axis - 1))
    if flat != _shape(c, idx):
        idx = c.op("expand", [idx], new_shape=flat)
    return c.op("scatter_elements", [x, idx, upd], axis=axis, reduction=_mode(c, layer.scatter.mode))


@OPS.op("gatherND")
def convert_gather_nd(c, layer):
    return at_least_1d(c, c.op("gather_nd", [c.input(layer), as_index(c, c.input(layer, 1))]))


@OPS.op("scatterND")
def convert_scatter_nd(c, layer):
    x, idx, upd = c.input(layer), as_index(c, c.input(layer, 1)), c.input(layer, 2)
    return c.op("scatter_nd", [x, idx, upd], reduction=_mode(c, layer.scatterND.mode))


@OPS.op("gatherAlongAxis")
def convert_gather_along_axis(c, layer):
    x, idx = c.input(layer), as_index(c, c.input(layer, 1))
    axis = axis_of(c, int(layer.gatherAlongAxis.axis), len(_shape(c, x)))
    return c.op("gather_elements", [x, idx], axis=axis)


@OPS.op("scatterAlongAxis")
def convert_scatter_along_axis(c, layer):
    p = layer.scatterAlongAxis
    x, idx, upd = c.input(layer), as_index(c, c.input(layer, 1)), c.input(layer, 2)
    axis = axis_of(c, int(p.axis), len(_shape(c, x)))
    return c.op("scatter_elements", [x, idx, upd], axis=axis, reduction=_mode(c, p.mode))


@OPS.op("reverse")
def convert_reverse(c, layer):
    x = c.input(layer)
    rank = len(_shape(c, x))
    flags = list(layer.reverse.reverseDim)
    c.check(len(flags) == rank, f"reverseDim has {len(flags)} entries, the input rank is {rank}")
    axes = [d for d, f in enumerate(flags) if f]
    return c.op("reverse", [x], axes=axes) if axes else c.op("identity", [x])


@OPS.op("reverseSeq")
def convert_reverse_seq(c, layer):
    p = layer.reverseSeq
    x, lengths = c.input(layer), as_index(c, c.input(layer, 1))
    rank = len(_shape(c, x))
    b, s = axis_of(c, int(p.batchAxis), rank, "batchAxis"), axis_of(c, int(p.sequenceAxis), rank, "sequenceAxis")
    if len(_shape(c, lengths)) != 1:
        lengths = c.op("reshape", [lengths], new_shape=[int(np.prod(_shape(c, lengths)))])
    return c.op("reverse_sequence", [x, lengths], batch_axis=b, sequence_axis=s)


@OPS.op("slidingWindows")
def convert_sliding_windows(c, layer):
    """Windows j*step .. j*step + W - 1 of `axis`, j < M = (L - W) // step + 1: a constant gather."""
    p = layer.slidingWindows
    x = c.input(layer)
    shape = _shape(c, x)
    axis = axis_of(c, int(p.axis), len(shape))
    size, step, length = int(p.windowSize), int(p.step), shape[axis]
    c.check(size >= 1 and step >= 1, f"windowSize {size} and step {step} must be positive")
    c.check(size <= length, f"windowSize {size} exceeds the length {length} of axis {axis}")
    m = (length - size) // step + 1
    idx = np.arange(m)[:, None] * step + np.arange(size)[None, :]
    return c.op("gather", [x, c.const(idx.astype(np.int32))], axis=axis)


def _k_value(c, layer):
    if len(layer.input) > 1:
        k = _int_values(c, layer, 1, "K")
        c.check(len(k) == 1, f"K must be a scalar, got {k}")
        return k[0]
    return int(layer.topK.K)


@OPS.op("topK")
def convert_top_k(c, layer):
    p = layer.topK
    x = c.input(layer)
    shape = _shape(c, x)
    axis = axis_of(c, int(p.axis), len(shape))
    k = _k_value(c, layer)
    c.check(1 <= k <= shape[axis], f"K = {k} must be in 1..{shape[axis]} (the size of axis {axis})")
    values, indices = c.op("top_k", [x], k=k, axis=axis, largest=not p.useBottomK)
    return [values, as_float(c, indices)]


def _arg(nn_name, kind):
    @OPS.op(kind)
    def convert(c, layer):
        p = getattr(layer, kind)
        x = c.input(layer)
        axis = axis_of(c, int(p.axis), len(_shape(c, x)))
        y = c.op(nn_name, [x], axis=axis, keep_dimensions=not p.removeDim)
        return at_least_1d(c, as_float(c, y))
    convert.__name__ = f"convert_{kind}"
    return convert


_arg("arg_max", "argMax")


_arg("arg_min", "argMin")


@OPS.op("argSort")
def convert_arg_sort(c, layer):
    """A full stable sort (equal values keep their order) by top_k with k = the axis size."""
    p = layer.argSort
    x = c.input(layer)
    shape = _shape(c, x)
    axis = axis_of(c, int(p.axis), len(shape))
    _, indices = c.op("top_k", [x], k=shape[axis], axis=axis, largest=bool(p.descending))
    return as_float(c, indices)


@OPS.op("cumSum")
def convert_cum_sum(c, layer):
    """axis from the parameter or the constant second input; excludeFinalSum = exclusive."""
    p = layer.cumSum
    x = c.input(layer)
    rank = len(_shape(c, x))
    axis = _int_values(c, layer, 1, "axis")[0] if len(layer.input) > 1 else int(p.axis)
    axis = axis_of(c, axis, rank)
    return c.op("cumulative_sum", [x], axis=axis, exclusive=bool(p.excludeFinalSum), reversed=bool(p.reverse))


@OPS.op("oneHot")
def convert_one_hot(c, layer):
    """onValue where index == position along the new `axis` (size oneHotVectorSize, or the constant
    second input), offValue elsewhere; negative or out-of-range indices give all offValue."""
    p = layer.oneHot
    idx = c.input(layer)
    shape = _shape(c, idx)
    depth = _int_values(c, layer, 1, "oneHotVectorSize")[0] if len(layer.input) > 1 else int(p.oneHotVectorSize)
    c.check(depth >= 1, f"oneHotVectorSize {depth} must be positive")
    rank = len(shape) + 1
    axis = axis_of(c, int(p.axis), rank)
    out = shape[:axis] + [depth] + shape[axis:]
    idx = c.op("reshape", [as_float(c, idx)], new_shape=shape[:axis] + [1] + shape[axis:])
    iota = np.arange(depth, dtype=np.float32).reshape([depth] + [1] * (rank - axis - 1))
    hit = c.op("equal", [idx, c.const(iota)])
    on = c.const(np.full(out, np.float32(p.onValue), np.float32))
    off = c.const(np.float32(p.offValue))
    return c.op("where", [hit, on, off])


@OPS.op("whereNonZero")
def convert_where_non_zero(c, layer):
    """Coordinates of the non-zero elements, [N, rank] (float): only for an input computed from
    constants (the result's shape depends on the data)."""
    from estuary.importers.coreml.ops.control import fold

    value = fold(c.input(layer))
    c.check(value is not None, f"the input '{layer.input[0]}' must be a compile-time constant: whereNonZero "
            f"has a data-dependent output shape")
    coords = np.argwhere(value != 0)
    c.check(coords.shape[0] > 0, "the input has no non-zero element (an empty result is not supported)")
    return c.const(coords.astype(np.float32))


def _band(c, x, lower, upper):
    """Keep j - i <= upper (unless upper < 0) and i - j <= lower (unless lower < 0)."""
    c.check(len(_shape(c, x)) >= 2, f"input must have rank >= 2, got shape {_shape(c, x)}")
    return c.band(x, lower, upper)


@OPS.op("matrixBandPart")
def convert_matrix_band_part(c, layer):
    p = layer.matrixBandPart
    return _band(c, c.input(layer), int(p.numLower), int(p.numUpper))


@OPS.op("lowerTriangular")
def convert_lower_triangular(c, layer):
    x = c.input(layer)
    c.check(len(_shape(c, x)) >= 2, f"input must have rank >= 2, got shape {_shape(c, x)}")
    return c.op("triangular", [x], upper=False, diagonal=int(layer.lowerTriangular.k))


@OPS.op("upperTriangular")
def convert_upper_triangular(c, layer):
    x = c.input(layer)
    c.check(len(_shape(c, x)) >= 2, f"input must have rank >= 2, got shape {_shape(c, x)}")
    return c.op("triangular", [x], upper=True, diagonal=int(layer.upperTriangular.k))


@OPS.op("whereBroadcastable")
def convert_where_broadcastable(c, layer):
    """input[1] where input[0] != 0, else input[2] (bidirectional broadcasting)."""
    cond, a, b = c.inputs(layer)
    return c.op("where", [truth(c, cond), a, b])


@OPS.op("copy")
def convert_copy(c, layer):
    return c.op("identity", [c.input(layer)])


def _optional_scalar(c, layer, k, default, what):
    if len(layer.input) > k and layer.input[k]:
        v = np.asarray(constant_input(c, layer, k, what), dtype=np.float64).reshape(-1)
        c.check(v.size == 1, f"{what} (input {k}) must hold one value, got {v.size}")
        return float(v[0])
    return default


@OPS.op("NonMaximumSuppression")
def convert_nms(c, layer):
    """Greedy NMS (nn.non_max_suppression) on boxes (B, N, 4) (x, y, width, height) and the max
    class score of each box; per-class suppression assigns each box its argmax class. Outputs:
    boxes and scores of the kept boxes (0-padded), their indices (-1-padded) and counts, as float.
    The optional threshold / maxBoxes inputs must be constants. A box is kept when its score is
    above scoreThreshold and its IoU with every kept box is at most iouThreshold."""
    p = layer.NonMaximumSuppression
    boxes, scores = c.input(layer), c.input(layer, 1)
    bs, ss = _shape(c, boxes), _shape(c, scores)
    c.check(len(bs) == 3 and bs[2] == 4, f"boxes must have shape (B, N, 4), got {bs}")
    c.check(len(ss) == 3 and ss[:2] == bs[:2], f"scores must have shape ({bs[0]}, {bs[1]}, C), got {ss}")
    iou = _optional_scalar(c, layer, 2, float(np.float32(p.iouThreshold)), "iouThreshold")
    thr = _optional_scalar(c, layer, 3, float(np.float32(p.scoreThreshold)), "scoreThreshold")
    m = int(_optional_scalar(c, layer, 4, float(p.maxBoxes), "maxBoxes"))
    c.check(m >= 1, f"maxBoxes {m} must be positive")
    boxes, scores = [v if c.spec(v).dtype == "float32" else c.op("cast", [v], to="float32") for v in (boxes, scores)]
    best = c.op("reduce_max", [scores], axes=[2])
    operands = [boxes, best]
    if p.perClassSuppression and ss[2] > 1:
        operands.append(c.op("arg_max", [scores], axis=2))
    idx, count = c.op("non_max_suppression", operands, iou_threshold=iou, score_threshold=thr, max_boxes=m)
    kept = c.op("greater_or_equal", [idx, c.const(np.int32(0))])
    kept3 = c.op("reshape", [kept], new_shape=[bs[0], m, 1])
    idx3 = c.op("reshape", [idx], new_shape=[bs[0], m, 1])

    def pick(data, width):
        ix = c.op("expand", [idx3], new_shape=[bs[0], m, width])
        got = c.op("gather_elements", [data, ix], axis=1)
        return c.op("where", [kept3, got, c.const(np.float32(0))])

    return [pick(boxes, 4), pick(scores, ss[2]), as_float(c, idx), as_float(c, count)]
