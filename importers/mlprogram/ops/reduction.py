"""MIL reductions (reduce_sum/mean/prod/max/min/l1_norm/l2_norm/log_sum/log_sum_exp/sum_square;
axes default to all) and reduce_argmax/argmin (first index on ties)."""
from __future__ import annotations

from typing import Any

from estuary.importers.mlprogram.ops import OPS
from estuary.importers.mlprogram.ops.shape import axis_of, shape_of

_REDUCE = {"reduce_sum": "reduce_sum", "reduce_mean": "reduce_mean", "reduce_prod": "reduce_product",
           "reduce_max": "reduce_max", "reduce_min": "reduce_min", "reduce_l1_norm": "reduce_l1",
           "reduce_l2_norm": "reduce_l2", "reduce_log_sum": "reduce_log_sum",
           "reduce_log_sum_exp": "reduce_log_sum_exp", "reduce_sum_square": "reduce_sum_square"}


def _reduce(mil: str, nn_name: str) -> None:
    @OPS.op(mil)
    def convert(c: Any, op: Any) -> Any:
        x = c.x(op)
        rank = len(shape_of(c, x))
        axes = c.ints(op, "axes", None)
        axes = list(range(rank)) if axes is None else sorted({axis_of(c, a, rank) for a in axes})
        return c.op(nn_name, [x], axes=axes, keep_dimensions=bool(c.scalar(op, "keep_dims", False)))


for _mil, _nn in _REDUCE.items():
    _reduce(_mil, _nn)


def _arg(mil: str, nn_name: str) -> None:
    @OPS.op(mil)
    def convert(c: Any, op: Any) -> Any:
        x = c.x(op)
        axis = axis_of(c, int(c.scalar(op, "axis", -1)), len(shape_of(c, x)))
        dtype = str(c.val(op, "output_dtype", "int32"))
        c.check(dtype in ("int32", "uint16", "int16", "uint8", "int8"), f"unknown output_dtype {dtype!r}")
        y = c.op(nn_name, [x], axis=axis, keep_dimensions=bool(c.scalar(op, "keep_dims", False)),
                 output_data_type="int32")
        return y if dtype in ("int32", "int16", "uint16") else c.op("cast", [y], to=dtype)


_arg("reduce_argmax", "arg_max")
_arg("reduce_argmin", "arg_min")
