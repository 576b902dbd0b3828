"""Declarations: Quantized (uint8 asymmetric) ops and quantize/dequantize conversions.

Real value = scale * (q - zero_point). Integer ops accumulate in int32 and requantize with
`q = clamp(round_half_away_from_zero(acc * multiplier) + output_zero_point, output_min, output_max)`,
where `multiplier` is the real rescale factor (e.g. input_scale * filter_scale / output_scale); the
lowering turns it into a 31-bit fixed-point multiplier and a right shift (exact integer arithmetic).
"""
import numpy as np

from estuary.dialects.core import Float, Int, Ints, Str, TensorSpec, check, dtype_in, nn_op, rank_is


def round_away(x):
    """Round half away from zero (Android's reference rounding)."""
    x = np.asarray(x, np.float64)
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _requant(acc, multiplier, zp, lo, hi):
    return np.clip(round_away(acc * multiplier) + zp, lo, hi)


def _zp(value, what):
    check(0 <= value <= 255, f"{what} must be in [0, 255], got {value}")


def _bounds(output_min, output_max, top=255):
    check(0 <= output_min <= output_max <= top,
          f"output bounds must satisfy 0 <= output_min <= output_max <= {top}, got [{output_min}, {output_max}]")


def _multiplier(multiplier):
    check(0 < multiplier < 2.0 ** 31 and np.isfinite(multiplier),
          f"multiplier must be positive and finite, got {multiplier}")


REQUANT = {"multiplier": Float(), "output_zero_point": Int(0), "output_min": Int(0), "output_max": Int(255)}


# ---------------------------------------------------------------- dequantize / requantize


def _dequantize_ref(x, scale, zero_point):
    return (x.astype(np.int64) - zero_point).astype(np.float32) * np.float32(scale)  # float32, as lowered


@nn_op("dequantize", ["input"], {"scale": Float(), "zero_point": Int(0)}, reference=_dequantize_ref, dynamic=True)
def dequantize(input, scale, zero_point):
    """scale * (input - zero_point) as float32."""
    dtype_in(input, ["uint8"])
    check(scale > 0 and np.isfinite(scale), f"scale must be positive, got {scale}")
    _zp(zero_point, "zero_point")
    return input.with_dtype("float32")


def _requantize_ref(x, input_zero_point, multiplier, output_zero_point, output_min, output_max, to):
    y = _requant(x.astype(np.int64) - input_zero_point, multiplier, output_zero_point, output_min, output_max)
    return y.astype(to)


@nn_op("requantize", ["input"], {"input_zero_point": Int(0), **REQUANT, "to": Str("uint8", ("uint8", "int32"))},
       reference=_requantize_ref, dynamic=True)
def requantize(input, input_zero_point, multiplier, output_zero_point, output_min, output_max, to):
    """clamp(round((input - input_zero_point) * multiplier) + output_zero_point, output_min, output_max)."""
    dtype_in(input, ["uint8", "int32"])
    _multiplier(multiplier)
    if to == "uint8":
        _zp(output_zero_point, "output_zero_point")
        _bounds(output_min, output_max)
    else:
        check(output_min <= output_max, f"output_min {output_min} exceeds output_max {output_max}")
    return input.with_dtype(to)


@nn_op("table_lookup", ["input", "table"], reference=lambda x, t: t[x.astype(np.int64)], dynamic=True)
def table_lookup(input, table):
    """table[input]: a 256-entry table indexed by each uint8 element (element-wise functions)."""
    dtype_in(input, ["uint8"])
    check(table.shape == (256,), f"table must have shape [256], got {list(table.shape)}")
    dtype_in(table, ["uint8", "int32"], "table")
    return input.with_dtype(table.dtype)


# ---------------------------------------------------------------- convolution, matmul, pooling (NHWC)


