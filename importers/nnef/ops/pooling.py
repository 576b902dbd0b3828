"""Sliding-window sampling (§4.3.2-4.3.4) and pooling fragments (§4.9.3) as compositions of nn ops.

All are N-D (every axis may be windowed, batch and channel included) and exact by construction:
- the input is padded with the border mode first ('constant' and 'ignore' pad zeros for sums,
  'ignore' pads the lowest float for max/argmax; 'replicate', 'reflect', 'reflect-even' pad as the
  spec's extended input); negative padding crops.
- the windows are gathered per axis with constant index tables [o, k] = o*s + k*d (nn.gather), giving
  interleaved (output, kernel) axes, then reduced (sum, max) or arg-maxed over the kernel axes
  (row-major window order, first index on ties).
- box/debox normalize divides by the kernel volume; with 'ignore' by the number of window terms
  that read the input (a compile-time constant; an empty window gives 0).
- sample with 'ignore' reads the same extended input as argmax_pool (max_pool_with_index passes its
  border to both); desample reads no border value (the index condition never holds there), so
  every border mode gives the same result.
- debox is the box of the input spread out with zeros (stride) and cropped to the range the spec's
  sum reads; desample sums, per up-scaled position, the window elements whose index selects it (gathers
  through a constant position table, masked by index == k).
- max_pool / avg_pool of a 4-D tensor windowed only along the last two axes use nn.max_pool2d /
  nn.average_pool2d ('ignore' maps to their padding, which they exclude).
"""
import math

import numpy as np

from estuary.importers.nnef.ops import OPS
from estuary.importers.nnef.ops.shape import pad_value


BORDERS = ("constant", "ignore", "replicate", "reflect", "reflect-even")


LOWEST = float(np.finfo(np.float32).min)


