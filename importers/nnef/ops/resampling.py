"""multilinear_upsample (§4.9.3) and RoI pooling / alignment / resampling (§4.6).

multilinear_upsample is separable: per spatial axis two gathers of the border-padded input blended
with constant weights from the normative formulas ('asymmetric' j = floor(i/f); 'symmetric'
j = floor((i - (f-1)/2) / f); 'aligned' j = floor(i (x-1) / (x f - 1))); samples outside the input
come from the border mode. The RoI methods are described in the comment above them.
"""
import math
from fractions import Fraction

import numpy as np

from estuary.importers.nnef.ops import OPS
from estuary.importers.nnef.ops.pooling import LOWEST
from estuary.importers.nnef.ops.shape import pad_value


@OPS.op("multilinear_upsample")
def multilinear_upsample(c, inv):
    x = c.tensor(inv.inputs["input"])
    shape = list(c.spec(x).shape)
    factor = list(inv.attribs["factor"])
    method, border = inv.attribs.get("method", "symmetric"), inv.attribs.get("border", "replicate")
    c.check(len(factor) == len(shape) - 2, f"factor {factor} needs one item per spatial dimension "
                                           f"({len(shape) - 2})")
    c.check(all(f > 0 for f in factor), f"factor items must be positive, got {factor}")
    c.check(method in ("symmetric", "asymmetric", "aligned"), f"method {method!r} must be 'symmetric', "
                                                              "'asymmetric' or 'aligned'")
    c.check(border in ("constant", "replicate", "reflect", "reflect-even"),
            f"border {border!r} must be 'constant', 'replicate', 'reflect' or 'reflect-even'")
    y = x
    for axis, f in enumerate(factor, start=2):
        n = shape[axis]
        if f == 1:
            continue
        j, u = upsample_plan(n, f, method)
        pads = [(0, 0)] * len(shape)
        pads[axis] = (1, 1)
        c.check(border != "reflect" or n > 1, "'reflect' border needs an extent of at least 2")
        yp = pad_value(c, y, pads, border, 0.0)
        view = [1] * len(shape)
        view[axis] = n * f
        lo = c.op("gather", [yp, c.const((j + 1).astype(np.int32))], axis=axis)
        hi = c.op("gather", [yp, c.const((j + 2).astype(np.int32))], axis=axis)
        y = c.op("add", [c.op("mul", [lo, c.const((1 - u).reshape(view).astype(np.float32))]),
                         c.op("mul", [hi, c.const(u.reshape(view).astype(np.float32))])])
    return c.op("identity", [y]) if y is x else y


def upsample_plan(n, f, method):
    """(j, u) per output index of a 1-D linear up-sampling by `f` (exact rationals)."""
    def source(i):
        if method == "asymmetric":
            return Fraction(i, f)
        if method == "symmetric":
            return Fraction(2 * i - f + 1, 2 * f)
        return Fraction(i * (n - 1), n * f - 1) if n > 1 else Fraction(0)

    ts = [source(i) for i in range(n * f)]
    j = np.array([math.floor(t) for t in ts], np.int64)
    u = np.array([float(t - math.floor(t)) for t in ts], np.float64)
    return j, u


def _roi_inputs(c, inv):
    x = c.tensor(inv.inputs["input"])
    rois, batch = c.tensor(inv.inputs["rois"]), c.tensor(inv.inputs["batch_index"])
    shape, rshape = list(c.spec(x).shape), list(c.spec(rois).shape)
    c.check(len(shape) == 4, f"RoI operations need a 4-D (N, C, H, W) input, got {shape}")
    c.check(len(rshape) == 2 and rshape[1] == 4, f"rois must have shape [N, 4], got {rshape}")
    n = rshape[0]
    c.check(list(c.spec(batch).shape) in ([n], [n, 1]), f"batch_index must have shape [{n}] or [{n}, 1], "
                                                        f"got {list(c.spec(batch).shape)}")
    size = list(inv.attribs["output_size"])
    c.check(len(size) == 2 and all(s > 0 for s in size), f"output_size must have 2 positive items, got {size}")
    if c.spec(rois).dtype != "float32":
        rois = c.op("cast", [rois], to="float32")
    batch = c.op("cast", [c.reshape(batch, [n])], to="int32")
    features = c.op("gather", [x, batch], axis=0)  # [N, C, H, W]
    coords = [c.op("slice", [rois], starts=[0, k], sizes=[n, 1]) for k in range(4)]  # [N, 1] each
    return features, shape, n, size, coords


def _f32(value):
    return np.asarray(value, np.float32)


def _onehot(c, index, extent):
    """[N, k] int32 positions -> [N, k, extent] float32 one-hot rows."""
    n, k = c.spec(index).shape
    grid = c.const(np.arange(extent, dtype=np.int32).reshape(1, 1, extent))
    return c.op("cast", [c.op("equal", [c.reshape(index, [n, k, 1]), grid])], to="float32")


