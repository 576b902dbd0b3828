"""Lowering rules: pooling as linalg pooling ops over an explicitly padded NHWC input; resample2d
as one linalg.generic that gathers through compile-time index/weight tables.

Pooling pads (and crops) the input to exactly the extent the windows reach, so dilations, ceil
rounding and windows that start in (or past) the padding need no special case: max pads with the
lowest value; average and L2 pad with zeros and divide by / take the root of a sum, the divisor
being the compile-time count of input elements in each window. float16 sums in float32.
"""
import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import _linalg_ops_gen as linalg_ops
from iree.compiler.dialects import arith, linalg, tensor, tosa
from iree.compiler.dialects import math as mathd

from estuary.base import dims, dtypes
from estuary.dialects.ops.pooling import lowest, pool_geometry, resample_plan, resample_sizes, valid_counts
from estuary.passes.lowering import common as C
from estuary.passes.lowering import lowering, pointwise, windows


def _to_float32(x, dtype):
    return tosa.cast(C.tensor_type(C.shape_of(x), ir.F32Type.get()), x) if dtype == "float16" else x


def _window_extent(x, begin, extent, fill, dtype):
    """NHWC `x` padded with `fill` / cropped so rows and cols span [-begin, extent - begin)."""
    nb, h, w, c = C.shape_of(x)
    pads = [(0, 0)] + [(b, max(0, e - b - s)) for b, e, s in zip(begin, extent, (h, w))] + [(0, 0)]
    x = C.pad_constant(x, pads, fill, dtype)
    return C.slice_(x, [0, 0, 0, 0], [nb, extent[0], extent[1], c])


def _zero_pad_is_exact(n, h, w, kh, kw, oh, ow):
    """Max pooling may pad with 0 instead of -inf when its float input is non-negative (a relu's or
    clamp's output) and every window holds at least one input element: the window maxima are then
    >= 0 (or NaN) either way. The zero pad measured faster (ResNet-18's stem pad:
    docs/performance.md)."""
    a = n.attrs
    return (n.in_specs[0].dtype in dtypes.FLOATS and C.nonnegative(n.inputs[0])
            and valid_counts(h, w, kh, kw, a["padding"], a["strides"], a["dilations"], oh, ow).min() > 0)


def _pool(n, kind):
    a = n.attrs
    spec = n.in_specs[0]
    nb, c, h, w, kh, kw, oh, ow = pool_geometry(spec.shape, a["window_dimensions"], a["padding"], a["strides"],
                                                a["dilations"], a["layout"], a["rounding_type"], a["output_sizes"])
    strides, dilations = a["strides"], a["dilations"]
    extent = [(o - 1) * s + (k - 1) * d + 1 for o, s, k, d in zip((oh, ow), strides, (kh, kw), dilations)]
    x = C.transpose(n.inputs[0], [0, 2, 3, 1]) if a["layout"] == "nchw" else n.inputs[0]
    work = spec.dtype if kind == "max" else "float32"
    x = x if kind == "max" else _to_float32(x, spec.dtype)
    if kind == "l2":
        x = C.mul(x, x, x.type)
    fill = lowest(spec.dtype) if kind == "max" else 0
    if not spec.static:
        return _finish(n, kind, _dynamic_pool(n, kind, x, (kh, kw), (oh, ow), fill, work), (nb, oh, ow, c))
    if kind == "max" and _zero_pad_is_exact(n, h, w, kh, kw, oh, ow):
        fill = 0  # IREE fills a padded buffer with zeros by memset, with -inf by a 4-byte pattern loop
    extra = int(kind == "average" and (oh, ow) == (1, 1) and list(dilations) == [1, 1]
                and pointwise.pad_for_pooling(n.run, x))  # one zero row more: see pointwise.py
    x = _window_extent(x, (a["padding"][0], a["padding"][2]), [extent[0] + extra, extent[1]], fill, work)
    el = C.element_of(x)
    init = linalg.fill(C.scalar_const(el, fill), outs=[C.empty([nb, oh, ow, c], el)])
    window = C.empty([kh + extra, kw], el)
    pool = {"max": linalg.pooling_nhwc_max_unsigned if spec.dtype in dtypes.UNSIGNED else linalg.pooling_nhwc_max,
            "average": linalg.pooling_nhwc_sum, "l2": linalg.pooling_nhwc_sum}[kind]
    y = pool(x, window, outs=[init], strides=list(strides), dilations=list(dilations))
    if kind == "average":
        count = np.maximum(valid_counts(h, w, kh, kw, a["padding"], strides, dilations, oh, ow), 1)
        count = count[:1, :1] if (count == count[0, 0]).all() else count
        divisor = C.const(count.reshape(1, *count.shape, 1), "float32")
        y = C.elementwise([nb, oh, ow, c], el, [y, divisor], arith.divf)
    return _finish(n, kind, y, (nb, oh, ow, c))


