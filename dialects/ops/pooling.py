"""nn ops: average/max/l2 2-D pooling (WebNN §7.7.32) and resample2d (§7.7.36).

Average and L2 pooling count only elements inside the input (padding never enters the divisor);
max pooling ignores padding. Windows may be dilated; "ceil" rounding adds windows at the end.
"""
import math

import numpy as np

from estuary import dtypes
from estuary.dialects.core import Floats, Ints, Str, TensorSpec, axes_valid, check, dtype_in, nn_op, rank_is

LAYOUTS = ("nchw", "nhwc")
ROUNDING = ("floor", "ceil")


def pool_geometry(shape, window_dimensions, padding, strides, dilations, layout, rounding_type, output_sizes):
    """(N, C, H, W, KH, KW, OH, OW) of a pooling; VerifyError for invalid options."""
    n, c, h, w = shape if layout == "nchw" else (shape[0], shape[3], shape[1], shape[2])
    kh, kw = window_dimensions if window_dimensions is not None else (h, w)
    check(len(padding) == 4, f"padding must have 4 entries, got {list(padding)}")
    check(len(strides) == 2 and all(s > 0 for s in strides), f"strides must be 2 positive values, got {list(strides)}")
    check(len(dilations) == 2 and all(d > 0 for d in dilations),
          f"dilations must be 2 positive values, got {list(dilations)}")
    check(kh > 0 and kw > 0, f"window dimensions must be positive, got {[kh, kw]}")
    sizes = []
    for size, k, pb, pe, s, d in zip((h, w), (kh, kw), padding[0::2], padding[1::2], strides, dilations):
        span = size + pb + pe - ((k - 1) * d + 1)
        check(span >= 0, f"window {k} (dilation {d}) is larger than the padded input {size + pb + pe}")
        sizes.append((span // s + 1, -(-span // s) + 1))
    if output_sizes is not None:
        check(len(output_sizes) == 2, f"output_sizes must have 2 entries, got {list(output_sizes)}")
        for d, (size, (lo, hi)) in enumerate(zip(output_sizes, sizes)):
            check(lo <= size <= hi, f"output_sizes[{d}] = {size} must be the floor ({lo}) or ceil ({hi}) size")
        oh, ow = output_sizes
    else:
        pick = 0 if rounding_type == "floor" else 1
        oh, ow = sizes[0][pick], sizes[1][pick]
    return n, c, h, w, kh, kw, oh, ow


def _windows(size, k, pad_begin, stride, dilation, out):
    """Per output position: the input indices its window covers (inside the input)."""
    return [[i for i in (o * stride - pad_begin + j * dilation for j in range(k)) if 0 <= i < size]
            for o in range(out)]


def _pool_ref(kind):
    def ref(x, window_dimensions, padding, strides, dilations, layout, rounding_type, output_sizes):
        xs = x.astype(np.float64)
        if layout == "nhwc":
            xs = xs.transpose(0, 3, 1, 2)
        n, c, h, w, kh, kw, oh, ow = pool_geometry(xs.shape, window_dimensions, padding, strides, dilations,
                                                   "nchw", rounding_type, output_sizes)
        rows = _windows(h, kh, padding[0], strides[0], dilations[0], oh)
        cols = _windows(w, kw, padding[2], strides[1], dilations[1], ow)
        out = np.zeros((n, c, oh, ow))
        for i, r in enumerate(rows):
            for j, q in enumerate(cols):
                patch = xs[:, :, r][:, :, :, q].reshape(n, c, -1)
                if kind == "max":
                    out[:, :, i, j] = patch.max(axis=2) if patch.shape[2] else -np.inf
                elif kind == "average":
                    out[:, :, i, j] = patch.mean(axis=2) if patch.shape[2] else 0
                else:
                    out[:, :, i, j] = np.sqrt((patch ** 2).sum(axis=2))
        if layout == "nhwc":
            out = out.transpose(0, 2, 3, 1)
        return out.astype(x.dtype)
    return ref


ATTRS = {"window_dimensions": Ints(None), "padding": Ints([0, 0, 0, 0]), "strides": Ints([1, 1]),
         "dilations": Ints([1, 1]), "layout": Str("nchw", LAYOUTS), "rounding_type": Str("floor", ROUNDING),
         "output_sizes": Ints(None)}


def _rule(allowed):
    def rule(input, window_dimensions, padding, strides, dilations, layout, rounding_type, output_sizes):
        rank_is(input, 4)
        if allowed:
            dtype_in(input, allowed)
        if window_dimensions is not None:
            check(len(window_dimensions) == 2, f"window_dimensions must have 2 entries, got {list(window_dimensions)}")
        n, c, _, _, _, _, oh, ow = pool_geometry(input.shape, window_dimensions, padding, strides, dilations,
                                                 layout, rounding_type, output_sizes)
        check(oh > 0 and ow > 0, f"output size {oh}x{ow} is not positive")
        return TensorSpec((n, c, oh, ow) if layout == "nchw" else (n, oh, ow, c), input.dtype)
    return rule


nn_op("average_pool2d", ["input"], dict(ATTRS), reference=_pool_ref("average"), family="pooling")(
    _rule(dtypes.FLOATS))
nn_op("l2_pool2d", ["input"], dict(ATTRS), reference=_pool_ref("l2"), family="pooling")(_rule(dtypes.FLOATS))
nn_op("max_pool2d", ["input"], dict(ATTRS), reference=_pool_ref("max"), family="pooling")(_rule(None))


# ---------------------------------------------------------------- resample2d (§7.7.36)

RESAMPLE_MODES = ("nearest-neighbor", "linear")


def resample_plan(in_size, out_size, scale, mode):
    """Source indices (and linear weights) of each output position along one axis.

    Half-pixel centres: x = (o + 0.5) / scale - 0.5. Nearest rounds half up (the TFLite /
    ONNX half_pixel + round_prefer_ceil convention); linear clamps x to [0, in_size - 1]."""
    o = np.arange(out_size, dtype=np.float64)
    x = (o + 0.5) / scale - 0.5
    if mode == "nearest-neighbor":
        return np.clip(np.floor(x + 0.5), 0, in_size - 1).astype(np.int64), None, None
    x = np.clip(x, 0, in_size - 1)
    i0 = np.floor(x).astype(np.int64)
    i1 = np.minimum(i0 + 1, in_size - 1)
    return i0, i1, x - i0


def _resample_scales(shape, scales, sizes, axes):
    if sizes is not None:
        return [sizes[k] / shape[a] for k, a in enumerate(axes)], list(sizes)
    return list(scales), [int(np.floor(shape[a] * s)) for a, s in zip(axes, scales)]


def _resample_ref(x, mode, scales, sizes, axes):
    y = x.astype(np.float64)
    factors, out_sizes = _resample_scales(x.shape, scales, sizes, axes)
    for a, f, size in zip(axes, factors, out_sizes):
        i0, i1, w = resample_plan(y.shape[a], size, f, mode)
        if i1 is None:
            y = np.take(y, i0, axis=a)
        else:
            shape = [1] * y.ndim
            shape[a] = -1
            y = np.take(y, i0, axis=a) * (1 - w.reshape(shape)) + np.take(y, i1, axis=a) * w.reshape(shape)
    return y


@nn_op("resample2d", ["input"], {"mode": Str("nearest-neighbor", RESAMPLE_MODES), "scales": Floats([1.0, 1.0]),
                                 "sizes": Ints(None), "axes": Ints([2, 3])}, reference=_resample_ref, family="pooling")
def resample2d(input, mode, scales, sizes, axes):
    """Resize two axes by `scales` (output floor(size * scale)) or to `sizes`."""
    dtype_in(input, dtypes.FLOATS)
    rank_is(input, 4)
    check(len(scales) == 2 and all(s > 0 for s in scales), f"scales must be 2 positive values, got {list(scales)}")
    if sizes is not None:
        check(len(sizes) == 2 and all(s > 0 for s in sizes), f"sizes must be 2 positive values, got {list(sizes)}")
    check(len(axes) == 2, f"axes must have 2 entries, got {list(axes)}")
    axes_valid(axes, input.rank)
    _, out_sizes = _resample_scales(input.shape, scales, sizes, axes)
    check(all(s > 0 for s in out_sizes), f"output sizes {out_sizes} must be positive")
    shape = list(input.shape)
    for a, s in zip(axes, out_sizes):
        shape[a] = s
    return input.with_shape(shape)
