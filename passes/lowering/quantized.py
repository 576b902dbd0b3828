"""Lowering rules: Quantized (uint8 asymmetric) ops and quantize/dequantize conversions.

Integer only. uint8 tensors enter TOSA convolutions/matmuls as int8 (x xor 0x80 = x - 128, with
the zero points shifted by -128), which TOSA accumulates in int32 with its zero-point operands.
Requantization is a linalg.generic in int64: acc * m >> s with m a 31-bit multiplier and s a shift
(m / 2^s = the real multiplier to ~2^-31 relative), rounding half away from zero, + zero point,
clamped. Pool sums, softmax and table lookups are linalg/TOSA int32.

A target may read a padded convolution's int8 input, and a matrix-vector product's depth-padded
operands, its own way (`Forms.int8_padded_input`, `Forms.int8_depth_padding`): llvm-cpu puts the
former behind an optimization barrier and marks both for its pad fusion
(backends/llvm_cpu/lowering/forms.py, pad_fusion.py).
"""
from __future__ import annotations

import math

import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import arith, linalg, tensor, tosa

from estuary.dialects.ops.pooling import valid_counts
from estuary.passes.lowering import RuleContext, lowering
from estuary.passes.lowering import common as C
from estuary.passes.lowering.convolution import drop_end_rows, fit_padding
from estuary.passes.lowering.forms import GENERIC, Forms


def _i(width):
    return ir.IntegerType.get_signless(width)


def fixed_point(multiplier):
    """(m, s) with m < 2^31 and m / 2^s ~= multiplier."""
    f, e = math.frexp(multiplier)  # multiplier = f * 2^e, f in [0.5, 1)
    m = int(round(f * (1 << 31)))
    if m == 1 << 31:
        m, e = m // 2, e + 1
    s = 31 - e
    if s > 62:
        m, s = m >> (s - 62), 62
    return m, s


def _widen(v, src_unsigned, width=64):
    """Scalar integer -> i<width> (zero-extended for uint8 storage, sign-extended otherwise)."""
    t = _i(width)
    if ir.IntegerType(v.type).width == width:
        return v
    return arith.extui(t, v) if src_unsigned else arith.extsi(t, v)


def _round_shift(p, s):
    """round_half_away_from_zero(p / 2^s) on an i64 scalar."""
    if s == 0:
        return p
    i64 = _i(64)
    half, shift, zero = C.scalar_const(i64, 1 << (s - 1)), C.scalar_const(i64, s), C.scalar_const(i64, 0)
    pos = arith.shrsi(arith.addi(p, half), shift)
    neg = arith.subi(zero, arith.shrsi(arith.addi(arith.subi(zero, p), half), shift))
    return arith.select(arith.cmpi(arith.CmpIPredicate.sge, p, zero), pos, neg)


def requantize(value, src_unsigned, in_zp, multiplier, out_zp, lo, hi, out_width=8):
    """clamp(round((value - in_zp) * multiplier) + out_zp, lo, hi) as i<out_width>."""
    m, s = fixed_point(multiplier)
    i64 = _i(64)

    def body(x):
        x = arith.subi(_widen(x, src_unsigned), C.scalar_const(i64, in_zp))
        y = _round_shift(arith.muli(x, C.scalar_const(i64, m)), s)
        y = arith.addi(y, C.scalar_const(i64, out_zp))
        y = arith.minsi(arith.maxsi(y, C.scalar_const(i64, lo)), C.scalar_const(i64, hi))
        return arith.trunci(_i(out_width), y)

    return C.elementwise(C.shape_of(value), _i(out_width), [value], body)


def to_int8(value):
    """uint8 storage -> int8 holding value - 128 (flip the top bit)."""
    i8 = _i(8)
    return C.elementwise(C.shape_of(value), i8, [value], lambda x: arith.xori(x, C.scalar_const(i8, -128)))


def _out_args(a):
    return a["multiplier"], a["output_zero_point"], a["output_min"], a["output_max"]


@lowering("dequantize")
def lower_dequantize(n):
    f32 = ir.F32Type.get()
    zp, scale = n.attrs["zero_point"], n.attrs["scale"]

    def body(x):
        q = arith.subi(arith.extui(_i(32), x), C.scalar_const(_i(32), zp))
        return arith.mulf(arith.sitofp(f32, q), C.scalar_const(f32, scale))

    return C.elementwise(C.shape_of(n.inputs[0]), f32, [n.inputs[0]], body)


