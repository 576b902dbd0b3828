"""Lowering rules: reductions and arg_min/arg_max.

Float sums and products are TOSA: one tosa.reduce_sum/reduce_product per run of adjacent axes
(a reshape merges the run first, so axes [1, 2] cost one reduction), with TOSA element-wise ops
around it (a sum over the spatial axes of an NHWC tensor is a linalg pooling op instead: `_sum`);
float16 is widened to float32 for the whole computation. The rest are linalg.generic reductions,
for correctness:
- max/min: IREE (3.13) lowers float tosa.reduce_max/min with -/+FLT_MAX as the initial value,
  so a slice of -inf values would give -FLT_MAX; unsigned types need maxui/minui.
- integer sums/products: TOSA takes i32 only and REQUIREs no overflow; WebNN integers wrap.
- arg_min, and arg_max of types tosa.argmax does not take: a (value, index) reduction.
An empty `axes` list applies the reduction function to each value alone.
"""
import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import _linalg_ops_gen as linalg_ops
from iree.compiler.dialects import arith, linalg, tensor, tosa
from iree.compiler.dialects import math as mathd

from estuary.base import dims, dtypes
from estuary.dialects.ops.reduction import reduced_shape
from estuary.passes.lowering import common as C
from estuary.passes.lowering import lowering, pointwise

_TOSA_ARGMAX = ("float32", "float16", "int8")  # the input types TOSA's profiles allow


def _is_float(dtype):
    return dtype in dtypes.FLOATS


def _f32():
    return ir.F32Type.get()


def _kept_shape(shape, axes):
    return [1 if i in axes else d for i, d in enumerate(shape)]


# ---------------------------------------------------------------- linalg reductions


def _extremes(dtype):
    """(lowest, highest) value of a WebNN dtype: the identities of max and min."""
    if _is_float(dtype):
        return -np.inf, np.inf
    info = np.iinfo(dtypes.to_numpy(dtype))
    return int(info.min), int(info.max)


def _extreme(x, axes, dtype, greater):
    """Max (greater) or min over `axes`; NaN propagates, unsigned compares unsigned."""
    lo, hi = _extremes(dtype)
    if _is_float(dtype):
        combine = arith.maximumf if greater else arith.minimumf
    elif dtype in dtypes.UNSIGNED:
        combine = arith.maxui if greater else arith.minui
    else:
        combine = arith.maxsi if greater else arith.minsi
    return C.reduce_generic(x, axes, lo if greater else hi, combine)


def _int_abs(dtype):
    return (lambda v: v) if dtype in dtypes.UNSIGNED else mathd.absi


def _int_reduce(kind, x, axes, dtype):
    """sum / product / l1 / sum_square of integers, wrapping in their own width."""
    square = lambda v: arith.muli(v, v)  # noqa: E731
    init, combine, pre = {"sum": (0, arith.addi, None), "product": (1, arith.muli, None),
                          "l1": (0, arith.addi, _int_abs(dtype)), "sum_square": (0, arith.addi, square)}[kind]
    return C.reduce_generic(x, axes, init, combine, pre)


# ---------------------------------------------------------------- TOSA float reductions


def _sum(x, axes, run):
    """Float32 sum over `axes`, the reduced dims kept as size 1. Over the spatial axes [1, 2] of
    an NHWC tensor with a multiple of 16 channels (a global pooling written as a reduction, as
    Core ML's and NNEF's converters write it) it is a linalg.pooling_nhwc_sum over the whole
    image: IREE fuses a tosa.reduce_sum into the dispatch of the convolution producing its input,
    which made ResNet-18's last convolution slower (docs/performance.md), while a pooling op stays
    a dispatch of its own, as WebNN's global average pool does. (`run`: the lowering run.)"""
    shape = C.shape_of(x)
    if len(shape) != 4 or sorted(axes) != [1, 2] or not dims.is_static(shape) or shape[3] % 16:
        return C.reduce_kept(x, axes, tosa.reduce_sum)
    n, h, w, c = shape
    if pointwise.pad_for_pooling(run, x):  # one zero row more: see pointwise.py
        x = C.pad_constant(x, [(0, 0), (0, 1), (0, 0), (0, 0)], 0, "float32")
        h += 1
    init = linalg.fill(C.scalar_const(_f32(), 0.0), outs=[C.empty([n, 1, 1, c], _f32())])
    return linalg.pooling_nhwc_sum(x, C.empty([h, w], _f32()), outs=[init], strides=[1, 1], dilations=[1, 1])


