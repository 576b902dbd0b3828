"""Convolution and pooling windows over dynamic spatial dimensions (NHWC).

The static lowering trims and pads each input to the exact extent its windows reach, computed
at compile time. With a dynamic height or width that extent is an expression whose sign against
the padding is not known, so here the input is padded by the whole end padding (and, for ceil
rounding, by one stride more) and sliced to the extent the windows reach; a convolution is then
one matrix product of its window columns (im2col), and the window counts of average pooling
are a sum pooling of ones over the same padded region.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from iree.compiler import ir
from iree.compiler.dialects import arith, linalg, tosa

from estuary.base import dims
from estuary.passes.lowering import common as C

Value = Any  # an MLIR value (the lowering works on ir.Value)


def reach(size: dims.Value, out: dims.Value, k: int, stride: int, dilation: int) -> dims.Value:
    """How far the windows of `out` outputs reach into the padded input: (out - 1) * stride +
    the dilated kernel."""
    return (out - 1) * stride + (k - 1) * dilation + 1


def padded_extent(x: Value, begin: Sequence[int], end: Sequence[int], extent: Sequence[dims.Value],
                  fill: float, dtype: str) -> Value:
    """NHWC `x` padded by `begin` and `end` rows/columns (the end generously: a slice follows) and
    sliced to `extent` rows and columns from the top-left corner of the padding."""
    nb, _, _, c = C.shape_of(x)
    x = C.pad_constant(x, [(0, 0), (begin[0], end[0]), (begin[1], end[1]), (0, 0)], fill, dtype)
    return C.slice_(x, [0, 0, 0, 0], [nb, extent[0], extent[1], c])


def conv2d(x: Value, weight_ohwi: Value, bias: Value, pad: Sequence[int], strides: Sequence[int],
           dilations: Sequence[int], out_hw: Sequence[dims.Value], dtype: str, depthwise: Value | None = None) -> Value:
    """A convolution of NHWC `x` whose height or width is dynamic: the input padded and sliced to
    the windows' reach; then one matrix product of the window columns (im2col) with the
    [KH*KW*C, F] weights: IREE compiles a product with a dynamic row count well, its direct
    convolution over dynamic extents poorly. A depthwise convolution (`depthwise`: the [KH, KW, C, M] filter) stays TOSA's, unpadded."""
    nb, h, w, c = C.shape_of(x)
    ws = C.shape_of(depthwise if depthwise is not None else weight_ohwi)
    kh, kw = (ws[0], ws[1]) if depthwise is not None else (ws[1], ws[2])
    o = ws[2] * ws[3] if depthwise is not None else ws[0]
    extent = [reach(s, oo, k, st, d) for s, oo, k, st, d in zip((h, w), out_hw, (kh, kw), strides, dilations)]
    x = padded_extent(x, (pad[0], pad[2]), (pad[1] + strides[0], pad[3] + strides[1]), extent, 0, dtype)
    el = C.element_of(x)
    if depthwise is not None:
        arr = ir.DenseI64ArrayAttr.get
        attrs = dict(pad=arr([0, 0, 0, 0]), stride=arr([int(v) for v in strides]),
                     dilation=arr([int(v) for v in dilations]), acc_type=ir.TypeAttr.get(ir.F32Type.get()))
        out_t = C.tensor_type([nb, out_hw[0], out_hw[1], o], el)
        return tosa.depthwise_conv2d(out_t, x, depthwise, bias, C.zero_point(dtype), C.zero_point(dtype), **attrs)
    columns = window_columns(x, [nb, out_hw[0], out_hw[1], kh, kw, c], strides, dilations)
    rows = nb * out_hw[0] * out_hw[1]
    matrix = C.reshape(C.transpose(weight_ohwi, [1, 2, 3, 0]), [1, kh * kw * c, o])  # [KH, KW, C, F]
    zp = C.zero_point(dtype)
    y = tosa.matmul(C.tensor_type([1, rows, o], ir.F32Type.get()), C.reshape(columns, [1, rows, kh * kw * c]),
                    matrix, zp, C.zero_point(dtype))
    y = tosa.add(y.type, y, C.reshape(bias, [1, 1, o]))
    return C.reshape(y, [nb, out_hw[0], out_hw[1], o])