def _conv_geometry(input, filter, padding, strides, filter_layout):
    rank_is(input, 4)
    rank_is(filter, 4, "filter")
    check(len(padding) == 4 and all(p >= 0 for p in padding),
          f"padding must be 4 non-negative values [top, bottom, left, right], got {list(padding)}")
    check(len(strides) == 2 and all(s > 0 for s in strides), f"strides must be 2 positive values, got {list(strides)}")
    n, h, w, c = input.shape
    if filter_layout == "ohwi":
        o, kh, kw, i = filter.shape
        check(i == c, f"filter input channels {i} must equal input channels {c}")
    else:  # ihwo: depthwise [1, KH, KW, C * multiplier]
        i, kh, kw, o = filter.shape
        check(i == 1 and o % c == 0, f"depthwise filter must be [1, KH, KW, C*multiplier] for C={c}, "
                                     f"got {list(filter.shape)}")
    oh = (h + padding[0] + padding[1] - kh) // strides[0] + 1
    ow = (w + padding[2] + padding[3] - kw) // strides[1] + 1
    check(oh > 0 and ow > 0, f"output size {oh}x{ow} is not positive (kernel larger than padded input)")
    return n, oh, ow, o


def _bias(bias, channels):
    if bias is not None:
        dtype_in(bias, ["int32"], "bias")
        check(bias.shape == (channels,), f"bias must have shape [{channels}], got {list(bias.shape)}")


