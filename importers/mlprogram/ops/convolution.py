"""MIL conv and conv_transpose (1-D as 2-D with a unit height; 3-D conv as a sum of 2-D
convolutions over the kernel's depth; pad_type valid, same, same_lower, custom; groups;
dilations; conv_transpose's output_shape)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from estuary.base import dims
from estuary.importers.mlprogram.ops import OPS
from estuary.importers.mlprogram.ops.shape import shape_of


def same_pad(size: dims.Value, kernel: dims.Value, stride: int, dilation: int, lower: bool) -> tuple[int, int]:
    """(begin, end) padding of `size`; a dynamic size gets it when the total does not depend on it
    (a stride of 1), else `max` on the dynamic total raises DimError."""
    out = -(-size // stride)
    total = int(max(0, (out - 1) * stride + (kernel - 1) * dilation + 1 - size))
    small = total // 2
    return (total - small, small) if lower else (small, total - small)


def spatial_params(c: Any, op: Any, sizes: Sequence[dims.Value], kernel: Sequence[dims.Value],
                   transposed: bool = False) -> tuple:
    """(strides, dilations, [begin..., end...] padding) for the spatial axes."""
    n = len(sizes)
    strides = c.ints(op, "strides", None) or [1] * n
    dilations = c.ints(op, "dilations", None) or [1] * n
    c.check(len(strides) == n and len(dilations) == n, f"strides {strides} / dilations {dilations} need {n} values")
    c.check(min(strides + dilations) >= 1, f"strides {strides} and dilations {dilations} must be positive")
    pad_type = str(c.val(op, "pad_type", "valid"))
    if pad_type == "custom":
        pad = c.ints(op, "pad", None) or [0] * (2 * n)
        c.check(len(pad) == 2 * n, f"pad {pad} needs {2 * n} values")
        pairs = [(pad[2 * i], pad[2 * i + 1]) for i in range(n)]
    elif pad_type == "valid":
        pairs = [(0, 0)] * n
    elif pad_type in ("same", "same_lower"):
        c.check(not transposed, f"pad_type {pad_type!r} is not supported for conv_transpose")
        pairs = [same_pad(s, k, st, d, pad_type == "same_lower") for s, k, st, d in zip(sizes, kernel, strides, dilations)]
    else:
        c.fail(f"unknown pad_type {pad_type!r}")
    return strides, dilations, pairs


def _as_2d(c: Any, x: Any, w: Any) -> tuple[Any, Any, int]:
    rank = len(shape_of(c, x))
    c.check(rank in (3, 4), f"only 1-D and 2-D inputs (rank 3 or 4) are supported here; x has rank {rank}")
    if rank == 3:
        xs, ws = shape_of(c, x), shape_of(c, w)
        x = c.reshape(x, xs[:2] + [1, xs[2]])
        w = c.reshape(w, ws[:2] + [1, ws[2]])
    return x, w, rank


def _bias(c: Any, op: Any) -> Any:
    if not c.has(op, "bias"):
        return None
    return c.value(np.asarray(c.val(op, "bias"), dtype=np.float32).reshape(-1)) if isinstance(
        c.arg(op, "bias"), np.ndarray) else c.x(op, "bias")


@OPS.op("conv")
def convert_conv(c: Any, op: Any) -> Any:
    return conv(c, op, c.x(op), c.x(op, "weight"))


@OPS.op("conv_quantized")
def convert_conv_quantized(c: Any, op: Any) -> Any:
    """conv with uint8 weights W = W_q * quant_scale + quant_bias (scalars or per output channel)."""
    kind = str(c.val(op, "quantization_type"))
    c.check(kind == "linear", f"quantization_type {kind!r} is not supported (only 'linear')")
    c.check(int(c.scalar(op, "nbits", 8)) == 8, "only nbits = 8 is supported")
    wq = np.asarray(c.val(op, "weight")).astype(np.float32)
    shape = [-1] + [1] * (wq.ndim - 1)
    scale = np.asarray(c.val(op, "quant_scale"), np.float32).reshape(-1)
    bias = np.asarray(c.val(op, "quant_bias"), np.float32).reshape(-1)
    for name, p in (("quant_scale", scale), ("quant_bias", bias)):
        c.check(p.size in (1, wq.shape[0]), f"{name} has {p.size} values for {wq.shape[0]} output channels")
    w = wq * scale.reshape(shape if scale.size > 1 else []) + bias.reshape(shape if bias.size > 1 else [])
    return conv(c, op, c.x(op), c.const(w))


def conv(c: Any, op: Any, x: Any, w: Any) -> Any:
    if len(shape_of(c, x)) == 5:
        return conv3d(c, op, x, w)
    x2, w2, rank = _as_2d(c, x, w)
    n, cin, h, wd = shape_of(c, x2)
    cout, kc, kh, kw = shape_of(c, w2)
    groups = int(c.scalar(op, "groups", 1))
    c.check(groups >= 1 and kc * groups == cin, f"weight has {kc} input channels x {groups} groups for {cin}")
    sizes, kernel = shape_of(c, x)[2:], shape_of(c, w)[2:]
    strides, dilations, pairs = spatial_params(c, op, sizes, kernel)
    if rank == 3:
        strides, dilations, pairs = [1] + strides, [1] + dilations, [(0, 0)] + pairs
    padding = [pairs[0][0], pairs[0][1], pairs[1][0], pairs[1][1]]
    bias = _bias(c, op)
    y = c.op("conv2d", [x2, w2] + ([bias] if bias is not None else []), padding=padding, strides=strides,
             dilations=dilations, groups=groups)
    if rank == 3:
        s = shape_of(c, y)
        y = c.reshape(y, [s[0], s[1], s[3]])
    return y


@OPS.op("conv_transpose")
def convert_conv_transpose(c: Any, op: Any) -> Any:
    """weight [C_in, C_out / groups, *K]"""
    x, w = c.x(op), c.x(op, "weight")
    x2, w2, rank = _as_2d(c, x, w)
    groups = int(c.scalar(op, "groups", 1))
    sizes, kernel = shape_of(c, x)[2:], shape_of(c, w)[2:]
    strides, dilations, pairs = spatial_params(c, op, sizes, kernel, transposed=True)
    out_shape = c.ints(op, "output_shape", None)
    if rank == 3:
        strides, dilations, pairs = [1] + strides, [1] + dilations, [(0, 0)] + pairs
    padding = [pairs[0][0], pairs[0][1], pairs[1][0], pairs[1][1]]
    out_sizes = None
    if out_shape is not None:
        out_sizes = ([1] if rank == 3 else []) + list(out_shape[-(rank - 2):])
    bias = _bias(c, op)
    y = c.op("conv_transpose2d", [x2, w2] + ([bias] if bias is not None else []), padding=padding, strides=strides,
             dilations=dilations, groups=groups, output_sizes=out_sizes)
    if rank == 3:
        s = shape_of(c, y)
        y = c.reshape(y, [s[0], s[1], s[3]])
    return y


def conv3d(c: Any, op: Any, x: Any, w: Any) -> Any:
    """x [N, C, D, H, W], weight [O, C / groups, KD, KH, KW]: the depth axis (padded) joins the
    batch, each kernel depth kd is a 2-D convolution of every depth, and output depth o sums
    kd's result at depth o * stride + kd * dilation."""
    n, cin, d, h, wd = shape_of(c, x)
    cout, kc, kd, kh, kw = shape_of(c, w)
    groups = int(c.scalar(op, "groups", 1))
    c.check(groups >= 1 and kc * groups == cin, f"weight has {kc} input channels x {groups} groups for {cin}")
    strides, dilations, pairs = spatial_params(c, op, [d, h, wd], [kd, kh, kw])
    if any(pairs[0]):
        x = c.op("pad", [x], beginning_padding=[0, 0, pairs[0][0], 0, 0], ending_padding=[0, 0, pairs[0][1], 0, 0],
                 mode="constant", value=0.0)
    dp = d + pairs[0][0] + pairs[0][1]
    out_d = (dp - (kd - 1) * dilations[0] - 1) // strides[0] + 1
    c.check(out_d >= 1, f"the kernel depth {kd} (dilation {dilations[0]}) exceeds the padded depth {dp}")
    planes = c.reshape(c.op("transpose", [x], permutation=[0, 2, 1, 3, 4]), [n * dp, cin, h, wd])
    padding = [pairs[1][0], pairs[1][1], pairs[2][0], pairs[2][1]]
    total = None
    for k in range(kd):
        wk = c.reshape(c.op("slice", [w], starts=[0, 0, k, 0, 0], sizes=[cout, kc, 1, kh, kw]), [cout, kc, kh, kw])
        y = c.op("conv2d", [planes, wk], padding=padding, strides=strides[1:], dilations=dilations[1:], groups=groups)
        _, _, oh, ow = shape_of(c, y)
        y = c.op("slice", [c.reshape(y, [n, dp, cout, oh, ow])], starts=[0, k * dilations[0], 0, 0, 0],
                 sizes=[n, (out_d - 1) * strides[0] + 1, cout, oh, ow], strides=[1, strides[0], 1, 1, 1])
        total = y if total is None else c.op("add", [total, y])
    bias = _bias(c, op)
    if bias is not None:
        total = c.op("add", [total, c.reshape(bias, [1, 1, cout, 1, 1])])
    return c.op("transpose", [total], permutation=[0, 2, 1, 3, 4])
