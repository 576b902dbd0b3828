"""nn ops: conv2d and conv_transpose2d (WebNN §7.7.10, §7.7.11)."""
import numpy as np

from estuary.base import dims, dtypes
from estuary.dialects.core import (Int, Ints, Str, TensorSpec, check, check_size, dtype_in, nn_op, rank_is,
                                   same_dtype)

INPUT_LAYOUTS = ("nchw", "nhwc")
CONV_FILTER_LAYOUTS = ("oihw", "hwio", "ohwi", "ihwo")
TRANSPOSE_FILTER_LAYOUTS = ("iohw", "hwoi", "ohwi")

# permutation taking each filter layout to OIHW (conv2d) / IOHW (conv_transpose2d)
TO_OIHW = {"oihw": (0, 1, 2, 3), "hwio": (3, 2, 0, 1), "ohwi": (0, 3, 1, 2), "ihwo": (3, 0, 1, 2)}
TO_IOHW = {"iohw": (0, 1, 2, 3), "hwoi": (3, 2, 0, 1), "ohwi": (3, 0, 1, 2)}


def _common(input, filter, bias, padding, strides, dilations, groups):
    dtype_in(input, dtypes.FLOATS)
    rank_is(input, 4)
    rank_is(filter, 4, "filter")
    same_dtype(input, filter, what="input and filter")
    check(len(padding) == 4, f"padding must have 4 entries, got {list(padding)}")
    check(len(strides) == 2 and all(s > 0 for s in strides), f"strides must be 2 positive values, got {list(strides)}")
    check(len(dilations) == 2 and all(d > 0 for d in dilations),
          f"dilations must be 2 positive values, got {list(dilations)}")
    check(all(p >= 0 for p in padding), f"padding must be non-negative, got {list(padding)}")
    check(groups > 0, f"groups must be positive, got {groups}")


def _nchw(shape, layout):
    n, a, b, c = shape
    return (n, a, b, c) if layout == "nchw" else (n, c, a, b)


def _out(layout, n, c, h, w):
    return (n, c, h, w) if layout == "nchw" else (n, h, w, c)


def conv_out_size(size, k, pad_begin, pad_end, stride, dilation):
    return (size - ((k - 1) * dilation + 1) + pad_begin + pad_end) // stride + 1


def _conv_ref(x, w, b, padding, strides, dilations, groups, input_layout, filter_layout):
    """Direct float64 convolution (NCHW, OIHW) — a second opinion for tests and folding."""
    x = x.astype(np.float64)
    if input_layout == "nhwc":
        x = x.transpose(0, 3, 1, 2)
    w = w.astype(np.float64).transpose(TO_OIHW[filter_layout])
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    pt, pb, pl, pr = padding
    x = np.pad(x, [(0, 0), (0, 0), (pt, pb), (pl, pr)])
    oh = conv_out_size(h, kh, pt, pb, strides[0], dilations[0])
    ow = conv_out_size(wd, kw, pl, pr, strides[1], dilations[1])
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for g in range(groups):
        xs = x[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                hs = i * dilations[0]
                ws = j * dilations[1]
                patch = xs[:, :, hs:hs + strides[0] * (oh - 1) + 1:strides[0], ws:ws + strides[1] * (ow - 1) + 1:strides[1]]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, w[g * og:(g + 1) * og, :, i, j])
    if b is not None:
        out += b.reshape(1, -1, 1, 1)
    if input_layout == "nhwc":
        out = out.transpose(0, 2, 3, 1)
    return out


@nn_op("conv2d", ["input", "filter", "bias?"],
       {"padding": Ints([0, 0, 0, 0]), "strides": Ints([1, 1]), "dilations": Ints([1, 1]), "groups": Int(1),
        "input_layout": Str("nchw", INPUT_LAYOUTS), "filter_layout": Str("oihw", CONV_FILTER_LAYOUTS)},
       reference=_conv_ref, dynamic=True)
