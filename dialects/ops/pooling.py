"""nn ops: average/max/l2 2-D pooling (WebNN §7.7.32) and resample2d (§7.7.36).

Pooling windows may be dilated and may reach into (or, with "ceil" rounding or large padding,
past) the padding. Average and L2 pooling reduce only the elements inside the input (padding
never enters the divisor); max pooling ignores padding. A window that holds no input element
yields 0 (average, l2: the empty sum) or the lowest value of the type (max: the identity of max).
"""
import math
from fractions import Fraction

import numpy as np

from estuary.base import dims, dtypes
from estuary.dialects.core import Floats, Ints, Str, axes_valid, check, check_size, dtype_in, nn_op, rank_is

LAYOUTS = ("nchw", "nhwc")
ROUNDING = ("floor", "ceil")
MAX_DIMENSION = 2 ** 31 - 1  # a valid dimension is in the range of WebIDL `long`


def _pairs(values, what):
    check(len(values) == 2, f"{what} must have 2 entries, got {list(values)}")
    check(all(isinstance(v, dims.Dim) or v > 0 for v in values), f"{what} must be positive, got {list(values)}")


def _conv_output_size(size, k, pad_begin, pad_end, stride, dilation):
    """floor and ceil of (size - ((k - 1) * dilation + 1) + pad_begin + pad_end) / stride + 1, exactly."""
    span = size + pad_begin + pad_end - ((k - 1) * dilation + 1)
    return span // stride + 1, -(-span // stride) + 1


def pool_geometry(shape, window_dimensions, padding, strides, dilations, layout, rounding_type, output_sizes):
    """(N, C, H, W, KH, KW, OH, OW) of a pooling; VerificationError for every invalid option (spec order).

    outputSizes must be the floor or the ceil candidate in both dimensions (as Chromium and the
    WPT validation tests have it); the padding is kept when outputSizes is given (WPT)."""
    n, c, h, w = shape if layout == "nchw" else (shape[0], shape[3], shape[1], shape[2])
    window = [h, w] if window_dimensions is None else list(window_dimensions)
    _pairs(window, "window_dimensions")
    check(len(padding) == 4, f"padding must have 4 entries, got {list(padding)}")
    check(all(p >= 0 for p in padding), f"padding must not be negative, got {list(padding)}")
    _pairs(strides, "strides")
    if output_sizes is not None:
        _pairs(output_sizes, "output_sizes")
    _pairs(dilations, "dilations")
    sizes = [_conv_output_size(size, k, pb, pe, s, d)
             for size, k, pb, pe, s, d in zip((h, w), window, padding[0::2], padding[1::2], strides, dilations)]
    floors, ceils = [lo for lo, _ in sizes], [hi for _, hi in sizes]
    check(not isinstance(c, dims.Dim), f"the channels ({c}) must be fixed; only the batch and spatial dimensions "
                                       f"may be dynamic")
    if output_sizes is not None:
        check(list(output_sizes) in (floors, ceils),
              f"output_sizes {list(output_sizes)} must be the floor {floors} or the ceil {ceils} output sizes")
        out = list(output_sizes)
    else:
        out = floors if rounding_type == "floor" else ceils
    check(all(isinstance(o, dims.Dim) or 0 < o <= MAX_DIMENSION for o in out),
          f"output sizes {out} are not valid dimensions: window {window} with dilations {list(dilations)} "
          f"does not fit the {h}x{w} input with padding {list(padding)}")
    reach = [max(dims.upper(size + pb + pe), dims.upper((o - 1) * s + (k - 1) * d + 1)) for size, pb, pe, o, s, k, d
             in zip((h, w), padding[0::2], padding[1::2], out, strides, window, dilations)]
    check_size((n, c, reach[0], reach[1]), "the padded input would be")
    return n, c, h, w, window[0], window[1], out[0], out[1]


def window_indices(size, k, pad_begin, stride, dilation, out):
    """Per output position along one axis: the input indices its window covers (inside the input)."""
    return [[i for i in (o * stride - pad_begin + j * dilation for j in range(k)) if 0 <= i < size]
            for o in range(out)]


def valid_counts(h, w, kh, kw, padding, strides, dilations, oh, ow):
    """[OH, OW] number of input elements in each window (compile-time divisor of average pooling)."""
    rows = window_indices(h, kh, padding[0], strides[0], dilations[0], oh)
    cols = window_indices(w, kw, padding[2], strides[1], dilations[1], ow)
    return np.array([[len(r) * len(q) for q in cols] for r in rows], np.int64)


def lowest(dtype):
    """The identity of max for `dtype` (-inf for floats)."""
    return -np.inf if dtype in dtypes.FLOATS else np.iinfo(dtypes.to_numpy(dtype)).min