@lowering("requantize")
def lower_requantize(n):
    a = n.attrs
    width = 8 if a["to"] == "uint8" else 32
    return requantize(n.inputs[0], n.in_specs[0].dtype == "uint8", a["input_zero_point"], *_out_args(a), width)


@lowering("table_lookup")
def lower_table_lookup(n):
    x, table = n.inputs
    el = C.element_of(table)

    def body(q):
        index = arith.index_cast(ir.IndexType.get(), arith.extui(_i(32), q))
        return tensor.extract(table, [index])

    return C.elementwise(C.shape_of(x), el, [x], body)


@lowering("quantized_conv2d")
def lower_quantized_conv2d(n: RuleContext, forms: Forms = GENERIC) -> ir.Value:
    a = n.attrs
    x, w = n.inputs[0], n.inputs[1]
    bias = n.inputs[2] if len(n.inputs) > 2 and n.inputs[2] is not None else None
    nb, h, wd, c = C.shape_of(x)
    depthwise = a["filter_layout"] == "ihwo"
    kh, kw = C.shape_of(w)[1:3]
    o = C.shape_of(w)[3] if depthwise else C.shape_of(w)[0]
    pt, pb, pl, pr = a["padding"]
    pb, cut_h, extra_h = fit_padding(h, kh, pt, pb, a["strides"][0])
    pr, cut_w, extra_w = fit_padding(wd, kw, pl, pr, a["strides"][1])
    x = C.slice_(x, [0, 0, 0, 0], [nb, h - cut_h, wd - cut_w, c])
    h, wd = h - cut_h, wd - cut_w
    oh = (h + pt + pb - kh) // a["strides"][0] + 1
    ow = (wd + pl + pr - kw) // a["strides"][1] + 1
    x8, w8 = to_int8(x), to_int8(w)
    if any(a["padding"]):
        x8 = forms.int8_padded_input(x8)
    if bias is None:
        bias = C.const(np.zeros(o), "int32")
    izp = C.zero_point("int8", a["input_zero_point"] - 128)
    wzp = C.zero_point("int8", a["filter_zero_point"] - 128)
    arr = ir.DenseI64ArrayAttr.get
    attrs = dict(pad=arr([pt, pb, pl, pr]), stride=arr(list(a["strides"])), dilation=arr([1, 1]),
                 acc_type=ir.TypeAttr.get(_i(32)))
    if depthwise:
        w8 = C.reshape(w8, [kh, kw, c, o // c])
        images = []
        for i in range(nb):  # one depthwise convolution per image (see convolution.py)
            xi = C.slice_(x8, [i, 0, 0, 0], [1, h, wd, c])
            images.append(tosa.depthwise_conv2d(C.tensor_type([1, oh, ow, o], _i(32)), xi, w8, bias, izp, wzp,
                                                **attrs))
        acc = C.concat(images, 0)
    else:
        if kh == kw == 1 and nb * oh * ow == 1:  # one pixel: IREE makes it an int8 matrix-vector product
            x8, w8 = (_pad_depth(forms, x8, 3, a["input_zero_point"] - 128),
                      _pad_depth(forms, w8, 3, a["filter_zero_point"] - 128))
        acc = tosa.conv2d(C.tensor_type([nb, oh, ow, o], _i(32)), x8, w8, bias, izp, wzp, **attrs)
    return requantize(drop_end_rows(acc, extra_h, extra_w), False, 0, *_out_args(a))


def _pad_depth(forms: Forms, v8: ir.Value, axis: int, zero_point: int, multiple: int = 8) -> ir.Value:
    """`v8` padded along the reduced `axis` to a multiple of `multiple` with its zero point, which
    adds nothing to the product. IREE's llvm-cpu data tiling fails on an int8 matrix-vector
    product whose depth is not such a multiple ("'memref.store' op write affecting operations on
    global resources are restricted to workgroup distributed contexts"), e.g. a single-pixel
    1x1 convolution or a batch-1 fully connected layer over 3 or 7 values. (`forms`: the target's
    forms, which see the padded operand.)"""
    depth = C.shape_of(v8)[axis]
    if depth % multiple == 0:
        return v8
    pads = [(0, 0)] * len(C.shape_of(v8))
    pads[axis] = (0, -depth % multiple)
    return forms.int8_depth_padding(C.pad_constant(v8, pads, zero_point, "int8"))


@lowering("quantized_matmul")
def lower_quantized_matmul(n: RuleContext, forms: Forms = GENERIC) -> ir.Value:
    a = n.attrs
    x, w = n.inputs[0], n.inputs[1]
    bias = n.inputs[2] if len(n.inputs) > 2 and n.inputs[2] is not None else None
    m, k = C.shape_of(x)
    units = C.shape_of(w)[0]
    x8, w8 = to_int8(x), to_int8(w)
    if m == 1:  # a matrix-vector product (see _pad_depth)
        x8, w8 = _pad_depth(forms, x8, 1, a["a_zero_point"] - 128), _pad_depth(forms, w8, 1, a["b_zero_point"] - 128)
        k = C.shape_of(x8)[1]
    a8 = C.reshape(x8, [1, m, k])
    b8 = C.reshape(C.transpose(w8, [1, 0]), [1, k, units])
    acc = tosa.matmul(C.tensor_type([1, m, units], _i(32)), a8, b8, C.zero_point("int8", a["a_zero_point"] - 128),
                      C.zero_point("int8", a["b_zero_point"] - 128))
    acc = C.reshape(acc, [m, units])
    if bias is not None:
        acc = tosa.add(acc.type, acc, C.reshape(bias, [1, units]))
    return requantize(acc, False, 0, *_out_args(a))


@lowering("quantized_average_pool2d")
def lower_quantized_average_pool2d(n):
    a = n.attrs
    x = n.inputs[0]
    nb, h, w, c = C.shape_of(x)
    (kh, kw), (sh, sw), pad = a["window_dimensions"], a["strides"], a["padding"]
    oh, ow = n.out_specs[0].shape[1:3]
    i32 = _i(32)
    x32 = C.elementwise([nb, h, w, c], i32, [x], lambda q: arith.extui(i32, q))
    x32 = C.pad_constant(x32, [(0, 0), (pad[0], pad[1]), (pad[2], pad[3]), (0, 0)], 0, "int32")
    init = linalg.fill(C.scalar_const(i32, 0), outs=[tensor.empty([nb, oh, ow, c], i32)])
    sums = linalg.pooling_nhwc_sum(x32, tensor.empty([kh, kw], i32), outs=[init], strides=[sh, sw], dilations=[1, 1])
    count = valid_counts(h, w, kh, kw, pad, [sh, sw], [1, 1], oh, ow).astype(np.int64)
    count = C.const(count.reshape(1, oh, ow, 1), "int32")
    lo, hi = a["output_min"], a["output_max"]

    def body(s, k):
        q = arith.divsi(arith.addi(s, arith.divsi(k, C.scalar_const(i32, 2))), k)
        q = arith.minsi(arith.maxsi(q, C.scalar_const(i32, lo)), C.scalar_const(i32, hi))
        return arith.trunci(_i(8), q)

    return C.elementwise([nb, oh, ow, c], _i(8), [sums, count], body)


EXP_BITS = 16


@lowering("quantized_softmax")
def lower_quantized_softmax(n):
    x = n.inputs[0]
    shape = C.shape_of(x)
    axis = len(shape) - 1
    i32 = _i(32)
    x32 = C.elementwise(shape, i32, [x], lambda q: arith.extui(i32, q))
    top = tosa.reduce_max(x32, axis)
    diff = tosa.sub(x32.type, top, x32)  # max - x in [0, 255]
    table = np.round(np.exp(-n.attrs["scale"] * np.arange(256, dtype=np.float64)) * (1 << EXP_BITS))
    table = C.const(table.astype(np.int64), "int32")

    def lookup(d):
        return tensor.extract(table, [arith.index_cast(ir.IndexType.get(), d)])

    e = C.elementwise(shape, i32, [diff], lookup)
    total = tosa.reduce_sum(e, axis)

    def body(v, s):  # round(v * 256 / s), v * 256 <= 2^24
        num = arith.addi(arith.muli(v, C.scalar_const(i32, 256)), arith.divsi(s, C.scalar_const(i32, 2)))
        q = arith.minsi(arith.divsi(num, s), C.scalar_const(i32, 255))
        return arith.trunci(_i(8), q)

    return C.elementwise(shape, _i(8), [e, total], body)
