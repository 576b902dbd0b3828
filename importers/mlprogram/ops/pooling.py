"""MIL avg_pool, max_pool and l2_pool over 1-D, 2-D and 3-D windows (pad types as conv,
ceil_mode, exclude_padding_from_average). A 3-D window is a box, and all three poolings are
separable over a box (a max of maxima; sums of sums; counts of valid positions are products of
per-axis counts), so 3-D pooling is a 2-D pooling over (H, W) then one over D."""
from __future__ import annotations

from typing import Any

from estuary.importers.mlprogram.ops import OPS
from estuary.importers.mlprogram.ops.convolution import spatial_params
from estuary.importers.mlprogram.ops.shape import shape_of


def _pool(c: Any, op: Any, nn_name: str) -> Any:
    x = c.x(op)
    shape = shape_of(c, x)
    rank = len(shape)
    c.check(rank in (3, 4, 5), f"only 1-D, 2-D and 3-D pooling is supported (x has rank {rank})")
    kernel = c.ints(op, "kernel_sizes")
    c.check(len(kernel) == rank - 2, f"kernel_sizes {kernel} needs {rank - 2} values")
    strides, _, pairs = spatial_params(c, op, shape[2:], kernel)
    if rank == 5:
        n, ch, d, h, w = shape
        y = _pool2d(c, op, nn_name, c.reshape(x, [n, ch * d, h, w]), kernel[1:], strides[1:], pairs[1:])
        _, _, oh, ow = shape_of(c, y)
        y = _pool2d(c, op, nn_name, c.reshape(y, [n, ch, d, oh * ow]), [kernel[0], 1], [strides[0], 1],
                    [pairs[0], (0, 0)])
        return c.reshape(y, [n, ch, shape_of(c, y)[2], oh, ow])
    if rank == 3:
        x = c.reshape(x, shape[:2] + [1, shape[2]])
        kernel, strides, pairs = [1] + kernel, [1] + strides, [(0, 0)] + pairs
    y = _pool2d(c, op, nn_name, x, kernel, strides, pairs)
    if rank == 3:
        s = shape_of(c, y)
        y = c.reshape(y, [s[0], s[1], s[3]])
    return y


def _pool2d(c: Any, op: Any, nn_name: str, x: Any, kernel: list[int], strides: list[int], pairs: list) -> Any:
    padding = [pairs[0][0], pairs[0][1], pairs[1][0], pairs[1][1]]
    ceil = bool(c.scalar(op, "ceil_mode", False))
    if nn_name == "average_pool2d" and any(padding) and not bool(c.scalar(op, "exclude_padding_from_average", False)):
        # padding counts in the average: pad with zeros first, then pool without padding
        x = c.op("pad", [x], beginning_padding=[0, 0, padding[0], padding[2]],
                 ending_padding=[0, 0, padding[1], padding[3]], mode="constant", value=0.0)
        padding = [0, 0, 0, 0]
    return c.op(nn_name, [x], window_dimensions=kernel, padding=padding, strides=strides,
                rounding_type="ceil" if ceil else "floor")


@OPS.op("avg_pool")
def convert_avg_pool(c: Any, op: Any) -> Any:
    return _pool(c, op, "average_pool2d")


@OPS.op("max_pool")
def convert_max_pool(c: Any, op: Any) -> Any:
    return _pool(c, op, "max_pool2d")


@OPS.op("l2_pool")
def convert_l2_pool(c: Any, op: Any) -> Any:
    return _pool(c, op, "l2_pool2d")