def _finite_or_zero(v):
    inf = C.scalar_const(v.type, np.inf)
    return arith.select(arith.cmpf(arith.CmpFPredicate.OLT, mathd.absf(v), inf), v, C.scalar_const(v.type, 0.0))


def _log_sum_exp(x, axes):
    """max + log(sum(exp(x - max))); an infinite or NaN max is replaced by 0 so that slices of
    -inf give -inf, slices holding +inf give +inf and NaN propagates."""
    shape = C.shape_of(x)
    keep = _kept_shape(shape, axes)
    t, kt = C.tensor_type(shape, _f32()), C.tensor_type(keep, _f32())
    m = C.reshape(_extreme(x, axes, "float32", True), keep)
    m = C.elementwise(keep, _f32(), [m], _finite_or_zero)
    s = C.reduce_kept(tosa.exp(t, tosa.sub(t, x, m)), axes, tosa.reduce_sum)
    return tosa.add(kt, tosa.log(kt, s), m)


def _float_reduce(kind, x, axes, run):
    """A float32 reduction other than max/min; the result keeps the reduced dims as size 1
    (`run`: the lowering run)."""
    shape = C.shape_of(x)
    keep = _kept_shape(shape, axes)
    t, kt = C.tensor_type(shape, _f32()), C.tensor_type(keep, _f32())
    if kind == "product":
        return C.reduce_kept(x, axes, tosa.reduce_product)
    if kind == "log_sum_exp":
        return _log_sum_exp(x, axes)
    if kind == "l1":
        x = tosa.abs(t, x)
    elif kind in ("l2", "sum_square"):
        x = C.mul(x, x, t)
    s = _sum(x, axes, run)
    if kind == "mean":
        count = dims.size(shape[a] for a in axes)
        if isinstance(count, dims.Dim):  # divide by the run-time element count
            scale = arith.divf(C.scalar_const(_f32(), 1.0), C.index_to_float(count, _f32()))
            return C.elementwise(keep, _f32(), [s], lambda v: arith.mulf(v, scale))
        return C.mul(s, C.const(np.full([1] * len(shape), 1.0 / count), "float32"), kt)
    if kind == "l2":
        return C.elementwise(keep, _f32(), [s], mathd.sqrt)
    if kind == "log_sum":
        return tosa.log(kt, s)
    return s


# ---------------------------------------------------------------- rules


def _each_value(kind, x, dtype):
    """The reduction function of a single value (`axes` present and empty, or a scalar)."""
    t = x.type
    if _is_float(dtype):
        if kind in ("l1", "l2"):
            return tosa.abs(t, x)
        if kind == "sum_square":
            return C.mul(x, x, t)
        if kind == "log_sum":
            return tosa.log(t, x)
        return x
    shape, el = C.shape_of(x), C.element_of(x)
    if kind in ("l1", "l2"):
        return C.elementwise(shape, el, [x], _int_abs(dtype))
    if kind == "sum_square":
        return C.elementwise(shape, el, [x], lambda v: arith.muli(v, v))
    return x


def _widened(x, dtype, fn):
    """fn(x) computed in float32 when `dtype` is float16."""
    if dtype != "float16":
        return fn(x)
    y = fn(tosa.cast(C.tensor_type(C.shape_of(x), _f32()), x))
    return tosa.cast(C.tensor_type(C.shape_of(y), ir.F16Type.get()), y)


