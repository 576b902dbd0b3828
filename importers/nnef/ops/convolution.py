"""Convolution and deconvolution (§4.3.1).

1-D, 2-D and 3-D (a 1-D operation runs as 2-D with a unit trailing axis; a 3-D one as a sum over
the depth taps of 2-D operations with the output depth folded into the batch). NCHW data with OIHW
(conv) / IOHW (deconv) filters, exactly NNEF's layouts. groups = 0 means depth-wise. Padding [] is
computed automatically (§4.3 "Automatic Padding Calculation"). Border modes:
- conv: 'constant' (zeros; 'ignore' is treated the same, as border values contribute nothing to a
  sum), 'replicate', 'reflect', 'reflect-even' pad the input explicitly first; negative padding crops.
- deconv: border values enter through the input index (i + p - j*d) / s; for any mode the input is
  padded by k_b / k_e samples with the border mode and the transposed convolution's padding grows
  by k*s, which reads exactly those samples (and keeps the output extent). output_shape selects
  among the reachable extents.
"""
import numpy as np

from estuary.importers.nnef.ops import OPS
from estuary.importers.nnef.ops.shape import pad_value


_BORDERS = ("constant", "ignore", "replicate", "reflect", "reflect-even")


def _params(c, inv, x, w, transposed):
    shape, fshape = list(c.spec(x).shape), list(c.spec(w).shape)
    rank = len(shape)
    c.check(rank in (3, 4, 5), f"{rank - 2}-D {inv.name} is not supported (1-D, 2-D and 3-D are; input rank {rank})")
    c.check(len(fshape) == rank, f"filter rank {len(fshape)} must equal the input rank {rank}")
    n = rank - 2
    stride = list(inv.attribs.get("stride") or [1] * n)
    dilation = list(inv.attribs.get("dilation") or [1] * n)
    padding = [tuple(p) for p in inv.attribs.get("padding") or []]
    border = inv.attribs.get("border", "constant")
    c.check(border in _BORDERS, f"border {border!r} must be one of {', '.join(_BORDERS)}")
    c.check(len(stride) == n and len(dilation) == n and len(padding) in (0, n),
            f"stride, dilation and padding need {n} items each")
    groups = inv.attribs.get("groups", 1)
    out_shape = c.shape(inv.outputs["output"])
    if groups == 0:
        groups = shape[1] if not transposed else (out_shape[1] if inv.attribs.get("output_shape") else shape[1])
    fd = [(f - 1) * d + 1 for f, d in zip(fshape[2:], dilation)]
    if not padding:  # automatic: x = ceil(X / s), t = max((x - 1) s + fd - X, 0), p = floor(t/2)
        big = out_shape[2:] if transposed else shape[2:]
        small = [-(-X // s) for X, s in zip(big, stride)]
        totals = [max((xs - 1) * s + f - X, 0) for xs, s, f, X in zip(small, stride, fd, big)]
        padding = [(t // 2, t - t // 2) for t in totals]
    return shape, fshape, stride, dilation, padding, border, groups, fd, out_shape


def add_bias(c, inv, y, channels):
    b = inv.inputs.get("bias", 0.0)
    if c.is_zero(b):
        return y
    bv = c.tensor(b)
    bshape = list(c.spec(bv).shape)
    c.check(bshape in ([], [1], [channels], [1, channels], [1, 1]),
            f"bias shape {bshape} must be [1, {channels}] or singular")
    if len(bshape) == 1 and channels != 1:  # a [C] vector is the [1, C] bias NNEF means (torch-to-nnef writes [C])
        bv = c.reshape(bv, [1, channels])
    bv = c.align(bv, y)[0]
    return c.op("add", [y, bv])


@OPS.op("conv")
def conv(c, inv):
    x, w = c.tensor(inv.inputs["input"]), c.tensor(inv.inputs["filter"])
    shape, fshape, stride, dilation, padding, border, groups, fd, out_shape = _params(c, inv, x, w, False)
    c.check(fshape[0] % groups == 0 and fshape[1] * groups == shape[1],
            f"filter {fshape} does not fit input channels {shape[1]} with groups {groups}")
    if border in ("constant", "ignore") and all(p >= 0 and q >= 0 for p, q in padding):
        pads = padding
    else:
        x = pad_value(c, x, [(0, 0), (0, 0)] + padding, "constant" if border == "ignore" else border)
        pads = [(0, 0)] * len(padding)
    if len(shape) == 5:
        return add_bias(c, inv, _conv3d(c, x, w, fshape, pads, stride, dilation, groups, out_shape), out_shape[1])
    if len(shape) == 3:
        x, w = c.reshape(x, list(c.spec(x).shape) + [1]), c.reshape(w, fshape + [1])
        pads, stride, dilation = pads + [(0, 0)], stride + [1], dilation + [1]
    y = c.op("conv2d", [x, w], padding=[v for pq in pads for v in pq], strides=stride, dilations=dilation,
             groups=groups, input_layout="nchw", filter_layout="oihw")
    y = c.reshape(y, out_shape)
    return add_bias(c, inv, y, out_shape[1])


def _conv3d(c, x, w, fshape, pads, stride, dilation, groups, out_shape):
    """3-D conv as a sum over the filter's depth taps of 2-D convs, with the output depth folded
    into the batch: y[:, :, k] = sum_j conv2d(x[:, :, k*s + j*d], w[:, :, j])."""
    if pads[0] != (0, 0):  # depth padding explicitly (zeros; other borders were padded already)
        x = pad_value(c, x, [(0, 0), (0, 0), pads[0], (0, 0), (0, 0)], "constant")
    b, ch, _, h, wd = c.spec(x).shape
    depth = out_shape[2]
    total = None
    for j in range(fshape[2]):
        first = j * dilation[0]
        if stride[0] == 1:
            taps = c.op("slice", [x], starts=[0, 0, first, 0, 0], sizes=[b, ch, depth, h, wd])
        else:
            index = c.const(np.arange(depth, dtype=np.int32) * stride[0] + first, "int32")
            taps = c.op("gather", [x, index], axis=2)
        taps = c.reshape(c.op("transpose", [taps], permutation=[0, 2, 1, 3, 4]), [b * depth, ch, h, wd])
        wj = c.op("slice", [w], starts=[0, 0, j, 0, 0], sizes=[fshape[0], fshape[1], 1] + fshape[3:])
        y = c.op("conv2d", [taps, c.reshape(wj, fshape[:2] + fshape[3:])],
                 padding=[v for pq in pads[1:] for v in pq], strides=stride[1:], dilations=dilation[1:],
                 groups=groups, input_layout="nchw", filter_layout="oihw")
        total = y if total is None else c.op("add", [total, y])
    total = c.reshape(total, [b, depth, out_shape[1]] + out_shape[3:])
    return c.op("transpose", [total], permutation=[0, 2, 1, 3, 4])


@OPS.op("deconv")
def deconv(c, inv):
    x, w = c.tensor(inv.inputs["input"]), c.tensor(inv.inputs["filter"])
    shape, fshape, stride, dilation, padding, border, groups, fd, out_shape = _params(c, inv, x, w, True)
    c.check(fshape[0] == shape[1] and shape[1] % groups == 0,
            f"filter {fshape} does not fit input channels {shape[1]} with groups {groups}")
    big, small = out_shape[2:], shape[2:]
    grow = []
    for X, xs, (p, q), s, f in zip(big, small, padding, stride, fd):
        if border in ("constant", "ignore"):  # zeros: only make the padding non-negative
            kb, ke = max(0, -(-(-p) // s)), max(0, -(-(-q) // s))
        else:  # cover every input index the sum can reach: (i + p - j d) / s for i < X, j < f
            kb = max(0, -((p - (f - 1)) // s), -(-(-p) // s))
            ke = max(0, (X - 1 + p) // s - (xs - 1), -(-(-q) // s))
        grow.append((kb, ke))
    if any(kb or ke for kb, ke in grow):
        x = pad_value(c, x, [(0, 0), (0, 0)] + grow, "constant" if border == "ignore" else border)
    pads = [(p + kb * s, q + ke * s) for (p, q), (kb, ke), s in zip(padding, grow, stride)]
    sizes = list(big)
    if len(shape) == 5:
        y = _deconv3d(c, x, w, fshape, pads, stride, dilation, groups, out_shape)
        return add_bias(c, inv, y, out_shape[1])
    if len(shape) == 3:
        x, w = c.reshape(x, list(c.spec(x).shape) + [1]), c.reshape(w, fshape + [1])
        pads, stride, dilation, sizes = pads + [(0, 0)], stride + [1], dilation + [1], sizes + [1]
    y = c.op("conv_transpose2d", [x, w], padding=[v for pq in pads for v in pq], strides=stride,
             dilations=dilation, output_sizes=sizes, groups=groups, input_layout="nchw", filter_layout="iohw")
    y = c.reshape(y, out_shape)
    return add_bias(c, inv, y, out_shape[1])


def _deconv3d(c, x, w, fshape, pads, stride, dilation, groups, out_shape):
    """3-D deconv as a sum over the filter's depth taps of 2-D deconvs, with the output depth folded
    into the batch: y[:, :, i] = sum_j deconv2d(x[:, :, (i + p - j*d) / s], w[:, :, j]) over the terms
    where the division is exact and in range (the others read an appended zero slice)."""
    b, ch, depth_in, h, wd = c.spec(x).shape
    x = pad_value(c, x, [(0, 0), (0, 0), (0, 1), (0, 0), (0, 0)], "constant")  # zero slice at depth_in
    depth, (p, _), s, d = out_shape[2], pads[0], stride[0], dilation[0]
    total = None
    for j in range(fshape[2]):
        k = np.arange(depth) + p - j * d
        ok = (k % s == 0) & (k // s >= 0) & (k // s < depth_in)
        if not ok.any():
            continue
        index = c.const(np.where(ok, k // s, depth_in).astype(np.int32), "int32")
        taps = c.op("gather", [x, index], axis=2)
        taps = c.reshape(c.op("transpose", [taps], permutation=[0, 2, 1, 3, 4]), [b * depth, ch, h, wd])
        wj = c.op("slice", [w], starts=[0, 0, j, 0, 0], sizes=[fshape[0], fshape[1], 1] + fshape[3:])
        y = c.op("conv_transpose2d", [taps, c.reshape(wj, fshape[:2] + fshape[3:])],
                 padding=[v for pq in pads[1:] for v in pq], strides=stride[1:], dilations=dilation[1:],
                 output_sizes=out_shape[3:], groups=groups, input_layout="nchw", filter_layout="iohw")
        total = y if total is None else c.op("add", [total, y])
    if total is None:  # no tap reaches any input sample
        return c.const(np.zeros(out_shape, np.float32), "float32")
    total = c.reshape(total, [b, depth, out_shape[1]] + out_shape[3:])
    return c.op("transpose", [total], permutation=[0, 2, 1, 3, 4])


# Supported through the expansion of their fragment bodies into the converters above.
OPS.expand("separable_conv", "separable_deconv")