def _qconv_ref(x, w, b, input_zero_point, filter_zero_point, padding, strides, filter_layout, multiplier,
               output_zero_point, output_min, output_max):
    x = np.pad(x.astype(np.int64) - input_zero_point, [(0, 0), padding[:2], padding[2:], (0, 0)])
    w = w.astype(np.int64) - filter_zero_point
    n, h, wd, c = x.shape
    kh, kw = w.shape[1:3]
    oh, ow = (h - kh) // strides[0] + 1, (wd - kw) // strides[1] + 1
    o = w.shape[0] if filter_layout == "ohwi" else w.shape[3]
    acc = np.zeros((n, oh, ow, o), np.int64)
    for y in range(oh):
        for z in range(ow):
            win = x[:, y * strides[0]:y * strides[0] + kh, z * strides[1]:z * strides[1] + kw, :]
            if filter_layout == "ohwi":
                acc[:, y, z] = np.einsum("nhwc,ohwc->no", win, w)
            else:
                acc[:, y, z] = np.einsum("nhwc,hwcm->ncm", win, w[0].reshape(kh, kw, c, o // c)).reshape(n, o)
    if b is not None:
        acc += b
    return _requant(acc, multiplier, output_zero_point, output_min, output_max).astype(np.uint8)


@nn_op("quantized_conv2d", ["input", "filter", "bias?"],
       {"input_zero_point": Int(0), "filter_zero_point": Int(0), "padding": Ints([0, 0, 0, 0]),
        "strides": Ints([1, 1]), "filter_layout": Str("ohwi", ("ohwi", "ihwo")), **REQUANT},
       reference=_qconv_ref)
def quantized_conv2d(input, filter, bias, input_zero_point, filter_zero_point, padding, strides, filter_layout,
                     multiplier, output_zero_point, output_min, output_max):
    """NHWC uint8 convolution: OHWI filter, or ihwo = depthwise [1, KH, KW, C * multiplier]; int32
    accumulation of (input - input_zero_point) * (filter - filter_zero_point) + bias (padding
    contributes zero), then requantization."""
    dtype_in(input, ["uint8"])
    dtype_in(filter, ["uint8"], "filter")
    for v, what in ((input_zero_point, "input_zero_point"), (filter_zero_point, "filter_zero_point"),
                    (output_zero_point, "output_zero_point")):
        _zp(v, what)
    _multiplier(multiplier)
    _bounds(output_min, output_max)
    shape = _conv_geometry(input, filter, padding, strides, filter_layout)
    _bias(bias, shape[3])
    return TensorSpec(shape, "uint8")


def _qmatmul_ref(a, b, bias, a_zero_point, b_zero_point, multiplier, output_zero_point, output_min, output_max):
    acc = (a.astype(np.int64) - a_zero_point) @ (b.astype(np.int64) - b_zero_point).T
    if bias is not None:
        acc += bias
    return _requant(acc, multiplier, output_zero_point, output_min, output_max).astype(np.uint8)


@nn_op("quantized_matmul", ["a", "b", "bias?"], {"a_zero_point": Int(0), "b_zero_point": Int(0), **REQUANT},
       reference=_qmatmul_ref)
def quantized_matmul(a, b, bias, a_zero_point, b_zero_point, multiplier, output_zero_point, output_min, output_max):
    """(a - a_zero_point) [M, K] times (b - b_zero_point)^T (b is [N, K]) + bias, int32, requantized."""
    dtype_in(a, ["uint8"], "a")
    dtype_in(b, ["uint8"], "b")
    rank_is(a, 2, "a")
    rank_is(b, 2, "b")
    check(a.shape[1] == b.shape[1], f"a is {list(a.shape)} and b is {list(b.shape)}: inner sizes differ")
    for v, what in ((a_zero_point, "a_zero_point"), (b_zero_point, "b_zero_point"),
                    (output_zero_point, "output_zero_point")):
        _zp(v, what)
    _multiplier(multiplier)
    _bounds(output_min, output_max)
    _bias(bias, b.shape[0])
    return TensorSpec((a.shape[0], b.shape[0]), "uint8")


def _qavg_ref(x, window_dimensions, padding, strides, output_min, output_max):
    n, h, w, c = x.shape
    kh, kw = window_dimensions
    oh = (h + padding[0] + padding[1] - kh) // strides[0] + 1
    ow = (w + padding[2] + padding[3] - kw) // strides[1] + 1
    out = np.zeros((n, oh, ow, c), np.uint8)
    for y in range(oh):
        for z in range(ow):
            y0, z0 = y * strides[0] - padding[0], z * strides[1] - padding[2]
            win = x[:, max(y0, 0):min(y0 + kh, h), max(z0, 0):min(z0 + kw, w), :].astype(np.int64)
            count = win.shape[1] * win.shape[2]
            out[:, y, z] = np.clip((win.sum((1, 2)) + count // 2) // count, output_min, output_max)
    return out


@nn_op("quantized_average_pool2d", ["input"],
       {"window_dimensions": Ints(), "padding": Ints([0, 0, 0, 0]), "strides": Ints([1, 1]),
        "output_min": Int(0), "output_max": Int(255)}, reference=_qavg_ref)
def quantized_average_pool2d(input, window_dimensions, padding, strides, output_min, output_max):
    """NHWC uint8 average over each window's non-padding elements: (sum + count / 2) / count in
    integers (Android's reference), clamped to [output_min, output_max]; same scale/zero point."""
    dtype_in(input, ["uint8"])
    rank_is(input, 4)
    check(len(window_dimensions) == 2 and all(k > 0 for k in window_dimensions),
          f"window_dimensions must be 2 positive values, got {list(window_dimensions)}")
    check(len(padding) == 4 and all(0 <= p for p in padding),
          f"padding must be 4 non-negative values, got {list(padding)}")
    check(padding[0] < window_dimensions[0] and padding[1] < window_dimensions[0] and
          padding[2] < window_dimensions[1] and padding[3] < window_dimensions[1],
          f"padding {list(padding)} must be smaller than the window {list(window_dimensions)}")
    check(len(strides) == 2 and all(s > 0 for s in strides), f"strides must be 2 positive values, got {list(strides)}")
    _bounds(output_min, output_max)
    n, h, w, c = input.shape
    oh = (h + padding[0] + padding[1] - window_dimensions[0]) // strides[0] + 1
    ow = (w + padding[2] + padding[3] - window_dimensions[1]) // strides[1] + 1
    check(oh > 0 and ow > 0, f"output size {oh}x{ow} is not positive")
    return input.with_shape((n, oh, ow, c))


def _qsoftmax_ref(x, scale):
    d = x.astype(np.float64) - x.max(-1, keepdims=True)
    e = np.exp(scale * d)
    return np.clip(round_away(e / e.sum(-1, keepdims=True) * 256), 0, 255).astype(np.uint8)


@nn_op("quantized_softmax", ["input"], {"scale": Float()}, reference=_qsoftmax_ref)
def quantized_softmax(input, scale):
    """Softmax over the last axis of exp(scale * (input - max)), quantized with scale 1/256 and
    zero point 0 (NNAPI's output type). Integer: a 2^16 fixed-point exp table and integer division."""
    dtype_in(input, ["uint8"])
    check(scale > 0 and np.isfinite(scale), f"scale must be positive, got {scale}")
    check(input.rank >= 1 and input.shape[-1] <= 16384,
          f"the softmax axis may hold at most 16384 elements, got {list(input.shape)}")
    return input
