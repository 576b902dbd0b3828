"""Slices at run-time positions (a key/value cache written at the token's position): the
`begin` of slice_by_index, slice_by_size and slice_update is a graph value (or an expression of
dynamic dimensions, symbolic.py: `total - new` in a decoder with a RangeDim query), the window's
sizes are the declared result, `size`, or the update's shape (which may be dynamic: a window of
the query's length).

Per axis the window starts at begin[i] (negative counts from the end, as in Python slicing), then
clamped so the whole static window stays inside the axis: MIL leaves a window that does not fit
undefined, and a compiled model must never read or write out of bounds. An axis whose clamped
start can only be one value (a full axis) needs no run-time index.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from estuary.base import dims
from estuary.base.dims import Dim
from estuary.importers.coreml.nd import constant_array
from estuary.importers.mlprogram import symbolic


def runtime_begin(c: Any, op: Any, key: str = "begin") -> Any:
    """The op's `begin` as an int32 nn Value when it is not a constant, else None."""
    v = c.arg(op, key)
    if isinstance(v, np.ndarray) or (not symbolic.known(v) and constant_array(v) is not None):
        return None
    v = c.value(v)  # a SymArray becomes run-time data
    return v if c.spec(v).dtype == "int32" else c.op("cast", [v], to="int32")


def _i32(c: Any, v: dims.Value) -> Any:
    return symbolic.dims_tensor(c, [v])


def axis_indices(c: Any, begin: Any, axis: int, dim: dims.Value, size: dims.Value, stride: int, masked: bool) -> Any:
    """The `size` indices along `axis` of the window: a numpy array when they are fixed, else an
    int32 nn Value of shape [size]. A dynamic size or axis must fit for every value they take."""
    c.check(stride != 0, f"stride[{axis}] must not be 0")
    c.check(dims.upper(size) >= 1, f"the slice of axis {axis} is empty")
    span = (size - 1) * abs(stride)
    room = dim - 1 - span  # the largest start (stride > 0) that keeps the window inside
    c.check(dims.lower(room) >= 0, f"a window of {size} with stride {stride} does not fit axis {axis} of size "
                                   f"{dim}" + ("" if dims.is_static([room]) else " for every size its inputs may have"))
    lo, hi = (0, room) if stride > 0 else (span, dim - 1)
    steps: Any = stride * np.arange(size, dtype=np.int32) if isinstance(size, int) else symbolic.iota(c, size)
    if not isinstance(steps, np.ndarray) and stride != 1:
        steps = c.op("mul", [steps, _i32(c, stride)])
    if masked or lo == hi:
        start = (0 if stride > 0 else dim - 1) if masked else lo
        if isinstance(start, int) and isinstance(steps, np.ndarray):
            return start + steps
        return c.op("add", [_i32(c, start), c.value(steps) if isinstance(steps, np.ndarray) else steps])
    b = c.op("slice", [begin], starts=[axis], sizes=[1])
    b = c.op("where", [c.op("lesser", [b, _i32(c, 0)]), c.op("add", [b, _i32(c, dim)]), b])
    b = c.op("min", [c.op("max", [b, _i32(c, lo)]), _i32(c, hi)])
    return c.op("add", [b, c.const(steps, "int32") if isinstance(steps, np.ndarray) else steps])


def window(c: Any, begin: Any, shape: list[dims.Value], sizes: list[dims.Value], strides: list[int],
           masked: list[bool]) -> list[Any]:
    return [axis_indices(c, begin, i, d, n, s, m) for i, (d, n, s, m) in enumerate(zip(shape, sizes, strides, masked))]


def gather_window(c: Any, x: Any, indices: list[Any], shape: list[dims.Value]) -> Any:
    """x read at the window `indices` (one gather per axis that is not whole)."""
    for axis, idx in enumerate(indices):
        if isinstance(idx, np.ndarray):
            if isinstance(shape[axis], int) and list(idx) == list(range(shape[axis])):
                continue
            idx = c.const(idx.astype(np.int32), "int32")
        x = c.op("gather", [x, idx], axis=axis)
    return x


def scatter_window(c: Any, x: Any, update: Any, indices: list[Any], strides: list[int]) -> Any:
    """x with the window `indices` replaced by `update` (of the window's shape, any rank).

    Per axis that the window does not cover whole, the update is spread over the axis by a gather
    (position p takes window element (p - start) / stride, clamped) and a mask marks the positions
    the window holds; one `where` then picks the update or x. That costs O(x's size) per such axis,
    where a scatter_nd of the window's coordinates costs O(x's size x window size)."""
    shape = list(c.spec(x).shape)
    rank = len(shape)
    sizes = [len(i) if isinstance(i, np.ndarray) else c.spec(i).shape[0] for i in indices]
    spread, mask = c.reshape(c.value(update), sizes), None
    for axis, (idx, dim, n, stride) in enumerate(zip(indices, shape, sizes, strides)):
        if isinstance(idx, np.ndarray) and isinstance(dim, int) and list(idx) == list(range(dim)):
            continue
        c.check(isinstance(dim, int), f"cannot write a window into the dynamic dimension {dim} (axis {axis})")
        if isinstance(idx, np.ndarray):
            where_in = np.full(dim, -1, np.int64)
            where_in[idx] = np.arange(n)
            inside = c.const((where_in >= 0).astype(np.uint8), "uint8")
            take = c.const(np.maximum(where_in, 0).astype(np.int32), "int32")
        else:
            i32 = lambda v: c.const(np.asarray(v, np.int32), "int32")  # noqa: E731
            start = c.op("slice", [idx], starts=[0], sizes=[1])
            # r: how far position p lies from the start in the stride's direction
            r = c.op("sub", [i32(np.arange(dim)), start])
            if stride < 0:
                r = c.op("mul", [r, i32([-1])])
            step = abs(stride)
            inside = c.op("logical_and", [c.op("greater_or_equal", [r, i32([0])]),
                                          c.op("lesser", [r, _i32(c, n * step)])])
            k = r if step == 1 else c.op("div", [r, i32([step])])
            if step != 1:
                inside = c.op("logical_and", [inside, c.op("equal", [c.op("mul", [k, i32([step])]), r])])
            take = c.op("min", [c.op("max", [k, i32([0])]), _i32(c, n - 1)])
        spread = c.op("gather", [spread, take], axis=axis)
        along = [1] * rank
        along[axis] = dim
        inside = c.reshape(inside, along)
        mask = inside if mask is None else c.op("logical_and", [mask, inside])
    if mask is None:  # the window is all of x
        return spread
    return c.op("where", [mask, spread, x])
