"""MIL iOS17 quantize and dequantize (int8 / uint8, per tensor or per channel along `axis`):
quantize = clip(round_half_even(x / scale) + zero_point), dequantize = (q - zero_point) * scale."""
from __future__ import annotations

from typing import Any

import numpy as np

from estuary.importers.mlprogram.ops import OPS
from estuary.importers.mlprogram.ops.shape import axis_of, shape_of

_RANGE = {"int8": (-128, 127), "uint8": (0, 255)}


def _param(c: Any, op: Any, key: str, x: Any, default: Any = None) -> Any:
    """A scalar or per-channel parameter shaped to broadcast along `axis` of x, as float32."""
    v = c.val(op, key, default)
    if v is None:
        return None
    p = np.asarray(v, dtype=np.float32)
    if p.size == 1:
        return p.reshape(())
    rank = len(shape_of(c, x))
    axis = axis_of(c, int(c.scalar(op, "axis", -1)), rank)
    c.check(p.ndim == 1 and p.size == shape_of(c, x)[axis], f"{key} has {p.size} values; axis {axis} has "
            f"{shape_of(c, x)[axis]}")
    shape = [1] * rank
    shape[axis] = p.size
    return p.reshape(shape)


@OPS.op("quantize", since=17)
def convert_quantize(c: Any, op: Any) -> Any:
    x = c.x(op, "input")
    dtype = str(c.val(op, "output_dtype"))
    c.check(dtype in _RANGE, f"output_dtype must be int8 or uint8, got {dtype!r}")
    scale = _param(c, op, "scale", x)
    zp = _param(c, op, "zero_point", x, 0)
    y = c.op("round", [c.op("div", [x, c.const(scale)])])
    y = c.op("add", [y, c.const(zp)])
    lo, hi = _RANGE[dtype]
    return c.op("cast", [c.op("clamp", [y], min_value=float(lo), max_value=float(hi))], to=dtype)


@OPS.op("dequantize", since=17)
def convert_dequantize(c: Any, op: Any) -> Any:
    q = c.arg(op, "input")
    scale = _param(c, op, "scale", q)
    zp = _param(c, op, "zero_point", q, 0)
    if isinstance(q, np.ndarray):
        return ((q.astype(np.float32) - zp) * scale).astype(np.float32)
    y = c.op("cast", [q], to="float32")
    return c.op("mul", [c.op("sub", [y, c.const(zp)]), c.const(scale)])