def conv2d(input, filter, bias, padding, strides, dilations, groups, input_layout, filter_layout):
    """2-D convolution; padding is [beginH, endH, beginW, endW]."""
    _common(input, filter, bias, padding, strides, dilations, groups)
    n, c, h, w = _nchw(input.shape, input_layout)
    o, i, kh, kw = filter.static_shape("the filter")
    o, i, kh, kw = (filter.shape[p] for p in TO_OIHW[filter_layout])
    check(not isinstance(c, dims.Dim), f"the input channels ({c}) must be fixed; only the batch and spatial "
                                       f"dimensions may be dynamic")
    check(c % groups == 0, f"input channels {c} are not divisible by groups {groups}")
    check(c // groups == i, f"filter input channels {i} must equal input channels / groups = {c // groups}")
    check(o % groups == 0, f"output channels {o} are not divisible by groups {groups}")
    if bias is not None:
        check(bias.shape == (o,), f"bias must have shape [{o}], got {list(bias.shape)}")
        same_dtype(input, bias, what="input and bias")
    check_size((n, c, h + padding[0] + padding[1], w + padding[2] + padding[3]), "the padded input would be")
    oh = conv_out_size(h, kh, padding[0], padding[1], strides[0], dilations[0])
    ow = conv_out_size(w, kw, padding[2], padding[3], strides[1], dilations[1])
    check(all(isinstance(d, dims.Dim) or d > 0 for d in (oh, ow)),
          f"output size {oh}x{ow} is not positive (kernel larger than padded input)")
    return TensorSpec(_out(input_layout, n, o, oh, ow), input.dtype)


def transpose_out_size(size, k, pad_begin, pad_end, stride, dilation, output_padding):
    return (size - 1) * stride + (k - 1) * dilation + 1 - pad_begin - pad_end + output_padding


def _conv_transpose_ref(x, w, b, padding, strides, dilations, output_padding, output_sizes, groups,
                        input_layout, filter_layout):
    """Scatter form of the transposed convolution, float64 (NCHW, IOHW)."""
    x = x.astype(np.float64)
    if input_layout == "nhwc":
        x = x.transpose(0, 3, 1, 2)
    w = w.astype(np.float64).transpose(TO_IOHW[filter_layout])
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    oh, ow = _transpose_sizes(h, wd, kh, kw, padding, strides, dilations, output_padding, output_sizes)
    # room for every scattered contribution and for an output window lying past them (large padding)
    full = np.zeros((n, og * groups, max((h - 1) * strides[0] + (kh - 1) * dilations[0] + 1, padding[0] + oh),
                     max((wd - 1) * strides[1] + (kw - 1) * dilations[1] + 1, padding[2] + ow)))
    cg = c // groups
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                contrib = np.einsum("nchw,co->nohw", x[:, g * cg:(g + 1) * cg], w[g * cg:(g + 1) * cg, :, i, j])
                hs, ws = i * dilations[0], j * dilations[1]
                full[:, g * og:(g + 1) * og, hs:hs + (h - 1) * strides[0] + 1:strides[0],
                     ws:ws + (wd - 1) * strides[1] + 1:strides[1]] += contrib
    out = full[:, :, padding[0]:padding[0] + oh, padding[2]:padding[2] + ow]
    if b is not None:
        out = out + b.reshape(1, -1, 1, 1)
    return out.transpose(0, 2, 3, 1) if input_layout == "nhwc" else out


def _transpose_sizes(h, w, kh, kw, padding, strides, dilations, output_padding, output_sizes):
    if output_sizes is not None:
        return tuple(output_sizes)
    return (transpose_out_size(h, kh, padding[0], padding[1], strides[0], dilations[0], output_padding[0]),
            transpose_out_size(w, kw, padding[2], padding[3], strides[1], dilations[1], output_padding[1]))


@nn_op("conv_transpose2d", ["input", "filter", "bias?"],
       {"padding": Ints([0, 0, 0, 0]), "strides": Ints([1, 1]), "dilations": Ints([1, 1]),
        "output_padding": Ints([0, 0]), "output_sizes": Ints(None), "groups": Int(1),
        "input_layout": Str("nchw", INPUT_LAYOUTS), "filter_layout": Str("iohw", TRANSPOSE_FILTER_LAYOUTS)},
       reference=_conv_transpose_ref)
def conv_transpose2d(input, filter, bias, padding, strides, dilations, output_padding, output_sizes, groups,
                     input_layout, filter_layout):
    """Transposed (fractionally strided) 2-D convolution; filter input channels = input channels."""
    _common(input, filter, bias, padding, strides, dilations, groups)
    check(len(output_padding) == 2, f"output_padding must have 2 entries, got {list(output_padding)}")
    n, c, h, w = _nchw(input.shape, input_layout)
    i, og, kh, kw = (filter.shape[p] for p in TO_IOHW[filter_layout])
    check(c == i, f"filter input channels {i} must equal input channels {c}")
    check(c % groups == 0, f"input channels {c} are not divisible by groups {groups}")
    o = og * groups
    if bias is not None:
        check(bias.shape == (o,), f"bias must have shape [{o}], got {list(bias.shape)}")
        same_dtype(input, bias, what="input and bias")
    if output_sizes is not None:
        check(len(output_sizes) == 2 and all(s > 0 for s in output_sizes),
              f"output_sizes must be 2 positive values, got {list(output_sizes)}")
        for d, (size, k, pb, pe, s, dil) in enumerate(zip((h, w), (kh, kw), padding[0::2], padding[1::2],
                                                           strides, dilations)):
            base = transpose_out_size(size, k, pb, pe, s, dil, 0)
            check(base <= output_sizes[d] < base + s,
                  f"output_sizes[{d}] = {output_sizes[d]} is not reachable: it must be in [{base}, {base + s})")
    else:
        check(all(p < s for p, s in zip(output_padding, strides)),
              f"output_padding {list(output_padding)} must be smaller than strides {list(strides)}")
    oh, ow = _transpose_sizes(h, w, kh, kw, padding, strides, dilations, output_padding, output_sizes)
    check(oh > 0 and ow > 0, f"output size {oh}x{ow} is not positive")
    full = [max((size - 1) * st + (k - 1) * dil + 1, pb + out) for size, k, st, dil, pb, out in
            zip((h, w), (kh, kw), strides, dilations, padding[0::2], (oh, ow))]
    check_size((n, max(c, o), full[0] + padding[1], full[1] + padding[3]), "the strided intermediate would be")
    return TensorSpec(_out(input_layout, n, o, oh, ow), input.dtype)
