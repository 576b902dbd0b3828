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


def scatter_window(c: Any, x: Any, update: Any, indices: list[Any]) -> Any:
    """x with the window `indices` replaced by `update` (of the window's shape, any rank): one
    scatter_nd whose coordinates are built from the per-axis indices."""
    rank = len(indices)
    sizes = [len(i) if isinstance(i, np.ndarray) else int(c.spec(i).shape[0]) for i in indices]
    columns = []
    for axis, idx in enumerate(indices):
        along = [1] * rank + [1]
        along[axis] = sizes[axis]
        if isinstance(idx, np.ndarray):
            columns.append(c.const(np.broadcast_to(idx.reshape(along), sizes + [1]).astype(np.int32).copy(), "int32"))
        else:
            columns.append(c.op("expand", [c.reshape(idx, along)], new_shape=sizes + [1]))
    count = int(np.prod(sizes))
    coords = c.reshape(c.op("concat", [columns], axis=rank), [count, rank])
    return c.op("scatter_nd", [x, coords, c.reshape(c.value(update), [count])], reduction="none")
