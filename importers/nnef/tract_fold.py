"""Operations on values known at import, folded as tract folds them (tract_reader.py).

`RULES[op](tensors, attribs)` gets the known tensor arguments (numpy arrays, or SymArrays of ints
and Dims) and the other arguments, and returns the known result, or None to leave the operation to
its converter. `NotSymbolic` / `DimError` (a fold the symbols' bounds do not decide, a reshape to
a dynamic size) also leave it to the converter, which computes it at run time.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from estuary.base import dims
from estuary.base.dims import Dim
from estuary.importers.nnef import tract_shapes
from estuary.importers.nnef import tract_values as tv
from estuary.importers.nnef.tract_values import Known, NotSymbolic

Rule = Callable[[Mapping[str, Any], Mapping[str, Any]], Known | None]


def _binary(op: str) -> Rule:
    def fold(t: Mapping[str, Any], a: Mapping[str, Any]) -> Known:
        x, y = t["x"], t["y"]
        rank = max(tv.ndim(x), tv.ndim(y))
        return tv.fold_binary(op, tv.align_known(x, rank), tv.align_known(y, rank))

    return fold


def _not(t: Mapping[str, Any], a: Mapping[str, Any]) -> Known:
    return np.logical_not(np.asarray(t["x"], dtype=bool))


def _neg(t: Mapping[str, Any], a: Mapping[str, Any]) -> Known:
    x = t["x"]
    return tv.data_move(x, lambda v: -v) if isinstance(x, tv.SymArray) else np.negative(x)


def _copy(t: Mapping[str, Any], a: Mapping[str, Any]) -> Known:
    return t.get("x", t.get("input"))


def _select(t: Mapping[str, Any], a: Mapping[str, Any]) -> Known:
    c, x, y = t["condition"], t["true_value"], t["false_value"]
    rank = max(tv.ndim(c), tv.ndim(x), tv.ndim(y))
    return tv.select(tv.align_known(c, rank), tv.align_known(x, rank), tv.align_known(y, rank))


def _static(shape: list[dims.Value]) -> list[int]:
    if not dims.is_static(shape):
        raise NotSymbolic(f"a shape with dynamic dimensions {shape}")
    return [int(d) for d in shape]


def _reshape_like(op: str) -> Rule:
    def fold(t: Mapping[str, Any], a: Mapping[str, Any]) -> Known:
        x = t["input"]
        shape = tract_shapes.result_shapes(op, [list(x.shape)], a)
        assert shape is not None
        return tv.reshape(x, _static(shape[0]))

    return fold


def _transpose(t: Mapping[str, Any], a: Mapping[str, Any]) -> Known:
    x, axes = t["input"], [int(v) for v in a["axes"]]
    perm = axes + list(range(len(axes), tv.ndim(x)))
    return tv.data_move(x, lambda v: np.transpose(v, perm))


def _bound(i: dims.Value, extent: int) -> int:
    if isinstance(i, Dim):
        raise NotSymbolic(f"a slice bound {i}")
    return min(max(i + extent if i < 0 else i, 0), extent)


def _slice(t: Mapping[str, Any], a: Mapping[str, Any]) -> Known:
    x = t["input"]
    index: list[Any] = [slice(None)] * tv.ndim(x)
    stride = a.get("stride") or [1] * len(a["axes"])
    for axis, b, e, s in zip(a["axes"], a["begin"], a["end"], stride):
        extent = int(x.shape[axis])
        if s == 1 and isinstance(e, int) and e == 0 and all(v == 1 for v in stride):
            e = extent
        if s > 0:
            index[axis] = slice(_bound(b, extent), _bound(e, extent), s)
        else:
            raise NotSymbolic("a negative stride")
    return tv.data_move(x, lambda v: v[tuple(index)])


def _concat(t: Mapping[str, Any], a: Mapping[str, Any]) -> Known:
    return tv.concat(t["values"], int(a["axis"]))


def _tile(t: Mapping[str, Any], a: Mapping[str, Any]) -> Known:
    reps = _static(list(a["repeats"]))
    return tv.data_move(t["input"], lambda v: np.tile(v, reps))


def _cast(t: Mapping[str, Any], a: Mapping[str, Any]) -> Known:
    target = tv.datum_type(str(a["to"]))
    if target is None:
        raise ValueError(f"unsupported type {a['to']!r}")
    x = t["input"]
    if target == "uint8" and not isinstance(x, tv.SymArray):
        return np.asarray(x) != 0
    if target == "int32" and not isinstance(x, tv.SymArray) and x.dtype.kind == "f":
        with np.errstate(invalid="ignore"):  # an infinite mask value cast to an integer: unspecified, as in tract
            return np.trunc(x).astype(np.int64)
    return tv.cast(x, target)


def _gather(t: Mapping[str, Any], a: Mapping[str, Any]) -> Known:
    x, idx, axis = t["input"], t["indices"], int(a["axis"])
    if isinstance(idx, tv.SymArray):
        raise NotSymbolic("indices with dynamic dimensions")
    indices = np.asarray(idx).astype(np.int64)
    indices = np.where(indices < 0, indices + x.shape[axis], indices)
    return tv.data_move(x, lambda v: np.take(v, indices, axis=axis))


def _range(t: Mapping[str, Any], a: Mapping[str, Any]) -> Known | None:
    start, end, step = (a[k] for k in ("start", "end", "step"))
    if any(isinstance(v, Dim) for v in (start, end, step)):
        return None
    if step == 0:
        raise ValueError("step must not be 0")
    return np.arange(start, end, step, dtype=np.int64)


def _reduce(fn: Callable[..., Any]) -> Rule:
    def fold(t: Mapping[str, Any], a: Mapping[str, Any]) -> Known:
        x = t["input"]
        if isinstance(x, tv.SymArray):
            raise NotSymbolic("a reduction of dimensions")
        return np.asarray(fn(x, axis=tuple(int(v) for v in a["axes"]), keepdims=True))

    return fold


RULES: dict[str, Rule] = {name: _binary(name) for name in tv.BINARY}
RULES.update({
    "not": _not, "neg": _neg, "copy": _copy, "select": _select, "reshape": _reshape_like("reshape"),
    "squeeze": _reshape_like("squeeze"), "unsqueeze": _reshape_like("unsqueeze"), "transpose": _transpose,
    "slice": _slice, "concat": _concat, "tile": _tile, "tract_core_cast": _cast, "tract_core_gather": _gather,
    "tract_core_range": _range, "sum_reduce": _reduce(np.sum), "max_reduce": _reduce(np.max),
    "min_reduce": _reduce(np.min),
})
