"""Slices at run-time positions (a key/value cache written at the token's position): the
`begin` of slice_by_index, slice_by_size and slice_update is a graph value, the window's sizes
are static (the declared result, `size`, or the update's shape).

Per axis the window starts at begin[i] (negative counts from the end, as in Python slicing), then
clamped so the whole static window stays inside the axis: MIL leaves a window that does not fit
undefined, and a compiled model must never read or write out of bounds. An axis whose clamped
start can only be one value (a full axis) needs no run-time index.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from estuary.importers.coreml.nd import constant_array


def runtime_begin(c: Any, op: Any, key: str = "begin") -> Any:
    """The op's `begin` as an int32 nn Value when it is not known at import, else None."""
    v = c.arg(op, key)
    if isinstance(v, np.ndarray) or constant_array(v) is not None:
        return None
    return v if c.spec(v).dtype == "int32" else c.op("cast", [v], to="int32")


def axis_indices(c: Any, begin: Any, axis: int, dim: int, size: int, stride: int, masked: bool) -> Any:
    """The `size` indices along `axis` of the window: a numpy array when they are fixed, else an
    int32 nn Value of shape [size]."""
    c.check(stride != 0, f"stride[{axis}] must not be 0")
    c.check(size >= 1, f"the slice of axis {axis} is empty")
    span = (size - 1) * abs(stride)
    c.check(span < dim, f"a window of {size} with stride {stride} does not fit axis {axis} of size {dim}")
    lo, hi = (0, dim - 1 - span) if stride > 0 else (span, dim - 1)
    steps = stride * np.arange(size, dtype=np.int32)
    if masked or lo == hi:
        start = (0 if stride > 0 else dim - 1) if masked else lo
        return start + steps
    i32 = lambda v: c.const(np.asarray([v], np.int32), "int32")  # noqa: E731
    b = c.op("slice", [begin], starts=[axis], sizes=[1])
    b = c.op("where", [c.op("lesser", [b, i32(0)]), c.op("add", [b, i32(dim)]), b])
    b = c.op("min", [c.op("max", [b, i32(lo)]), i32(hi)])
    return c.op("add", [b, c.const(steps, "int32")])


def window(c: Any, begin: Any, shape: list[int], sizes: list[int], strides: list[int],
           masked: list[bool]) -> list[Any]:
    return [axis_indices(c, begin, i, d, n, s, m) for i, (d, n, s, m) in enumerate(zip(shape, sizes, strides, masked))]


def gather_window(c: Any, x: Any, indices: list[Any], shape: list[int]) -> Any:
    """x read at the window `indices` (one gather per axis that is not whole)."""
    for axis, idx in enumerate(indices):
        if isinstance(idx, np.ndarray):
            if list(idx) == list(range(shape[axis])):
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
    sizes = [len(i) if isinstance(i, np.ndarray) else int(c.spec(i).shape[0]) for i in indices]
    spread, mask = c.reshape(c.value(update), sizes), None
    for axis, (idx, dim, n, stride) in enumerate(zip(indices, shape, sizes, strides)):
        if isinstance(idx, np.ndarray):
            if list(idx) == list(range(dim)):
                continue
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
                                          c.op("lesser", [r, i32([n * step])])])
            k = r if step == 1 else c.op("div", [r, i32([step])])
            if step != 1:
                inside = c.op("logical_and", [inside, c.op("equal", [c.op("mul", [k, i32([step])]), r])])
            take = c.op("min", [c.op("max", [k, i32([0])]), i32([n - 1])])
        spread = c.op("gather", [spread, take], axis=axis)
        along = [1] * rank
        along[axis] = dim
        inside = c.reshape(inside, along)
        mask = inside if mask is None else c.op("logical_and", [mask, inside])
    if mask is None:  # the window is all of x
        return spread
    return c.op("where", [mask, spread, x])