@lowering(*("reduce_" + k for k in ("sum", "mean", "max", "min", "product", "l1", "l2", "log_sum", "log_sum_exp",
                                 "sum_square")))
def lower_reduce(n):
    x = n.inputs[0]
    dtype = n.in_specs[0].dtype
    kind = n.name[len("reduce_"):]
    out_shape, axes = reduced_shape(n.in_specs[0].shape, n.attrs["axes"], n.attrs["keep_dimensions"])
    if not axes:
        y = _each_value(kind, x, dtype)
    elif kind in ("max", "min"):
        y = _extreme(x, axes, dtype, kind == "max")
    elif _is_float(dtype):
        y = _widened(x, dtype, lambda v: _float_reduce(kind, v, axes, n.run))
    else:
        y = _int_reduce(kind, x, axes, dtype)
    return C.reshape(y, out_shape)


def _arg_generic(x, axis, dtype, greater, index_el):
    """(value, index) linalg reduction along `axis`: a strictly better value (or the first NaN)
    replaces the running one, so ties keep the first index."""
    shape = C.shape_of(x)
    rank = len(shape)
    el = C.element_of(x)
    kept = [i for i in range(rank) if i != axis]
    red_shape = [shape[i] for i in kept]
    lo, hi = _extremes(dtype)
    best = linalg.fill(C.scalar_const(el, lo if greater else hi), outs=[C.empty(red_shape, el)])
    index = linalg.fill(C.scalar_const(index_el, 0), outs=[C.empty(red_shape, index_el)])
    out_map = ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(i) for i in kept])
    maps = [ir.AffineMap.get_identity(rank), out_map, out_map]
    iters = [ir.Attribute.parse(C.REDUCTION if i == axis else C.PARALLEL) for i in range(rank)]
    op = linalg.GenericOp([C.tensor_type(red_shape, el), C.tensor_type(red_shape, index_el)], [x], [best, index],
                          ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]), ir.ArrayAttr.get(iters))
    block = op.regions[0].blocks.append(el, el, index_el)
    with ir.InsertionPoint(block):
        v, b, bi = block.arguments
        i = arith.index_cast(index_el, linalg_ops.IndexOp(axis).result)
        if _is_float(dtype):
            # unordered-greater is true for a NaN v; a NaN b (already found) is never replaced
            pred = arith.CmpFPredicate.UGT if greater else arith.CmpFPredicate.ULT
            take = arith.andi(arith.cmpf(pred, v, b), arith.cmpf(arith.CmpFPredicate.ORD, b, b))
        else:
            u = dtype in dtypes.UNSIGNED
            pred = ("ugt" if u else "sgt") if greater else ("ult" if u else "slt")
            take = arith.cmpi(getattr(arith.CmpIPredicate, pred), v, b)
        linalg.YieldOp([arith.select(take, v, b), arith.select(take, i, bi)])
    return op.results[1]


def _arg(n, greater):
    x = n.inputs[0]
    spec = n.in_specs[0]
    axis = n.attrs["axis"]
    out_shape, _ = reduced_shape(spec.shape, [axis], n.attrs["keep_dimensions"])
    red_shape = [d for i, d in enumerate(spec.shape) if i != axis]
    index_el = C.storage(n.out).element_type
    i32 = ir.IntegerType.get_signless(32)
    if greater and spec.dtype in _TOSA_ARGMAX and dims.upper(spec.shape[axis]) < 2**31:
        # tosa.argmax: first index on ties, first NaN (nan_mode PROPAGATE, the default)
        idx = tosa.argmax(C.tensor_type(red_shape, i32), x, axis)
        if n.out.dtype == "int64":
            idx = C.elementwise(red_shape, index_el, [idx], lambda v: arith.extsi(index_el, v))
    else:
        idx = _arg_generic(x, axis, spec.dtype, greater, index_el)
    return C.reshape(idx, out_shape)


@lowering("arg_max")
def lower_arg_max(n):
    return _arg(n, True)


@lowering("arg_min")
def lower_arg_min(n):
    return _arg(n, False)