def _finish(n, kind, y, shape):
    """The pooled NHWC sums or maxima as the op's result: the L2 root, float16, the layout."""
    if kind == "l2":
        y = C.elementwise(list(shape), C.element_of(y), [y], mathd.sqrt)
    if kind != "max" and n.in_specs[0].dtype == "float16":
        y = tosa.cast(C.tensor_type(list(shape), ir.F16Type.get()), y)
    return C.transpose(y, [0, 3, 1, 2]) if n.attrs["layout"] == "nchw" else y


def _dynamic_pool(n, kind, x, window, out_hw, fill, dtype):
    """Pooling of NHWC `x` with a dynamic height or width (windows.py); a window spanning the
    whole dynamic image is a reduction."""
    a = n.attrs
    unsigned = n.in_specs[0].dtype in dtypes.UNSIGNED
    if any(isinstance(k, dims.Dim) for k in window):
        dims_check = out_hw == (1, 1) and not any(a["padding"])
        C.check_lowering(dims_check, "a pooling window of dynamic size must cover the whole unpadded input")
        return C.reshape(windows.global_pool(kind, x, fill, unsigned), [C.shape_of(x)[0], 1, 1, C.shape_of(x)[3]])
    return windows.pool2d(kind, x, window, a["padding"], a["strides"], a["dilations"], out_hw, fill, dtype, unsigned)


@lowering("average_pool2d")
def lower_average_pool2d(n):
    return _pool(n, "average")


@lowering("l2_pool2d")
def lower_l2_pool2d(n):
    return _pool(n, "l2")


@lowering("max_pool2d")
def lower_max_pool2d(n):
    return _pool(n, "max")


# ---------------------------------------------------------------- resample2d


def _resample_tables(spec, a, linear):
    """Compile-time tables per resampled axis: source indices (i0[, i1]) and, for linear, the
    weight of i1; with their indexing maps, (axis, first table) pairs and the output shape."""
    out_shape, tables, maps, axes = list(spec.shape), [], [], []
    for axis, size in zip(a["axes"], resample_sizes(spec.shape, a["scales"], a["sizes"], a["axes"])):
        out_shape[axis] = size
        plan = resample_plan(spec.shape[axis], size, a["mode"])
        columns = [C.const(i.astype(np.int32), "int32") for i in (plan[:2] if linear else [plan])]
        if linear:
            columns.append(C.const(plan[2].astype(np.float32), "float32"))
        axes.append((axis, len(tables)))
        tables += columns
        maps += [ir.AffineMap.get(4, 0, [ir.AffineDimExpr.get(axis)])] * len(columns)
    return tables, maps, axes, out_shape


def _resample_body(x, args, axes, linear):
    """The scalar at one output position: x at the tabled source indices, blended when linear."""
    coords = [linalg_ops.IndexOp(d).result for d in range(4)]
    sources = [[arith.index_cast(ir.IndexType.get(), args[first + k]) for k in range(2 if linear else 1)]
               for _, first in axes]

    def at(choice):
        c = list(coords)
        for (axis, _), source, k in zip(axes, sources, choice):
            c[axis] = source[k]
        return tensor.extract(x, c)

    if not linear:
        return at((0, 0))

    def lerp(p, q, t):
        return arith.addf(p, arith.mulf(t, arith.subf(q, p)))

    t0, t1 = (args[first + 2] for _, first in axes)
    return lerp(lerp(at((0, 0)), at((0, 1)), t1), lerp(at((1, 0)), at((1, 1)), t1), t0)


@lowering("resample2d")
def lower_resample2d(n):
    """One linalg.generic gathering x through compile-time index (and weight) tables."""
    spec, a = n.in_specs[0], n.attrs
    linear = a["mode"] == "linear"
    x = _to_float32(n.inputs[0], spec.dtype) if linear else n.inputs[0]
    el = C.element_of(x)
    tables, maps, axes, out_shape = _resample_tables(spec, a, linear)
    maps.append(ir.AffineMap.get_identity(4))
    op = linalg.GenericOp([C.tensor_type(out_shape, el)], tables, [C.empty(out_shape, el)],
                          ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]),
                          ir.ArrayAttr.get([ir.Attribute.parse(C.PARALLEL)] * 4))
    block = op.regions[0].blocks.append(*[C.element_of(t) for t in tables], el)
    with ir.InsertionPoint(block):
        linalg.YieldOp([_resample_body(x, block.arguments, axes, linear)])
    return tosa.cast(C.storage(n.out), op.result) if linear and spec.dtype == "float16" else op.result