def _pool_ref(kind):
    def ref(x, window_dimensions, padding, strides, dilations, layout, rounding_type, output_sizes):
        xs = x if layout == "nchw" else x.transpose(0, 3, 1, 2)
        n, c, h, w, kh, kw, oh, ow = pool_geometry(xs.shape, window_dimensions, padding, strides, dilations,
                                                   "nchw", rounding_type, output_sizes)
        rows = window_indices(h, kh, padding[0], strides[0], dilations[0], oh)
        cols = window_indices(w, kw, padding[2], strides[1], dilations[1], ow)
        work = x.dtype if kind == "max" else np.float64
        out = np.empty((n, c, oh, ow), work)
        for i, r in enumerate(rows):
            for j, q in enumerate(cols):
                patch = xs[:, :, r][:, :, :, q].reshape(n, c, -1).astype(work)
                if kind == "max":
                    out[:, :, i, j] = patch.max(axis=2) if patch.shape[2] else lowest(dtypes.from_numpy(x.dtype))
                elif kind == "average":
                    out[:, :, i, j] = patch.sum(axis=2) / max(1, patch.shape[2])
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
        if allowed:
            dtype_in(input, allowed)
        rank_is(input, 4)
        n, c, _, _, _, _, oh, ow = pool_geometry(input.shape, window_dimensions, padding, strides, dilations,
                                                 layout, rounding_type, output_sizes)
        return input.with_shape((n, c, oh, ow) if layout == "nchw" else (n, oh, ow, c))
    return rule


for _name, _kind, _allowed in (("average_pool2d", "average", dtypes.FLOATS), ("l2_pool2d", "l2", dtypes.FLOATS),
                               ("max_pool2d", "max", None)):
    nn_op(_name, ["input"], dict(ATTRS), reference=_pool_ref(_kind), dynamic=True)(_rule(_allowed))


# ---------------------------------------------------------------- resample2d (§7.7.36)

RESAMPLE_MODES = ("nearest-neighbor", "linear")


def resample_sizes(shape, scales, sizes, axes):
    """Output sizes along `axes`: `sizes`, else floor(size * scale) with the scale as a float32
    (WebIDL `sequence<float>`) and the product in double precision, as browsers compute it."""
    if sizes is not None:
        return list(sizes)
    return [math.floor(shape[a] * float(np.float32(s))) for a, s in zip(axes, scales)]


def resample_plan(in_size, out_size, mode):
    """Per output index along one axis: source indices (nearest), or (i0, i1, weight of i1) (linear).

    WebNN: scale = outSize / inSize, x = clamp((o + 0.5) / scale - 0.5, 0, inSize - 1); nearest
    takes ceil(x - 0.5) (ties go to the lower index), linear blends floor(x) and ceil(x) by the
    fraction of x. Computed with exact rationals so ties are decided exactly; the scale is always
    outSize / inSize, also when `scales` gave the output size (the spec's definition)."""
    xs = [min(max(Fraction((2 * o + 1) * in_size - out_size, 2 * out_size), Fraction(0)), Fraction(in_size - 1))
          for o in range(out_size)]
    if mode == "nearest-neighbor":
        return np.array([math.ceil(x - Fraction(1, 2)) for x in xs], np.int64)
    i0 = np.array([math.floor(x) for x in xs], np.int64)
    i1 = np.array([math.ceil(x) for x in xs], np.int64)
    return i0, i1, np.array([float(x - math.floor(x)) for x in xs])


def _resample_ref(x, mode, scales, sizes, axes):
    y = x.astype(np.float64)
    for a, size in zip(axes, resample_sizes(x.shape, scales, sizes, axes)):
        plan = resample_plan(y.shape[a], size, mode)
        if mode == "nearest-neighbor":
            y = np.take(y, plan, axis=a)
            continue
        i0, i1, t = plan
        shape = [1] * y.ndim
        shape[a] = -1
        t = t.reshape(shape)
        y = np.take(y, i0, axis=a) * (1 - t) + np.take(y, i1, axis=a) * t
    return y.astype(x.dtype)


@nn_op("resample2d", ["input"], {"mode": Str("nearest-neighbor", RESAMPLE_MODES), "scales": Floats([1.0, 1.0]),
                                 "sizes": Ints(None), "axes": Ints([2, 3])}, reference=_resample_ref)
def resample2d(input, mode, scales, sizes, axes):
    """Resize two axes to `sizes`, or by `scales` (output floor(size * scale))."""
    dtype_in(input, dtypes.FLOATS)
    rank_is(input, 4)
    check(len(scales) == 2 and all(s > 0 and math.isfinite(np.float32(s)) for s in scales),
          f"scales must be 2 positive finite values, got {list(scales)}")
    if sizes is not None:
        _pairs(sizes, "sizes")
    check(len(axes) == 2, f"axes must have 2 entries, got {list(axes)}")
    axes_valid(axes, input.rank)
    out_sizes = resample_sizes(input.shape, scales, sizes, axes)
    check(all(0 < s <= MAX_DIMENSION for s in out_sizes),
          f"output sizes {out_sizes} along axes {list(axes)} are not valid dimensions")
    shape = list(input.shape)
    for a, s in zip(axes, out_sizes):
        shape[a] = s
    return input.with_shape(shape)
