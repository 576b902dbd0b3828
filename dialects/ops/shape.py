"""nn ops: data movement (WebNN reshape, transpose, concat, slice, split, pad, expand, gather,
triangular — §7.7.9, 16, 17, 31, 37, 39, 43, 45, 46). All dtypes; results are exact copies."""
from collections.abc import Sequence
import math

import numpy as np

from estuary.base import dims, dtypes
from estuary.dialects.core import (Bool, DType, Float, Int, Ints, Shape, Str, TensorSpec, axes_valid, check,
                                   dtype_in, nn_op, same_dim, same_dtype, unidirectional_broadcastable)

MAX_DIM = (1 << 31) - 1


def _valid_shape(shape, what="output shape"):
    check(all(0 < dims.upper(d) <= MAX_DIM and (isinstance(d, dims.Dim) or d > 0) for d in shape),
          f"{what} {list(shape)} has an invalid dimension")


def _within(start, size, dim, what):
    """VerificationError unless 0 <= start and start + size <= dim for every value of the symbols."""
    slack = dim - start - size
    check(dims.lower(start) >= 0 and dims.lower(slack) >= 0, f"window {start}..{start + size} of {what} exceeds "
                                                              f"its size {dim}")


@nn_op("reshape", ["input"], {"new_shape": Shape()}, reference=lambda x, new_shape: x.reshape(new_shape),
       dynamic=True)
def reshape(input, new_shape):
    """Same elements, new shape (explicit dimensions; no 0 or -1 placeholders). Dynamic dimensions
    are expressions of the input's symbols with the same element count."""
    _valid_shape(new_shape, "new_shape")
    size = dims.size(new_shape)
    check(size == input.size, f"new_shape {list(new_shape)} has {size} elements, the input has {input.size}")
    return input.with_shape(new_shape)


def _perm(rank, permutation):
    return list(range(rank))[::-1] if permutation is None else permutation


@nn_op("transpose", ["input"], {"permutation": Ints(None)},
       reference=lambda x, permutation: np.transpose(x, _perm(x.ndim, permutation)), dynamic=True)
def transpose(input, permutation):
    """Permute dimensions (default: reverse them)."""
    perm = _perm(input.rank, permutation)
    check(len(perm) == input.rank, f"permutation {perm} must have {input.rank} entries")
    axes_valid(perm, input.rank, "permutation")
    return input.with_shape([input.shape[p] for p in perm])


@nn_op("concat", ["inputs*"], {"axis": Int()},
       reference=lambda xs, axis: np.concatenate(xs, axis=axis), dynamic=True)
def concat(inputs: Sequence[TensorSpec], axis: int) -> TensorSpec:
    """Join tensors along `axis`; other dimensions must match."""
    check(len(inputs) > 0, "needs at least one input")
    first = inputs[0]
    check(0 <= axis < first.rank, f"axis {axis} out of range for rank {first.rank}")
    same_dtype(*inputs, what="inputs")
    check(all(t.rank == first.rank for t in inputs),
          f"inputs must all have the same rank, got shapes {[list(t.shape) for t in inputs]}")
    shape = list(first.shape)
    for t in inputs:
        for i, d in enumerate(t.shape):
            if i != axis:
                shape[i] = same_dim(shape[i], d, f"input shapes {[list(t.shape) for t in inputs]} differ outside "
                                                 f"axis {axis}")
    total: dims.Value = 0
    for t in inputs:
        total = total + t.shape[axis]
    shape[axis] = total
    _valid_shape(shape)
    return first.with_shape(shape)


def _slice_ref(x, starts, sizes, strides=None):
    steps = strides or [1] * x.ndim
    return x[tuple(slice(s, s + n, k) for s, n, k in zip(starts, sizes, steps))].copy()


@nn_op("slice", ["input"], {"starts": Shape(), "sizes": Shape(), "strides": Ints(None)}, reference=_slice_ref,
       dynamic=True)
def slice_(input, starts, sizes, strides):
    """Every strides[i]-th element (default 1) of the window starts[i] .. starts[i] + sizes[i] of each
    dimension: ceil(sizes[i] / strides[i]) elements (WebNN slice). Starts and sizes may be
    expressions of the input's symbols; the window must fit for every value they can take."""
    check(len(starts) == input.rank and len(sizes) == input.rank,
          f"starts and sizes must have {input.rank} entries, got {len(starts)} and {len(sizes)}")
    steps = [1] * input.rank if strides is None else list(strides)
    check(len(steps) == input.rank, f"strides must have {input.rank} entries, got {len(steps)}")
    for d, (s, n, dim, k) in enumerate(zip(starts, sizes, input.shape, steps)):
        check(dims.upper(n) > 0 and (isinstance(n, dims.Dim) or n > 0), f"sizes[{d}] must be positive, got {n}")
        check(k > 0, f"strides[{d}] must be positive, got {k}")
        _within(s, n, dim, f"dimension {d}")
    return input.with_shape([dims.ceil_div(n, k) for n, k in zip(sizes, steps)])


def _split_ref(x, splits, axis):
    return np.split(x, np.cumsum(splits)[:-1], axis=axis)


@nn_op("split", ["input"], {"splits": Ints(), "axis": Int(0)}, reference=_split_ref, dynamic=True)
def split(input, splits, axis):
    """Cut along `axis` into pieces of the given sizes (a list of results)."""
    check(0 <= axis < input.rank, f"axis {axis} out of range for rank {input.rank}")
    check(len(splits) > 0, "splits must not be empty")
    check(all(s > 0 for s in splits), f"splits {list(splits)} must be positive")
    check(sum(splits) == input.shape[axis],
          f"splits {list(splits)} sum to {sum(splits)}, dimension {axis} has size {input.shape[axis]}")
    outs = []
    for s in splits:
        shape = list(input.shape)
        shape[axis] = s
        outs.append(input.with_shape(shape))
    return outs


