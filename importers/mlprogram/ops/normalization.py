"""MIL batch_norm, instance_norm, layer_norm, l2_norm and local_response_norm."""
from __future__ import annotations

from typing import Any

import numpy as np

from estuary.base import dims
from estuary.importers.mlprogram.ops import OPS
from estuary.importers.mlprogram.ops.shape import axis_of, shape_of


def _vec(c: Any, op: Any, key: str) -> Any:
    return c.x(op, key) if c.has(op, key) else None


@OPS.op("batch_norm")
def convert_batch_norm(c: Any, op: Any) -> Any:
    x = c.x(op)
    eps = float(c.scalar(op, "epsilon", 1e-5))
    operands = [x, c.x(op, "mean"), c.x(op, "variance"), _vec(c, op, "gamma"), _vec(c, op, "beta")]
    return c.op("batch_normalization", operands, axis=1, epsilon=eps)


@OPS.op("instance_norm")
def convert_instance_norm(c: Any, op: Any) -> Any:
    x = c.x(op)
    shape = shape_of(c, x)
    c.check(len(shape) in (3, 4), f"x must have rank 3 or 4, got {shape}")
    y = c.reshape(x, shape + [1]) if len(shape) == 3 else x
    eps = float(c.scalar(op, "epsilon", 1e-5))
    y = c.op("instance_normalization", [y, _vec(c, op, "gamma"), _vec(c, op, "beta")], epsilon=eps)
    return c.reshape(y, shape)


@OPS.op("layer_norm")
def convert_layer_norm(c: Any, op: Any) -> Any:
    """(x - mean) / sqrt(var + eps) over `axes`, then * gamma + beta (shaped as x.shape[axes])."""
    x = c.x(op)
    shape = shape_of(c, x)
    axes = c.ints(op, "axes", None)
    axes = list(range(len(shape))) if axes is None else sorted(axis_of(c, a, len(shape)) for a in axes)
    eps = float(c.scalar(op, "epsilon", 1e-5))
    y = c.op("layer_normalization", [x], axes=axes, epsilon=eps)
    full = [shape[i] if i in axes else 1 for i in range(len(shape))]
    for key, nn_name in (("gamma", "mul"), ("beta", "add")):
        if c.has(op, key):
            y = c.op(nn_name, [y, c.reshape(c.x(op, key), full)])
    return y


@OPS.op("l2_norm")
def convert_l2_norm(c: Any, op: Any) -> Any:
    """x / sqrt(max(sum(x^2), epsilon)) over `axes` (default: all but the batch axis)."""
    x = c.x(op)
    rank = len(shape_of(c, x))
    axes = c.ints(op, "axes", None)
    axes = list(range(1, rank)) if axes is None else [axis_of(c, a, rank) for a in axes]
    eps = float(c.scalar(op, "epsilon", 1e-6))
    ss = c.op("reduce_sum_square", [x], axes=axes, keep_dimensions=True)
    ss = c.op("max", [ss, c.const(np.asarray(eps, np.float32))])
    return c.op("div", [x, c.op("sqrt", [ss])])


@OPS.op("local_response_norm")
def convert_local_response_norm(c: Any, op: Any) -> Any:
    """x / (k + alpha / size * sum over `size` neighbouring channels of x^2) ^ beta"""
    x = c.x(op)
    shape = shape_of(c, x)
    c.check(len(shape) >= 3, f"x must have rank >= 3, got {shape}")
    size = int(c.scalar(op, "size"))
    alpha, beta, k = (float(c.scalar(op, n, d)) for n, d in (("alpha", 1e-4), ("beta", 0.75), ("k", 1.0)))
    sq = c.op("mul", [x, x])
    flat = c.reshape(sq, [shape[0], 1, shape[1], dims.size(shape[2:])])
    lo = (size - 1) // 2
    summed = c.op("average_pool2d", [c.op("pad", [flat], beginning_padding=[0, 0, lo, 0],
                                             ending_padding=[0, 0, size - 1 - lo, 0], mode="constant", value=0.0)],
                  window_dimensions=[size, 1])
    summed = c.reshape(summed, shape)  # mean over `size` channels (padding counted as zeros)
    scale = c.op("add", [c.op("mul", [summed, c.const(np.asarray(alpha, np.float32))]),
                         c.const(np.asarray(k, np.float32))])
    return c.op("div", [x, c.op("pow", [scale, c.const(np.asarray(beta, np.float32))])])
