"""MIL avg_pool, max_pool and l2_pool over 1-D and 2-D windows (pad types as conv, ceil_mode,
exclude_padding_from_average)."""
from __future__ import annotations

from typing import Any

from estuary.importers.mlprogram.ops import OPS
from estuary.importers.mlprogram.ops.convolution import spatial_params
from estuary.importers.mlprogram.ops.shape import shape_of


def _pool(c: Any, op: Any, nn_name: str) -> Any:
    x = c.x(op)
    shape = shape_of(c, x)
    rank = len(shape)
    c.check(rank in (3, 4), f"only 1-D and 2-D pooling is supported (x has rank {rank})")
    kernel = c.ints(op, "kernel_sizes")
    c.check(len(kernel) == rank - 2, f"kernel_sizes {kernel} needs {rank - 2} values")
    strides, _, pairs = spatial_params(c, op, shape[2:], kernel)
    if rank == 3:
        x = c.reshape(x, shape[:2] + [1, shape[2]])
        kernel, strides, pairs = [1] + kernel, [1] + strides, [(0, 0)] + pairs
    padding = [pairs[0][0], pairs[0][1], pairs[1][0], pairs[1][1]]
    ceil = bool(c.scalar(op, "ceil_mode", False))
    if nn_name == "average_pool2d" and any(padding) and not bool(c.scalar(op, "exclude_padding_from_average", False)):
        # padding counts in the average: pad with zeros first, then pool without padding
        x = c.op("pad", [x], beginning_padding=[0, 0, padding[0], padding[2]],
                 ending_padding=[0, 0, padding[1], padding[3]], mode="constant", value=0.0)
        padding = [0, 0, 0, 0]
    y = c.op(nn_name, [x], window_dimensions=kernel, padding=padding, strides=strides,
             rounding_type="ceil" if ceil else "floor")
    if rank == 3:
        s = shape_of(c, y)
        y = c.reshape(y, [s[0], s[1], s[3]])
    return y


@OPS.op("avg_pool")
def convert_avg_pool(c: Any, op: Any) -> Any:
    return _pool(c, op, "average_pool2d")


@OPS.op("max_pool")
def convert_max_pool(c: Any, op: Any) -> Any:
    return _pool(c, op, "max_pool2d")


@OPS.op("l2_pool")
def convert_l2_pool(c: Any, op: Any) -> Any:
    return _pool(c, op, "l2_pool2d")