PAD_MODES = ("constant", "edge", "reflection", "symmetric")
_NUMPY_PAD = {"edge": "edge", "reflection": "reflect", "symmetric": "symmetric"}


def cast_number(value, dtype):
    """The spec's "cast a number" (§8.2) of a pad value to the input's dtype: floats round to
    nearest even (overflowing to infinity); integers round half to even and clamp to the type's
    range, NaN giving 0 (uint32 is read as unsigned: "signed" there is a typo in the spec)."""
    np_type = dtypes.to_numpy(dtype)
    if dtype in dtypes.FLOATS:
        with np.errstate(over="ignore"):
            return np_type.type(value)
    if value != value:
        return np_type.type(0)
    info = np.iinfo(np_type)
    if math.isinf(value):
        return np_type.type(info.max if value > 0 else info.min)
    return np_type.type(min(max(round(value), int(info.min)), int(info.max)))


def _pad_ref(x, beginning_padding, ending_padding, mode, value):
    widths = list(zip(beginning_padding, ending_padding))
    if mode == "constant":
        return np.pad(x, widths, constant_values=cast_number(value, dtypes.from_numpy(x.dtype)))
    return np.pad(x, widths, mode=_NUMPY_PAD[mode])


@nn_op("pad", ["input"], {"beginning_padding": Ints(), "ending_padding": Ints(),
                          "mode": Str("constant", PAD_MODES), "value": Float(0.0)},
       reference=_pad_ref, dynamic=True)
def pad(input, beginning_padding, ending_padding, mode, value):
    """Pad each dimension with `value` (cast to the input's dtype), its edge value, or a mirror
    image: reflection excludes the edge, symmetric repeats it. Mirror padding larger than the
    dimension keeps reflecting back and forth (numpy.pad's rule; this spec sets no limit)."""
    check(len(beginning_padding) == input.rank and len(ending_padding) == input.rank,
          f"beginning_padding and ending_padding must have {input.rank} entries, "
          f"got {len(beginning_padding)} and {len(ending_padding)}")
    check(all(p >= 0 for p in list(beginning_padding) + list(ending_padding)),
          f"paddings {list(beginning_padding)} and {list(ending_padding)} must be non-negative")
    shape = [b + n + e for b, n, e in zip(beginning_padding, input.shape, ending_padding)]
    _valid_shape(shape)
    return input.with_shape(shape)


@nn_op("expand", ["input"], {"new_shape": Shape()},
       reference=lambda x, new_shape: np.broadcast_to(x, new_shape).copy(), dynamic=True)
def expand(input, new_shape):
    """Broadcast to `new_shape` (the input must be unidirectionally broadcastable to it)."""
    _valid_shape(new_shape, "new_shape")
    check(unidirectional_broadcastable(input.shape, new_shape),
          f"input shape {list(input.shape)} is not broadcastable to {list(new_shape)}")
    return input.with_shape(new_shape)


INDEX_TYPES = ("int32", "uint32", "int64")


def _gather_ref(x, indices, axis):
    n = x.shape[axis]
    idx = indices.astype(np.int64)
    idx = np.clip(np.where(idx < 0, idx + n, idx), 0, n - 1)
    return np.take(x, idx, axis=axis)


@nn_op("gather", ["input", "indices"], {"axis": Int(0)}, reference=_gather_ref, dynamic=True)
def gather(input, indices, axis):
    """input[..., indices, ...] along `axis`; negative indices count from the end, out-of-range
    indices are clamped (never read out of bounds)."""
    dtype_in(indices, INDEX_TYPES, "indices")
    check(0 <= axis < input.rank, f"axis {axis} out of range for rank {input.rank}")
    shape = list(input.shape[:axis]) + list(indices.shape) + list(input.shape[axis + 1:])
    return input.with_shape(shape)


def _tri_ref(x, upper, diagonal):
    rows, cols = x.shape[-2], x.shape[-1]
    i, j = np.indices((rows, cols))
    keep = (j - i >= diagonal) if upper else (j - i <= diagonal)
    return np.where(keep, x, np.zeros((), x.dtype))


@nn_op("triangular", ["input"], {"upper": Bool(True), "diagonal": Int(0)}, reference=_tri_ref, dynamic=True)
def triangular(input, upper, diagonal):
    """Keep the upper (j - i >= diagonal) or lower (j - i <= diagonal) part of the last two dims."""
    check(input.rank >= 2, f"input must be of rank >= 2, got shape {list(input.shape)}")
    return input


def _dims_value_ref(values, dtype):
    return np.asarray([int(v) for v in values], dtype=dtypes.to_numpy(dtype))  # int(Dim) fails: not a constant


@nn_op("dims_value", [], {"values": Shape(), "dtype": DType("int32", INDEX_TYPES[::2])}, reference=_dims_value_ref,
       dynamic=True)
def dims_value(values, dtype):
    """The dimensions `values` (ints and expressions of the function's symbols) as run-time data: a
    vector [len(values)] of `dtype`. Importers use it where a model computes with its input sizes
    (a key/value cache written at the position `past = total - new`, a range up to a length)."""
    check(len(values) > 0, "values must not be empty")
    return TensorSpec([len(values)], dtype)
