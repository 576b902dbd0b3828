"""MIL activations: relu, relu6, sigmoid, tanh-family, elu, gelu (exact, tanh and sigmoid
approximations), leaky/clamped/thresholded relu, prelu and softplus_parametric (per channel,
axis 1), scaled_tanh, sigmoid_hard, silu, softplus, softsign, linear_activation, softmax.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from estuary.importers.mlprogram.ops import OPS


def f32(c: Any, v: Any) -> Any:
    return c.const(np.asarray(v, dtype=np.float32))


def _simple(mil: str, nn_name: str) -> None:
    @OPS.op(mil)
    def convert(c: Any, op: Any) -> Any:
        return c.op(nn_name, [c.x(op)])


for _mil, _nn in {"relu": "relu", "sigmoid": "sigmoid", "softplus": "softplus", "softsign": "softsign"}.items():
    _simple(_mil, _nn)


@OPS.op("relu6")
def convert_relu6(c: Any, op: Any) -> Any:
    return c.op("clamp", [c.x(op)], min_value=0.0, max_value=6.0)


@OPS.op("silu")
def convert_silu(c: Any, op: Any) -> Any:
    x = c.x(op)
    return c.op("mul", [x, c.op("sigmoid", [x])])


@OPS.op("elu")
def convert_elu(c: Any, op: Any) -> Any:
    return c.op("elu", [c.x(op)], alpha=float(c.scalar(op, "alpha", 1.0)))


@OPS.op("leaky_relu")
def convert_leaky_relu(c: Any, op: Any) -> Any:
    return c.op("leaky_relu", [c.x(op)], alpha=float(c.scalar(op, "alpha", 0.01)))


@OPS.op("linear_activation")
def convert_linear_activation(c: Any, op: Any) -> Any:
    return c.op("linear", [c.x(op)], alpha=float(c.scalar(op, "alpha")), beta=float(c.scalar(op, "beta", 0.0)))


@OPS.op("gelu")
def convert_gelu(c: Any, op: Any) -> Any:
    x = c.x(op)
    mode = str(c.val(op, "mode", "EXACT"))
    if mode == "EXACT":
        return c.op("gelu", [x])
    half_x = c.op("mul", [x, f32(c, 0.5)])
    if mode == "TANH_APPROXIMATION":
        # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        cube = c.op("mul", [c.op("mul", [x, x]), x])
        inner = c.op("mul", [c.op("add", [x, c.op("mul", [cube, f32(c, 0.044715)])]), f32(c, math.sqrt(2 / math.pi))])
        return c.op("mul", [half_x, c.op("add", [c.op("tanh", [inner]), f32(c, 1.0)])])
    c.check(mode == "SIGMOID_APPROXIMATION", f"unknown gelu mode {mode!r}")
    return c.op("mul", [x, c.op("sigmoid", [c.op("mul", [x, f32(c, 1.702)])])])


@OPS.op("clamped_relu")
def convert_clamped_relu(c: Any, op: Any) -> Any:
    """min(beta, x >= 0 ? x : alpha * x)"""
    y = c.op("leaky_relu", [c.x(op)], alpha=float(c.scalar(op, "alpha")))
    return c.op("min", [y, f32(c, float(c.scalar(op, "beta")))])


@OPS.op("thresholded_relu")
def convert_thresholded_relu(c: Any, op: Any) -> Any:
    """x where x > alpha, else 0"""
    x = c.x(op)
    mask = c.op("greater", [x, f32(c, float(c.scalar(op, "alpha", 1.0)))])
    return c.op("mul", [x, c.op("cast", [mask], to="float32")])


@OPS.op("scaled_tanh")
def convert_scaled_tanh(c: Any, op: Any) -> Any:
    """alpha * tanh(beta * x)"""
    x = c.op("mul", [c.x(op), f32(c, float(c.scalar(op, "beta", 1.0)))])
    return c.op("mul", [c.op("tanh", [x]), f32(c, float(c.scalar(op, "alpha", 1.0)))])


@OPS.op("sigmoid_hard")
def convert_sigmoid_hard(c: Any, op: Any) -> Any:
    """min(max(alpha * x + beta, 0), 1)"""
    return c.op("hard_sigmoid", [c.x(op)], alpha=float(c.scalar(op, "alpha", 0.2)),
                beta=float(c.scalar(op, "beta", 0.5)))


def channel_param(c: Any, op: Any, key: str, x: Any) -> Any:
    """A per-channel [C] parameter shaped to broadcast along axis 1 of x (rank 3..5)."""
    rank = c.spec(x).rank
    c.check(3 <= rank <= 5, f"x must have rank 3, 4 or 5, got {rank}")
    p = np.asarray(c.val(op, key), dtype=np.float32).reshape(-1)
    ch = c.spec(x).shape[1]
    c.check(p.size in (1, ch), f"{key} has {p.size} values for {ch} channels")
    return f32(c, np.broadcast_to(p, (ch,)).reshape([ch] + [1] * (rank - 2)))


@OPS.op("prelu")
def convert_prelu(c: Any, op: Any) -> Any:
    x = c.x(op)
    return c.op("prelu", [x, channel_param(c, op, "alpha", x)])


@OPS.op("softplus_parametric")
def convert_softplus_parametric(c: Any, op: Any) -> Any:
    """alpha * log(1 + exp(beta * x)), per channel"""
    x = c.x(op)
    alpha, beta = channel_param(c, op, "alpha", x), channel_param(c, op, "beta", x)
    return c.op("mul", [c.op("softplus", [c.op("mul", [x, beta])]), alpha])


@OPS.op("softmax")
def convert_softmax(c: Any, op: Any) -> Any:
    x = c.x(op)
    axis = int(c.scalar(op, "axis", -1))
    rank = c.spec(x).rank
    c.check(-rank <= axis < rank, f"axis {axis} is out of range for rank {rank}")
    return c.op("softmax", [x], axis=axis % rank)
