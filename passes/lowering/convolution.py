"""Lowering rules: conv2d and conv_transpose2d via TOSA (NHWC input, OHWI / [KH,KW,C,M] weights).

Grouped convolutions that are neither plain nor depthwise run as one TOSA convolution per group
(channel slices + concat). A transposed convolution is the regular convolution of the
zero-stuffed, re-padded input with the spatially flipped, channel-swapped filter. Float32 1x1
convolutions are one generic product (pointwise.py); a target may build a convolution its own
way first (`Forms.convolution`: llvm-cpu's Winograd, im2col and blocked 1x1 forms).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import arith, linalg, tensor, tosa
from iree.compiler.dialects import math as mathd

from estuary.base import dims
from estuary.dialects.ops.convolution import TO_IOHW, TO_OIHW, conv_out_size
from estuary.passes.lowering import RuleContext, lowering, pointwise, windows
from estuary.passes.lowering import common as C
from estuary.passes.lowering.forms import GENERIC, Convolution, Forms


def _f32():
    return ir.F32Type.get()


def _to_nhwc(x, layout):
    return C.transpose(x, [0, 2, 3, 1]) if layout == "nchw" else x


def _from_nhwc(y, layout):
    return C.transpose(y, [0, 3, 1, 2]) if layout == "nchw" else y


def _bias_or_zero(bias, channels, dtype):
    return bias if bias is not None else C.const(np.zeros(channels), dtype)


def fit_padding(size, k, pad_begin, pad_end, stride, dilation=1):
    """TOSA wants (size + pads - effective kernel) divisible by the stride. Returns (pad_end, rows
    to slice off the input end, output rows to drop at the end): normally the end padding and
    then input rows that no window uses are trimmed. When no window uses any input row (begin
    padding and a large stride: every window reads only padding), the input is kept and the end
    padding grows to the next multiple instead, which adds one output row to drop."""
    eff = (k - 1) * dilation + 1
    rem = (size + pad_begin + pad_end - eff) % stride
    trim_pad = min(rem, pad_end)
    if rem - trim_pad < size:
        return pad_end - trim_pad, rem - trim_pad, 0
    return pad_end + stride - rem, 0, 1


def drop_end_rows(y, extra_h, extra_w):
    """y [N, H, W, C] without its last `extra_h` rows and `extra_w` columns (see fit_padding)."""
    if not (extra_h or extra_w):
        return y
    n, h, w, c = C.shape_of(y)
    return C.slice_(y, [0, 0, 0, 0], [n, h - extra_h, w - extra_w, c])


def _conv_nhwc(ctx: RuleContext, forms: Forms, x: ir.Value, w_oihw: ir.Value, bias: ir.Value, pad: Sequence[int],
               strides: Sequence[int], dilations: Sequence[int], dtype: str, depthwise_mult: int | None = None,
               transposed: bool = False, padded: bool = False, group: bool = False) -> ir.Value:
    """One convolution; x NHWC, w OIHW (or [C*M, 1, KH, KW] for depthwise): the target's own form
    (`forms.convolution`), the generic 1x1 product, or TOSA's. `transposed`: the result is
    transposed later (`_transposed_later`); `padded`: padded later (`_padded_later`); `group`:
    one group of a grouped convolution (`ctx`: the rule's context). An input with a dynamic height
    or width takes the windows.py form."""
    if not dims.is_static(C.shape_of(x)):
        return _dynamic_conv(x, w_oihw, bias, pad, strides, dilations, dtype, depthwise_mult)
    if depthwise_mult is None:
        y = forms.convolution(ctx, Convolution(x, w_oihw, bias, pad, strides, dilations, transposed, padded, group))
        if y is not None:
            return y
        w_cf = pointwise.weights(x, w_oihw, pad, dilations, strides)
        if w_cf is not None:
            return pointwise.conv1x1(ctx.run, x, w_cf, bias, strides)
    n, h, wd, c = C.shape_of(x)
    o, _, kh, kw = C.shape_of(w_oihw)
    pt, pb, pl, pr = pad
    pb, cut_h, extra_h = fit_padding(h, kh, pt, pb, strides[0], dilations[0])
    pr, cut_w, extra_w = fit_padding(wd, kw, pl, pr, strides[1], dilations[1])
    if cut_h or cut_w:
        x = C.slice_(x, [0, 0, 0, 0], [n, h - cut_h, wd - cut_w, c])
        h, wd = h - cut_h, wd - cut_w
    oh = (h + pt + pb - ((kh - 1) * dilations[0] + 1)) // strides[0] + 1
    ow = (wd + pl + pr - ((kw - 1) * dilations[1] + 1)) // strides[1] + 1
    el = C.element_of(x)
    out_t = C.tensor_type([n, oh, ow, o], el)
    zp = C.zero_point(dtype)
    arr = ir.DenseI64ArrayAttr.get
    attrs = dict(pad=arr([int(v) for v in (pt, pb, pl, pr)]), stride=arr([int(v) for v in strides]),
                 dilation=arr([int(v) for v in dilations]), acc_type=ir.TypeAttr.get(_f32()))
    if depthwise_mult is not None and n > 1:
        # IREE 3.13 (with im2col) fails to compile batched depthwise convolutions (an ill-typed
        # linalg.batch_matvec): one convolution per image
        return C.concat([_conv_nhwc(ctx, forms, C.slice_(x, [b, 0, 0, 0], [1, h, wd, c]), w_oihw, bias, pad,
                                    strides, dilations, dtype, depthwise_mult) for b in range(n)], 0)
    if depthwise_mult is not None:
        weight = C.transpose(C.reshape(w_oihw, [c, depthwise_mult, kh, kw]), [2, 3, 0, 1])
        y = tosa.depthwise_conv2d(out_t, x, weight, bias, zp, C.zero_point(dtype), **attrs)
    else:
        weight = C.transpose(w_oihw, [0, 2, 3, 1])
        y = tosa.conv2d(out_t, x, weight, bias, zp, C.zero_point(dtype), **attrs)
    return drop_end_rows(y, extra_h, extra_w)


def _dynamic_conv(x: ir.Value, w_oihw: ir.Value, bias: ir.Value, pad: Sequence[int], strides: Sequence[int],
                  dilations: Sequence[int], dtype: str, depthwise_mult: int | None) -> ir.Value:
    """A convolution of an input with a dynamic height or width (windows.py)."""
    _, h, wd, c = C.shape_of(x)
    o, _, kh, kw = C.shape_of(w_oihw)
    out_hw = [conv_out_size(s, k, pad[2 * i], pad[2 * i + 1], strides[i], dilations[i])
              for i, (s, k) in enumerate(((h, kh), (wd, kw)))]
    if depthwise_mult is not None:
        weight = C.transpose(C.reshape(w_oihw, [c, depthwise_mult, kh, kw]), [2, 3, 0, 1])
        return windows.conv2d(x, None, bias, pad, strides, dilations, out_hw, dtype, depthwise=weight)
    return windows.conv2d(x, C.transpose(w_oihw, [0, 2, 3, 1]), bias, pad, strides, dilations, out_hw, dtype)


def grouped_conv_nhwc(ctx: RuleContext, forms: Forms, x: ir.Value, w_oihw: ir.Value, bias: ir.Value | None,
                      groups: int, pad: Sequence[int], strides: Sequence[int], dilations: Sequence[int], dtype: str,
                      transposed: bool = False, padded: bool = False) -> ir.Value:
    """NHWC convolution with `groups` (plain, depthwise, or one convolution per group)."""
    c = C.shape_of(x)[3]
    o, i = C.shape_of(w_oihw)[:2]
    bias = _bias_or_zero(bias, o, dtype)
    if groups == 1:
        return _conv_nhwc(ctx, forms, x, w_oihw, bias, pad, strides, dilations, dtype, transposed=transposed,
                          padded=padded)
    if i == 1 and groups == c:
        return _conv_nhwc(ctx, forms, x, w_oihw, bias, pad, strides, dilations, dtype, depthwise_mult=o // c)
    og = o // groups
    n, h, wd, _ = C.shape_of(x)
    kh, kw = C.shape_of(w_oihw)[2:]
    if dims.is_static(C.shape_of(x)) and isinstance(C.element_of(x), ir.F32Type):
        return _grouped_conv(x, w_oihw, bias, groups, pad, strides, dilations)
    outs = []
    for g in range(groups):
        xg = C.slice_(x, [0, 0, 0, g * i], [n, h, wd, i])
        wg = C.slice_(w_oihw, [g * og, 0, 0, 0], [og, i, kh, kw])
        bg = C.slice_(bias, [g * og], [og])
        outs.append(_conv_nhwc(ctx, forms, xg, wg, bg, pad, strides, dilations, dtype, group=True))
    return C.concat(outs, 3)


def _grouped_conv(x: ir.Value, w_oihw: ir.Value, bias: ir.Value, groups: int, pad: Sequence[int],
                  strides: Sequence[int], dilations: Sequence[int]) -> ir.Value:
    """A float grouped convolution as one batched matrix product over the groups: the windows
    copied out once per group ([G, N*OH*OW, KH*KW*C/G], windows.window_columns) times the
    [G, KH*KW*C/G, F/G] weights. One product where a convolution per group made G slices, G
    convolutions and a concatenation (and IREE's constant evaluation compiled a program per weight
    slice: RegNetY's 55-group layers took minutes to compile); IREE's own grouped convolution
    (linalg.conv_2d_nhwgc_gfhwc) compiles to scalar loops."""
    n, h, wd, c = C.shape_of(x)
    o, i, kh, kw = C.shape_of(w_oihw)
    og = o // groups
    pt, pb, pl, pr = pad
    x = C.pad_constant(x, [(0, 0), (pt, pb), (pl, pr), (0, 0)], 0.0, "float32")
    oh = conv_out_size(h, kh, pt, pb, strides[0], dilations[0])
    ow = conv_out_size(wd, kw, pl, pr, strides[1], dilations[1])
    rows = n * oh * ow
    columns = windows.window_columns(x, [n, oh, ow, kh, kw, c], strides, dilations, groups=groups)
    columns = C.reshape(columns, [groups, rows, kh * kw * i])
    weights = C.reshape(C.transpose(C.reshape(w_oihw, [groups, og, i, kh, kw]), [0, 3, 4, 2, 1]),
                        [groups, kh * kw * i, og])
    f32 = _f32()
    y = tosa.matmul(C.tensor_type([groups, rows, og], f32), columns, weights, C.zero_point("float32"),
                    C.zero_point("float32"))
    y = C.reshape(C.transpose(y, [1, 0, 2]), [n, oh, ow, o])
    return tosa.add(C.tensor_type([n, oh, ow, o], f32), y, C.reshape(bias, [1, 1, 1, o]))


def _widen(values, dtype):
    """float16 convolutions accumulate in float32: cast operands up (results are cast back)."""
    if dtype != "float16":
        return values
    return [None if v is None else tosa.cast(C.tensor_type(C.shape_of(v), _f32()), v) for v in values]


def _narrow(y, dtype):
    return tosa.cast(C.tensor_type(C.shape_of(y), ir.F16Type.get()), y) if dtype == "float16" else y


_ELEMENTWISE = {f"nn.{name}" for name in ("relu", "clamp", "add", "sub", "mul", "sigmoid", "tanh", "leaky_relu",
                                           "elu", "gelu", "hard_sigmoid", "hard_swish", "prelu")}


def _consumer(op, depth=4):
    """The op `op`'s result reaches through single-use element-wise ops, or None (several uses)."""
    value = op.results[0]
    for _ in range(depth):
        users = [use.owner for use in value.uses]
        if len(users) != 1:
            return None
        if users[0].name not in _ELEMENTWISE:
            return users[0]
        value = users[0].results[0]
    return None


def _transposed_later(op):
    """True when `op`'s result reaches an nn.transpose through single-use element-wise ops (an
    NCHW model output): IREE fuses that transpose into the Winograd output pass, whose writes
    then go across the channels and it gets many times slower, so such a convolution stays
    direct (docs/performance.md)."""
    consumer = _consumer(op)
    return consumer is not None and consumer.name == "nn.transpose"


def _padded_later(op):
    """True when `op`'s result reaches a padded convolution or pooling through single-use
    element-wise ops (IREE then writes it into the padded buffer and does not data-tile it)."""
    consumer = _consumer(op)
    return (consumer is not None and "padding" in consumer.attributes
            and any(ir.DenseI64ArrayAttr(consumer.attributes["padding"])))


@lowering("conv2d")
def lower_conv2d(n: RuleContext, forms: Forms = GENERIC) -> ir.Value:
    x, w, bias = _widen(n.inputs, n.out.dtype)
    a = n.attrs
    x = _to_nhwc(x, a["input_layout"])
    w = C.transpose(w, TO_OIHW[a["filter_layout"]])
    y = grouped_conv_nhwc(n, forms, x, w, bias, a["groups"], a["padding"], a["strides"], a["dilations"],
                          "float32" if n.out.dtype == "float16" else n.out.dtype,
                          transposed=_transposed_later(n.op.operation), padded=_padded_later(n.op.operation))
    return _from_nhwc(_narrow(y, n.out.dtype), a["input_layout"])


def _zero_stuff(x, sh, sw, dtype):
    """Insert (stride - 1) zeros between input pixels (NHWC)."""
    if sh == 1 and sw == 1:
        return x
    n, h, w, c = C.shape_of(x)
    t = C.reshape(x, [n, h, 1, w, 1, c])
    t = C.pad_constant(t, [(0, 0), (0, 0), (0, sh - 1), (0, 0), (0, sw - 1), (0, 0)], 0, dtype)
    t = C.reshape(t, [n, h * sh, w * sw, c])
    return C.slice_(t, [0, 0, 0, 0], [n, (h - 1) * sh + 1, (w - 1) * sw + 1, c])


@lowering("conv_transpose2d")
def lower_conv_transpose2d(n: RuleContext, forms: Forms = GENERIC) -> ir.Value:
    x, w, bias = _widen(n.inputs, n.out.dtype)
    a = n.attrs
    dtype = "float32" if n.out.dtype == "float16" else n.out.dtype
    groups = a["groups"]
    x = _to_nhwc(x, a["input_layout"])
    w = C.transpose(w, TO_IOHW[a["filter_layout"]])  # [I, O/g, KH, KW]
    i, og, kh, kw = C.shape_of(w)
    ig = i // groups
    # per group: OIHW filter [O/g, I/g, KH, KW], spatially flipped
    parts = []
    for g in range(groups):
        wg = C.slice_(w, [g * ig, 0, 0, 0], [ig, og, kh, kw])
        parts.append(C.transpose(wg, [1, 0, 2, 3]))
    w_conv = C.concat(parts, 0)
    w_conv = tosa.reverse(w_conv.type, tosa.reverse(w_conv.type, w_conv, 2), 3)
    oh, ow = (n.out.shape[2], n.out.shape[3]) if a["input_layout"] == "nchw" else n.out.shape[1:3]
    sh, sw = a["strides"]
    dh, dw = a["dilations"]
    pt, pb, pl, pr = a["padding"]
    stuffed = _zero_stuff(x, sh, sw, dtype)
    _, hs, ws, _ = C.shape_of(stuffed)
    begin_h, begin_w = dh * (kh - 1) - pt, dw * (kw - 1) - pl
    # the end padding follows from the requested output size (covers outputPadding / outputSizes)
    end_h = oh - 1 + (kh - 1) * dh + 1 - hs - begin_h
    end_w = ow - 1 + (kw - 1) * dw + 1 - ws - begin_w
    stuffed = _pad_and_crop(stuffed, [begin_h, end_h, begin_w, end_w], dtype)
    if _accumulate_exactly(n, stuffed, w_conv):
        if n.options.gpu:
            y = _conv_compensated(stuffed, w_conv, bias, groups, [dh, dw])
        else:
            y = _conv_f64(stuffed, w_conv, bias, groups, [dh, dw])
            n.run.results["keep_f64"] = True  # IREE would demote the float64 accumulator to float32
        return _from_nhwc(_narrow(y, n.out.dtype), a["input_layout"])
    y = grouped_conv_nhwc(n, forms, stuffed, w_conv, bias, groups, [0, 0, 0, 0], [1, 1], [dh, dw], dtype,
                          transposed=_transposed_later(n.op.operation), padded=_padded_later(n.op.operation))
    return _from_nhwc(_narrow(y, n.out.dtype), a["input_layout"])


# Transposed convolutions up to this many multiply-adds (zero-stuffed) accumulate exactly: in
# float64 on the CPU, in compensated float32 on GPUs
F64_CONV_TRANSPOSE_MACS = 1 << 16  # IREE runs these convs unvectorized: keep them small


def _accumulate_exactly(n, x, w_oihw):
    """Whether a float transposed convolution accumulates with one final rounding (when small).
    Its zero-stuffed sums cancel often (overlapping taps of mixed sign), where float32
    accumulation in any order can miss by far more than the WebNN conformance budget (2 ULP per
    term)."""
    if n.out.dtype not in ("float32", "float16"):
        return False
    nb, h, wd, _ = C.shape_of(x)
    o, i, kh, kw = C.shape_of(w_oihw)
    return nb * h * wd * o * i * kh * kw <= F64_CONV_TRANSPOSE_MACS


def _conv_f64(x, w_oihw, bias, groups, dilations):
    """Stride-1 unpadded NHWC convolution of float32 operands accumulated in float64 (products of
    two float32 are exact in float64), plus bias, rounded once to float32."""
    f32, f64 = _f32(), ir.F64Type.get()
    nb, h, wd, c = C.shape_of(x)
    o, i, kh, kw = C.shape_of(w_oihw)
    oh, ow = h - (kh - 1) * dilations[0], wd - (kw - 1) * dilations[1]
    og = o // groups
    outs = []
    for g in range(groups):
        xg = x if groups == 1 else C.slice_(x, [0, 0, 0, g * i], [nb, h, wd, i])
        wg = w_oihw if groups == 1 else C.slice_(w_oihw, [g * og, 0, 0, 0], [og, i, kh, kw])
        init = linalg.fill(arith.constant(f64, 0.0), outs=[tensor.empty([nb, oh, ow, og], f64)])
        outs.append(linalg.conv_2d_nhwc_fhwc(xg, C.transpose(wg, [0, 2, 3, 1]), outs=[init],
                                             strides=[1, 1], dilations=list(dilations)))
    y = C.concat(outs, 3)
    if bias is None:
        return C.elementwise([nb, oh, ow, o], f32, [y], lambda v: arith.truncf(f32, v))
    b = C.reshape(bias, [1, 1, 1, o])
    return C.elementwise([nb, oh, ow, o], f32, [y, b], lambda v, bv: arith.truncf(f32, arith.addf(v, arith.extf(f64, bv))))


def _conv_compensated(x, w_oihw, bias, groups, dilations):
    """_conv_f64 without float64 (optional on Vulkan devices): each product's rounding error
    (fma) and each sum's (TwoSum) gather in a second float32 accumulator, added to the sum at the
    end: about twice float32's precision, one final rounding. The bias starts the sum."""
    f32 = _f32()
    nb, h, wd, c = C.shape_of(x)
    o, i, kh, kw = C.shape_of(w_oihw)
    oh, ow = h - (kh - 1) * dilations[0], wd - (kw - 1) * dilations[1]
    og = o // groups
    d = [ir.AffineDimExpr.get(k) for k in range(7)]  # n, oh, ow, o, kh, kw, i

    def shifted(out_dim, tap, dilation):
        return ir.AffineAddExpr.get(out_dim, ir.AffineMulExpr.get(tap, ir.AffineConstantExpr.get(dilation)))

    maps = [[d[0], shifted(d[1], d[4], dilations[0]), shifted(d[2], d[5], dilations[1]), d[6]],
            [d[3], d[4], d[5], d[6]], [d[0], d[1], d[2], d[3]], [d[0], d[1], d[2], d[3]]]
    iters = [C.PARALLEL] * 4 + [C.REDUCTION] * 3
    outs = []
    for g in range(groups):
        xg = x if groups == 1 else C.slice_(x, [0, 0, 0, g * i], [nb, h, wd, i])
        wg = w_oihw if groups == 1 else C.slice_(w_oihw, [g * og, 0, 0, 0], [og, i, kh, kw])
        shape = [nb, oh, ow, og]
        zeros = linalg.fill(arith.constant(f32, 0.0), outs=[tensor.empty(shape, f32)])
        if bias is None:
            start = zeros
        else:
            bg = C.reshape(bias if groups == 1 else C.slice_(bias, [g * og], [og]), [1, 1, 1, og])
            start = C.elementwise(shape, f32, [bg], lambda v: v)
        op = linalg.GenericOp([C.tensor_type(shape, f32)] * 2, [xg, C.transpose(wg, [0, 2, 3, 1])], [start, zeros],
                              ir.ArrayAttr.get([ir.AffineMapAttr.get(ir.AffineMap.get(7, 0, m)) for m in maps]),
                              ir.ArrayAttr.get([ir.Attribute.parse(k) for k in iters]))
        block = op.regions[0].blocks.append(f32, f32, f32, f32)
        with ir.InsertionPoint(block):
            a, b, hi, lo = block.arguments
            p = arith.mulf(a, b)
            p_err = _product_error(a, b, p)
            s = arith.addf(hi, p)
            b_virtual = arith.subf(s, hi)  # TwoSum: hi + p = s + s_err exactly
            s_err = arith.addf(arith.subf(hi, arith.subf(s, b_virtual)), arith.subf(p, b_virtual))
            linalg.YieldOp([s, arith.addf(lo, arith.addf(s_err, p_err))])
        outs.append(C.elementwise(shape, f32, list(op.results), lambda v, e: arith.addf(v, e)))
    return outs[0] if groups == 1 else C.concat(outs, 3)


def _split(v):
    """Veltkamp's split of a float32 into two halves of 12 significant bits (hi + lo = v). The
    scaling is an fma with +0 (4097 v rounded) so that no compiler contracts it with c - v."""
    c = mathd.fma(arith.constant(_f32(), 4097.0), v, arith.constant(_f32(), 0.0))
    hi = arith.subf(c, arith.subf(c, v))
    return hi, arith.subf(v, hi)


def _product_error(a, b, p):
    """a*b - p exactly for p = fl(a*b) (Dekker's TwoProduct): Vulkan's Fma need not be fused."""
    ah, al = _split(a)
    bh, bl = _split(b)
    e = arith.addf(arith.subf(arith.mulf(ah, bh), p), arith.mulf(ah, bl))
    return arith.addf(arith.addf(e, arith.mulf(al, bh)), arith.mulf(al, bl))


def _pad_and_crop(x, pads, dtype):
    """Apply [top, bottom, left, right] to NHWC `x`: positive entries pad with zeros, negative ones
    crop (padding first, so a crop may reach into the padding when the padding exceeds the kernel)."""
    top, bottom, left, right = (max(p, 0) for p in pads)
    x = C.pad_constant(x, [(0, 0), (top, bottom), (left, right), (0, 0)], 0, dtype)
    n, h, w, c = C.shape_of(x)
    top, bottom, left, right = (max(-p, 0) for p in pads)
    if not (top or bottom or left or right):
        return x
    return C.slice_(x, [0, top, left, 0], [n, h - top - bottom, w - left - right, c])