def geometry(c, inv, x_shape, up_shape, size=None):
    """(size, stride, dilation, padding, border) of a sliding-window invocation, checked; automatic
    padding from the up-scaled shape `up_shape` (§4.3 "Automatic Padding Calculation")."""
    rank = len(x_shape)
    size = list(size if size is not None else inv.attribs["size"])
    stride = list(inv.attribs.get("stride") or [1] * rank)
    dilation = list(inv.attribs.get("dilation") or [1] * rank)
    padding = [tuple(p) for p in inv.attribs.get("padding") or []]
    border = inv.attribs.get("border", "constant")
    c.check(len(size) == rank, f"size {size} needs one item per input dimension ({rank})")
    c.check(len(stride) == rank and len(dilation) == rank and len(padding) in (0, rank),
            f"padding, stride and dilation need {rank} items each (or none)")
    c.check(all(v > 0 for v in size + stride + dilation), "size, stride and dilation items must be positive")
    c.check(border in BORDERS, f"border {border!r} must be one of {', '.join(BORDERS)}")
    if not padding:
        fd = [(f - 1) * d + 1 for f, d in zip(size, dilation)]
        totals = [max((-(-X // s) - 1) * s + f - X, 0) for X, s, f in zip(up_shape, stride, fd)]
        padding = [(t // 2, t - t // 2) for t in totals]
    return size, stride, dilation, padding, border


def padded(c, x, padding, border, fill=0.0):
    """`x` extended by `padding` with the border mode; 'constant' uses 0, 'ignore' uses `fill`."""
    if border == "ignore":
        return pad_value(c, x, padding, "constant", fill)
    return pad_value(c, x, padding, border, 0.0)


def windows(c, x, size, stride, dilation):
    """Gather the windows of an already padded `x`: returns (value, kernel_axes); each windowed axis
    becomes (output, kernel) axes, kernel axes of extent 1 are left out."""
    shape = list(c.spec(x).shape)
    kernel_axes, pos = [], 0
    for n, f, s, d in zip(shape, size, stride, dilation):
        if f == 1 and s == 1:
            pos += 1
            continue
        out = (n - ((f - 1) * d + 1)) // s + 1
        c.check(out > 0, f"the window ({f} with dilation {d}) does not fit the padded extent {n}")
        table = np.arange(out)[:, None] * s + np.arange(f)[None, :] * d
        if f == 1:
            table = table[:, 0]
        x = c.op("gather", [x, c.const(table.astype(np.int32))], axis=pos)
        if f > 1:
            kernel_axes.append(pos + 1)
        pos += 2 if f > 1 else 1
    return x, kernel_axes


def flat_windows(c, w, kernel_axes, out_shape):
    """Windows with the kernel axes moved last and flattened row-major: shape out_shape + [K]."""
    rank = c.spec(w).rank
    perm = [a for a in range(rank) if a not in kernel_axes] + list(kernel_axes)
    if perm != list(range(rank)):
        w = c.op("transpose", [w], permutation=perm)
    k = math.prod(c.spec(w).shape[a] for a in range(rank - len(kernel_axes), rank))
    return c.reshape(w, list(out_shape) + [k])


def window_counts(shape, size, stride, dilation, padding, out_shape):
    """Number of in-range elements per window (separable: an outer product of per-axis counts,
    with singleton axes where the count is uniform); at least 1."""
    counts = np.ones([1] * len(shape))
    for a, (X, f, s, d, (p, _), o) in enumerate(zip(shape, size, stride, dilation, padding, out_shape)):
        pos = np.arange(o)[:, None] * s + np.arange(f)[None, :] * d - p
        per = ((pos >= 0) & (pos < X)).sum(axis=1)
        if np.all(per == per[0]):
            counts = counts * per[0]
        else:
            view = [1] * len(shape)
            view[a] = o
            counts = counts * per.reshape(view)
    return np.maximum(counts, 1).astype(np.float32)


def box_sum(c, x, size, stride, dilation, padding, border, normalize, out_shape):
    shape = list(c.spec(x).shape)
    w, kaxes = windows(c, padded(c, x, padding, border), size, stride, dilation)
    y = c.op("reduce_sum", [w], axes=kaxes, keep_dimensions=False) if kaxes else c.op("identity", [w])
    y = c.reshape(y, out_shape)
    if normalize:
        if border == "ignore":
            divisor = c.const(window_counts(shape, size, stride, dilation, padding, out_shape))
        else:
            divisor = c.const(np.float32(math.prod(size)))
        y = c.op("div", [y, divisor])
    return y


def _out(c, inv, key="output"):
    return c.shape(inv.outputs[key])


@OPS.op("box")
def box(c, inv):
    x = c.tensor(inv.inputs["input"])
    shape = list(c.spec(x).shape)
    size, stride, dilation, padding, border = geometry(c, inv, shape, shape)
    return box_sum(c, x, size, stride, dilation, padding, border, inv.attribs.get("normalize", False),
                   _out(c, inv))


def spread(c, x, axis, s):
    """Insert s - 1 zeros after every element along `axis` (extent n -> n * s)."""
    shape = list(c.spec(x).shape)
    y = c.reshape(x, shape[:axis + 1] + [1] + shape[axis + 1:])
    pads = [0] * (len(shape) + 1)
    ends = list(pads)
    ends[axis + 1] = s - 1
    y = c.op("pad", [y], beginning_padding=pads, ending_padding=ends, mode="constant", value=0.0)
    return c.reshape(y, shape[:axis] + [shape[axis] * s] + shape[axis + 1:])


@OPS.op("debox")
def debox(c, inv):
    x = c.tensor(inv.inputs["input"])
    shape, out_shape = list(c.spec(x).shape), _out(c, inv)
    size, stride, dilation, padding, border = geometry(c, inv, shape, out_shape)
    # output[i] = sum_j z[i + p - j d], z[m] = input~[m / s] where s divides m, else 0;
    # z is needed on [lo, hi] = [p - (f-1) d, X - 1 + p].
    grow, starts, sizes = [], [], []
    for X, n, f, s, d, (p, _) in zip(out_shape, shape, size, stride, dilation, padding):
        lo, hi = p - (f - 1) * d, X - 1 + p
        q0, q1 = lo // s, hi // s
        grow.append((-q0, q1 - (n - 1)))
        starts.append(lo - q0 * s)
        sizes.append(hi - lo + 1)
    z = padded(c, x, grow, border)
    for axis, s in enumerate(stride):
        if s > 1:
            z = spread(c, z, axis, s)
    z = c.op("slice", [z], starts=starts, sizes=sizes)
    w, kaxes = windows(c, z, size, [1] * len(shape), dilation)
    y = c.op("reduce_sum", [w], axes=kaxes, keep_dimensions=False) if kaxes else c.op("identity", [w])
    y = c.reshape(y, out_shape)
    if inv.attribs.get("normalize", False):
        if border == "ignore":
            divisor = c.const(_debox_counts(shape, out_shape, size, stride, dilation, padding))
        else:
            divisor = c.const(np.float32(math.prod(size)))
        y = c.op("div", [y, divisor])
    return y


def _debox_counts(shape, out_shape, size, stride, dilation, padding):
    """Per output element, the number of terms of debox's sum that read the input (not the border)."""
    counts = np.ones([1] * len(shape))
    for a, (x, X, f, s, d, (p, _)) in enumerate(zip(shape, out_shape, size, stride, dilation, padding)):
        m = np.arange(X)[:, None] + p - np.arange(f)[None, :] * d
        per = ((m % s == 0) & (m // s >= 0) & (m // s < x)).sum(axis=1)
        view = [1] * len(shape)
        view[a] = X
        counts = counts * per.reshape(view)
    return np.maximum(counts, 1).astype(np.float32)


def _max_windows(c, inv, x):
    """(flat windows [out..., K], geometry) of a max-type operation: 'ignore' pads the lowest float."""
    shape = list(c.spec(x).shape)
    size, stride, dilation, padding, border = geometry(c, inv, shape, shape)
    out_shape = c.shape(list(inv.outputs.values())[0])
    w, kaxes = windows(c, padded(c, x, padding, border, LOWEST), size, stride, dilation)
    return flat_windows(c, w, kaxes, out_shape), out_shape


@OPS.op("argmax_pool")
def argmax_pool(c, inv):
    x = c.tensor(inv.inputs["input"])
    w, out_shape = _max_windows(c, inv, x)
    y = c.op("arg_max", [w], axis=len(out_shape), keep_dimensions=False, output_data_type="int32")
    return c.reshape(y, out_shape)


@OPS.op("sample")
def sample(c, inv):
    x, index = c.tensor(inv.inputs["input"]), c.tensor(inv.inputs["index"])
    w, out_shape = _max_windows(c, inv, x)
    c.check(list(c.spec(index).shape) == list(out_shape),
            f"index shape {list(c.spec(index).shape)} must equal the output shape {out_shape}")
    index = c.reshape(c.op("cast", [index], to="int32"), list(out_shape) + [1])
    y = c.op("gather_elements", [w, index], axis=len(out_shape))
    return c.reshape(y, out_shape)


@OPS.op("desample")
def desample(c, inv):
    x, index = c.tensor(inv.inputs["input"]), c.tensor(inv.inputs["index"])
    shape, out_shape = list(c.spec(x).shape), _out(c, inv)
    size, stride, dilation, padding, border = geometry(c, inv, shape, out_shape)
    c.check(list(c.spec(index).shape) == shape, f"index shape {list(c.spec(index).shape)} must equal "
                                                f"the input shape {shape}")
    # table[i, k]: flat input position whose window element k lands on output element i (m = i + p - k d
    # divisible by s and m / s inside the input), else the dump slot M (value 0, index -1)
    rank, total, count = len(shape), math.prod(out_shape), math.prod(shape)
    flat = np.zeros(out_shape + size, np.int64)
    valid = np.ones(out_shape + size, bool)
    step = 1
    for a in reversed(range(rank)):
        m = np.arange(out_shape[a])[:, None] + padding[a][0] - np.arange(size[a])[None, :] * dilation[a]
        view = [1] * (2 * rank)
        view[a], view[rank + a] = out_shape[a], size[a]
        m = m.reshape(view)
        flat = flat + (m // stride[a]) * step
        valid = valid & (m % stride[a] == 0) & (m >= 0) & (m // stride[a] < shape[a])
        step *= shape[a]
    k = math.prod(size)
    table = c.const(np.where(valid, flat, count).reshape([total, k]).astype(np.int32))
    values = c.op("concat", [[c.reshape(x, [count]), c.const(np.zeros([1], np.float32))]], axis=0)
    index = c.op("cast", [c.reshape(index, [count])], to="int32")
    index = c.op("concat", [[index, c.const(np.full([1], -1, np.int32))]], axis=0)
    chosen = c.op("equal", [c.op("gather", [index, table], axis=0), c.const(np.arange(k, dtype=np.int32))])
    picked = c.op("where", [chosen, c.op("gather", [values, table], axis=0), c.const(np.float32(0))])
    y = c.op("reduce_sum", [picked], axes=[1], keep_dimensions=False)
    return c.reshape(y, out_shape)


def _pool2d_fast(c, inv, x):
    """Geometry for nn 2-D pooling when only the last two axes of a 4-D tensor are windowed, else None."""
    shape = list(c.spec(x).shape)
    size, stride, dilation, padding, border = geometry(c, inv, shape, shape)
    if len(shape) != 4 or size[:2] != [1, 1] or stride[:2] != [1, 1] or list(padding[:2]) != [(0, 0), (0, 0)]:
        return None
    if any(p < 0 or q < 0 for p, q in padding):
        return None
    return size, stride, dilation, padding, border


def _pool(kind):
    nn_name = "max_pool2d" if kind == "max" else "average_pool2d"

    def convert(c, inv):
        x = c.tensor(inv.inputs["input"])
        fast = _pool2d_fast(c, inv, x)
        out_shape = _out(c, inv)
        if fast is None:
            if kind == "avg":
                shape = list(c.spec(x).shape)
                size, stride, dilation, padding, border = geometry(c, inv, shape, shape)
                return box_sum(c, x, size, stride, dilation, padding, border, True, out_shape)
            w, out_shape = _max_windows(c, inv, x)
            return c.reshape(c.op("reduce_max", [w], axes=[len(out_shape)], keep_dimensions=False), out_shape)
        size, stride, dilation, padding, border = fast
        pads = [v for pq in padding[2:] for v in pq]
        if border != "ignore":
            x = pad_value(c, x, padding, border, 0.0)
            pads = [0, 0, 0, 0]
        y = c.op(nn_name, [x], window_dimensions=size[2:], padding=pads, strides=stride[2:],
                 dilations=dilation[2:], layout="nchw")
        return c.reshape(y, out_shape)

    return convert


OPS.op("max_pool")(_pool("max"))


OPS.op("avg_pool")(_pool("avg"))


def _fix_sample_shape():
    """The `nnef` parser's shape function for `sample` requires index shape == input shape; §4.3.3
    says index has the *output* shape (they differ whenever the window down-scales). Replace it with
    the spec's rule (output = the down-scaled shape, index must equal it)."""
    import nnef.shapes as shapes

    def sample_shape(input, index, size, border=None, padding=[], stride=[], dilation=[], **_):
        output = shapes.pool_shape(input, size, border, padding, stride, dilation)
        assert index == output, f"'index' shape {index} does not match the output shape {output}"
        return output

    shapes._StandardShapeFuncs["sample"] = sample_shape


_fix_sample_shape()


# Supported through the expansion of their fragment bodies into the converters above.
OPS.expand("nearest_downsample", "area_downsample", "nearest_upsample", "max_pool_with_index", "rms_pool")