def window_columns(x: Value, shape: Sequence[dims.Value], strides: Sequence[int], dilations: Sequence[int],
                   groups: int = 1) -> Value:
    """The [N, OH, OW, KH, KW, C] windows of NHWC `x` as one copy (a linalg.generic reading
    x[n, oh*sh + i*dh, ow*sw + j*dw, c]), which IREE compiles as one dispatch where a slice per
    tap and a concatenation were one copy each. With `groups`, the windows of each channel group
    come first: [G, N, OH, OW, KH, KW, C/G] (reading channel g*C/G + c)."""
    n, oh, ow, kh, kw, c = shape
    rank = 7 if groups > 1 else 6
    d = [ir.AffineDimExpr.get(i) for i in range(rank)]
    g, rest = (d[0], d[1:]) if groups > 1 else (None, d)
    channel = rest[5] if g is None else g * (c // groups) + rest[5]
    read = ir.AffineMap.get(rank, 0, [rest[0], rest[1] * strides[0] + rest[3] * dilations[0],
                                      rest[2] * strides[1] + rest[4] * dilations[1], channel])
    out_shape = list(shape) if groups == 1 else [groups, n, oh, ow, kh, kw, c // groups]
    el = C.element_of(x)
    op = linalg.GenericOp([C.tensor_type(out_shape, el)], [x], [C.empty(out_shape, el)],
                          ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in (read, ir.AffineMap.get_identity(rank))]),
                          ir.ArrayAttr.get([ir.Attribute.parse(C.PARALLEL)] * rank))
    block = op.regions[0].blocks.append(el, el)
    with ir.InsertionPoint(block):
        linalg.YieldOp([block.arguments[0]])
    return op.result


def pool2d(kind: str, x: Value, window: Sequence[int], pad: Sequence[int], strides: Sequence[int],
           dilations: Sequence[int], out_hw: Sequence[dims.Value], fill: float, dtype: str, unsigned: bool) -> Value:
    """max / average / l2 (a sum, divided or rooted by the caller) pooling of NHWC `x` with a
    dynamic height or width; average returns the window sums divided by the count of input
    elements in each window."""
    nb, h, w, c = C.shape_of(x)
    extent = [reach(s, o, k, st, d) for s, o, k, st, d in zip((h, w), out_hw, window, strides, dilations)]
    end = (pad[1] + strides[0], pad[3] + strides[1])
    padded = padded_extent(x, (pad[0], pad[2]), end, extent, fill, dtype)
    el = C.element_of(padded)
    out_shape = [nb, out_hw[0], out_hw[1], c]
    op = {"max": linalg.pooling_nhwc_max_unsigned if unsigned else linalg.pooling_nhwc_max,
          "average": linalg.pooling_nhwc_sum, "l2": linalg.pooling_nhwc_sum}[kind]

    def pooled(v: Value, start: float) -> Value:
        init = linalg.fill(C.scalar_const(el, start), outs=[C.empty([C.shape_of(v)[0]] + out_shape[1:3] +
                                                                   [C.shape_of(v)[3]], el)])
        return op(v, C.empty(list(window), el), outs=[init], strides=list(strides), dilations=list(dilations))

    y = pooled(padded, fill)
    if kind != "average":
        return y
    ones = C.elementwise([1, h, w, 1], el, [], lambda: C.scalar_const(el, 1.0))
    counts = pooled(padded_extent(ones, (pad[0], pad[2]), end, extent, 0, "float32"), 0.0)
    one = C.const([[[[1.0]]]], "float32")
    counts = C.elementwise(C.shape_of(counts), el, [counts, one], arith.maximumf)  # an empty window: 0 / 1
    return C.elementwise(out_shape, el, [y, counts], arith.divf)


def global_pool(kind: str, x: Value, fill: float, unsigned: bool) -> Value:
    """Pooling of NHWC `x` over its whole dynamic height and width, [N, 1, 1, C] (a reduction)."""
    el = C.element_of(x)
    if kind == "max":
        combine = arith.maxui if unsigned else (arith.maximumf if isinstance(el, ir.FloatType) else arith.maxsi)
        return C.reduce_generic(x, [1, 2], fill, combine)
    total = C.reduce_generic(x, [1, 2], 0.0, arith.addf)
    if kind == "l2":
        return total
    nb, h, w, c = C.shape_of(x)
    scale = arith.divf(C.scalar_const(el, 1.0), C.index_to_float(h * w, el))
    return C.elementwise(C.shape_of(total), el, [total], lambda v: arith.mulf(v, scale))
