"""MIL list ops (make_list, list_write, list_read, list_gather, list_scatter, list_length) as
lists known at compile time: a list is a Python list of nn Values, so indices must fold to
constants (they do in unrolled while_loops); reading a slot nothing wrote gives zeros of
elem_shape."""
from __future__ import annotations

from typing import Any

import numpy as np

from estuary.importers.mlprogram.ops import OPS
from estuary.importers.mlprogram.values import DTYPE_NAMES, numpy_dtype


class TensorList:
    """A MIL list: its slots (None = never written), element shape and dtype, growable or not."""

    def __init__(self, slots: list[Any], elem_shape: list[int] | None, dtype: Any, dynamic: bool) -> None:
        self.slots, self.elem_shape, self.dtype, self.dynamic = slots, elem_shape, dtype, dynamic

    def copy(self) -> TensorList:
        return TensorList(list(self.slots), self.elem_shape, self.dtype, self.dynamic)


def _list(c: Any, op: Any) -> TensorList:
    ls = c.arg(op, "ls")
    c.check(isinstance(ls, TensorList), "ls is not a list")
    return ls


def _index(c: Any, op: Any, key: str, ls: TensorList, write: bool = False) -> int:
    i = int(c.scalar(op, key))
    n = len(ls.slots)
    if write and ls.dynamic and i >= n:
        ls.slots.extend([None] * (i + 1 - n))
        n = i + 1
    c.check(-n <= i < n, f"{key} {i} is out of range for a list of {n} elements")
    return i % n


def _read(c: Any, ls: TensorList, i: int) -> Any:
    v = ls.slots[i]
    if v is None:
        c.check(ls.elem_shape is not None, f"element {i} is read before it is written")
        return np.zeros(ls.elem_shape, ls.dtype)
    return v


@OPS.op("make_list")
def convert_make_list(c: Any, op: Any) -> Any:
    n = int(c.scalar(op, "init_length", 1))
    dynamic = bool(c.scalar(op, "dynamic_length", True))
    dtype = str(c.val(op, "dtype", "fp32"))
    c.check(dtype in DTYPE_NAMES, f"unknown dtype {dtype!r}")
    shape = None
    if c.has(op, "elem_shape"):
        dims = [c._resolve(b) for b in op.bindings("elem_shape")]
        try:
            shape = [int(np.asarray(d).reshape(())) for d in dims]
        except (TypeError, ValueError):
            shape = None
    return TensorList([None] * n, shape, numpy_dtype(DTYPE_NAMES[dtype]), dynamic)


@OPS.op("list_length")
def convert_list_length(c: Any, op: Any) -> Any:
    return np.asarray(len(_list(c, op).slots), np.int32)


@OPS.op("list_write")
def convert_list_write(c: Any, op: Any) -> Any:
    ls = _list(c, op).copy()
    ls.slots[_index(c, op, "index", ls, write=True)] = c.arg(op, "value")
    return ls


@OPS.op("list_read")
def convert_list_read(c: Any, op: Any) -> Any:
    ls = _list(c, op)
    return _read(c, ls, _index(c, op, "index", ls))


@OPS.op("list_gather")
def convert_list_gather(c: Any, op: Any) -> Any:
    ls = _list(c, op)
    idx = [int(i) for i in np.asarray(c.val(op, "indices")).reshape(-1)]
    n = len(ls.slots)
    for i in idx:
        c.check(-n <= i < n, f"index {i} is out of range for a list of {n} elements")
    items = [_read(c, ls, i % n) for i in idx]
    if all(isinstance(v, np.ndarray) for v in items):
        return np.stack(items)
    parts = [c.reshape(c.value(v), [1] + list(c.spec(c.value(v)).shape)) for v in items]
    return parts[0] if len(parts) == 1 else c.op("concat", [parts], axis=0)


@OPS.op("list_scatter")
def convert_list_scatter(c: Any, op: Any) -> Any:
    ls = _list(c, op).copy()
    idx = [int(i) for i in np.asarray(c.val(op, "indices")).reshape(-1)]
    value = c.arg(op, "value")
    if isinstance(value, np.ndarray):
        rows: list[Any] = list(value)
    else:
        shape = list(c.spec(value).shape)
        c.check(shape and shape[0] == len(idx), f"value of shape {shape} does not hold {len(idx)} elements")
        pieces = list(c.op("split", [value], splits=[1] * len(idx), axis=0)) if len(idx) > 1 else [value]
        rows = [c.reshape(p, shape[1:]) for p in pieces]
    for i, v in zip(idx, rows):
        n = len(ls.slots)
        if ls.dynamic and i >= n:
            ls.slots.extend([None] * (i + 1 - n))
        c.check(-len(ls.slots) <= i < len(ls.slots), f"index {i} is out of range for a list of {len(ls.slots)}")
        ls.slots[i % len(ls.slots)] = v
    return ls