def _interp_weights(c, start, extent, out, method, limit):
    """Wy [N, out, limit]: linear interpolation rows for sample coordinates t [N, out]."""
    i = np.arange(out, dtype=np.float64)
    if method == "symmetric":
        a, b = (i + 0.5) / out, np.full(out, -0.5)
    elif method == "asymmetric":
        a, b = i / out, np.zeros(out)
    else:
        a = i / (out - 1) if out > 1 else np.zeros(out)
        b = -a
    t = c.op("add", [c.op("add", [start, c.op("mul", [extent, c.const(_f32(a.reshape(1, out)))])]),
                     c.const(_f32(b.reshape(1, out)))])
    low = c.op("floor", [t])
    frac = c.op("sub", [t, low])
    j = c.op("cast", [low], to="int32")
    zero, top = c.const(np.int32(0)), c.const(np.int32(limit - 1))
    j0 = c.op("max", [c.op("min", [j, top]), zero])
    j1 = c.op("max", [c.op("min", [c.op("add", [j, c.const(np.int32(1))]), top]), zero])
    n = c.spec(t).shape[0]
    frac = c.reshape(frac, [n, out, 1])
    keep = c.op("sub", [c.const(np.float32(1)), frac])
    return c.op("add", [c.op("mul", [_onehot(c, j0, limit), keep]), c.op("mul", [_onehot(c, j1, limit), frac])])


def _separable(c, features, wy, wx):
    """Wy [N, h, H] @ F [N, C, H, W] @ Wx^T -> [N, C, h, w]."""
    n, h, _ = c.spec(wy).shape
    _, w, W = c.spec(wx).shape
    rows = c.op("matmul", [c.reshape(wy, [n, 1, h, c.spec(wy).shape[2]]), features])
    return c.op("matmul", [rows, c.op("transpose", [c.reshape(wx, [n, 1, w, W])], permutation=[0, 1, 3, 2])])


def _resample(c, inv, size, method):
    features, shape, n, _, (y0, x0, y1, x1) = _roi_inputs(c, inv)
    c.check(method in ("symmetric", "asymmetric", "aligned"),
            f"method {method!r} must be 'symmetric', 'asymmetric' or 'aligned'")
    wy = _interp_weights(c, y0, c.op("sub", [y1, y0]), size[0], method, shape[2])
    wx = _interp_weights(c, x0, c.op("sub", [x1, x0]), size[1], method, shape[3])
    return _separable(c, features, wy, wx)


@OPS.op("roi_resample")
def roi_resample(c, inv):
    return _resample(c, inv, list(inv.attribs["output_size"]), inv.attribs.get("method", "symmetric"))


def _roi_align(kind):
    def convert(c, inv):
        size, rate = list(inv.attribs["output_size"]), list(inv.attribs["sampling_rate"])
        c.check(len(rate) == 2 and all(r > 0 for r in rate), f"sampling_rate must have 2 positive items, got {rate}")
        y = _resample(c, inv, [s * r for s, r in zip(size, rate)], inv.attribs.get("resize_method", "symmetric"))
        n, ch = c.spec(y).shape[:2]
        y = c.reshape(y, [n, ch, size[0], rate[0], size[1], rate[1]])
        return c.op("reduce_mean" if kind == "avg" else "reduce_max", [y], axes=[3, 5], keep_dimensions=False)

    return convert


OPS.op("avg_roi_align")(_roi_align("avg"))


OPS.op("max_roi_align")(_roi_align("max"))


def _cells(c, start, end, cells, limit):
    """Cell masks [N, cells, limit] (float 0/1), cell extents [N, 1] and 'reaches outside' flags [N, cells]."""
    from estuary.importers.nnef.quant import round_half_up

    start, end = round_half_up(c, start), round_half_up(c, end)
    extent = c.op("sub", [end, start])
    per = c.op("div", [extent, c.const(np.float32(cells))])
    size, step = c.op("ceil", [per]), c.op("floor", [per])
    first = c.op("add", [start, c.op("mul", [step, c.const(_f32(np.arange(cells).reshape(1, cells)))])])
    last = c.op("add", [first, size])  # exclusive
    n = c.spec(start).shape[0]
    pos = c.const(_f32(np.arange(limit).reshape(1, 1, limit)))
    inside = c.op("logical_and", [c.op("greater_or_equal", [pos, c.reshape(first, [n, cells, 1])]),
                                  c.op("lesser", [pos, c.reshape(last, [n, cells, 1])])])
    outside = c.op("logical_or", [c.op("lesser", [first, c.const(np.float32(0))]),
                                  c.op("greater", [last, c.const(np.float32(limit))])])
    return inside, size, outside


def _roi_pool(kind):
    def convert(c, inv):
        features, shape, n, size, (y0, x0, y1, x1) = _roi_inputs(c, inv)
        rows, hs, out_r = _cells(c, y0, y1, size[0], shape[2])
        cols, ws, out_c = _cells(c, x0, x1, size[1], shape[3])
        if kind == "avg":
            y = _separable(c, features, c.op("cast", [rows], to="float32"), c.op("cast", [cols], to="float32"))
            volume = c.op("max", [c.op("mul", [hs, ws]), c.const(np.float32(1))])
            return c.op("div", [y, c.reshape(volume, [n, 1, 1, 1])])
        ph, pw, H, W = size[0], size[1], shape[2], shape[3]
        mask = c.op("logical_and", [c.reshape(rows, [n, 1, ph, 1, H, 1]), c.reshape(cols, [n, 1, 1, pw, 1, W])])
        values = c.reshape(features, [n, shape[1], 1, 1, H, W])
        picked = c.op("where", [mask, values, c.const(np.float32(LOWEST))])
        y = c.op("reduce_max", [picked], axes=[4, 5], keep_dimensions=False)
        border = c.op("logical_or", [c.reshape(out_r, [n, 1, ph, 1]), c.reshape(out_c, [n, 1, 1, pw])])
        floor = c.op("where", [border, c.const(np.float32(0)), c.const(np.float32(LOWEST))])
        return c.op("max", [y, floor])

    return convert


OPS.op("avg_roi_pool")(_roi_pool("avg"))


OPS.op("max_roi_pool")(_roi_pool("max"))
