"""Result shapes for the converters that read them (NNEF §4), where the Khronos parser's shape
inference does not run: the tract-semantics reader (tract_reader.py) computes them here from the
operands' shapes, which may hold dynamic dimensions (`Dim`).

reshape / squeeze / unsqueeze (§4.5), split (ratios), conv / deconv (§4.3.1), the window
operations box, debox, sample, desample and the pools (§4.3.2, with automatic padding when
`padding = []`). Everything else the converters infer themselves.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from estuary.base import dims
from estuary.base.dims import DimError

Shape = list[dims.Value]


def _reshape(inputs: Sequence[Shape], attrs: Mapping[str, Any]) -> list[Shape]:
    shape = list(inputs[0])
    start = int(attrs.get("axis_start", 0))
    count = int(attrs.get("axis_count", -1))
    if start < 0:
        start += len(shape)
    end = len(shape) if count == -1 else start + count
    if not 0 <= start <= end <= len(shape):
        raise DimError(f"axis_start {start} / axis_count {count} do not fit rank {len(shape)}")
    new = [dims.value(d) for d in attrs["shape"]]
    new = [shape[start + i] if isinstance(d, int) and d == 0 else d for i, d in enumerate(new)]
    part = shape[start:end]
    if sum(1 for d in new if isinstance(d, int) and d == -1) > 1:
        raise DimError(f"shape {new} has more than one -1")
    if any(isinstance(d, int) and d == -1 for d in new):
        known = dims.prod(d for d in new if not (isinstance(d, int) and d == -1))
        total = dims.prod(part)
        rest = _exact(total, known)
        new = [rest if isinstance(d, int) and d == -1 else d for d in new]
    return [shape[:start] + new + shape[end:]]


def _exact(total: dims.Value, part: dims.Value) -> dims.Value:
    from estuary.importers.mlprogram import symbolic

    try:
        return symbolic.exact_div(total, part)
    except symbolic.NotSymbolic:
        raise DimError(f"{total} elements do not divide into parts of {part}") from None


def _squeeze(inputs: Sequence[Shape], attrs: Mapping[str, Any]) -> list[Shape]:
    shape = list(inputs[0])
    axes = {a + len(shape) if a < 0 else a for a in attrs["axes"]}
    return [[d for i, d in enumerate(shape) if i not in axes]]


def _unsqueeze(inputs: Sequence[Shape], attrs: Mapping[str, Any]) -> list[Shape]:
    shape = list(inputs[0])
    rank = len(shape) + len(attrs["axes"])
    axes = sorted(a + rank if a < 0 else a for a in attrs["axes"])
    for a in axes:
        shape.insert(a, 1)
    return [shape]


def _split(inputs: Sequence[Shape], attrs: Mapping[str, Any]) -> list[Shape]:
    shape, axis, ratios = list(inputs[0]), int(attrs["axis"]), [int(r) for r in attrs["ratios"]]
    unit = _exact(shape[axis], sum(ratios))
    return [shape[:axis] + [unit * r] + shape[axis + 1:] for r in ratios]


def _window(X: dims.Value, f: int, s: int, d: int, pad: Sequence[int] | None) -> dims.Value:
    if pad is None:  # automatic padding: ceil(X / s)
        return dims.ceil_div(X, s)
    fd = (f - 1) * d + 1
    return (X + pad[0] + pad[1] - fd) // s + 1


def _up(X: dims.Value, f: int, s: int, d: int, pad: Sequence[int] | None) -> dims.Value:
    if pad is None:
        return X * s
    fd = (f - 1) * d + 1
    return (X - 1) * s + fd - pad[0] - pad[1]


def _geometry(attrs: Mapping[str, Any], n: int) -> tuple[list[int], list[int], list[Any]]:
    stride = list(attrs.get("stride") or [1] * n)
    dilation = list(attrs.get("dilation") or [1] * n)
    padding: list[Any] = [tuple(p) for p in attrs.get("padding") or []]
    return stride, dilation, padding or [None] * n


def _conv(inputs: Sequence[Shape], attrs: Mapping[str, Any]) -> list[Shape]:
    x, w = inputs[0], inputs[1]
    stride, dilation, padding = _geometry(attrs, len(x) - 2)
    spatial = [_window(X, int(f), s, d, p) for X, f, s, d, p in zip(x[2:], w[2:], stride, dilation, padding)]
    return [[x[0], w[0]] + spatial]


def _deconv(inputs: Sequence[Shape], attrs: Mapping[str, Any]) -> list[Shape]:
    x, w = inputs[0], inputs[1]
    groups = int(attrs.get("groups", 1)) or int(x[1])
    if attrs.get("output_shape"):
        return [list(attrs["output_shape"])]
    stride, dilation, padding = _geometry(attrs, len(x) - 2)
    spatial = [_up(X, int(f), s, d, p) for X, f, s, d, p in zip(x[2:], w[2:], stride, dilation, padding)]
    return [[x[0], int(w[1]) * groups] + spatial]


def _pool(inputs: Sequence[Shape], attrs: Mapping[str, Any]) -> list[Shape]:
    x = inputs[0]
    stride, dilation, padding = _geometry(attrs, len(x))
    out = [_window(X, int(f), s, d, p) for X, f, s, d, p in zip(x, attrs["size"], stride, dilation, padding)]
    return [out, out] if attrs.get("_two") else [out]


def _unpool(inputs: Sequence[Shape], attrs: Mapping[str, Any]) -> list[Shape]:
    if attrs.get("output_shape"):
        return [list(attrs["output_shape"])]
    x = inputs[0]
    stride, dilation, padding = _geometry(attrs, len(x))
    return [[_up(X, int(f), s, d, p) for X, f, s, d, p in zip(x, attrs["size"], stride, dilation, padding)]]


RULES: dict[str, Callable[[Sequence[Shape], Mapping[str, Any]], list[Shape]]] = {
    "reshape": _reshape, "squeeze": _squeeze, "unsqueeze": _unsqueeze, "split": _split, "conv": _conv,
    "deconv": _deconv, "box": _pool, "max_pool": _pool, "avg_pool": _pool, "rms_pool": _pool, "argmax_pool": _pool,
    "sample": _pool, "max_pool_with_index": _pool, "debox": _unpool, "desample": _unpool}


def result_shapes(op: str, inputs: Sequence[Shape], attrs: Mapping[str, Any]) -> list[Shape] | None:
    """The shapes of `op`'s results (None when the converter needs none from here)."""
    rule = RULES.get(op)
    if rule is None:
        return None
    if op == "max_pool_with_index":
        attrs = {**attrs, "_two": True}
    return rule(inputs, attrs)
