"""Lowering rules: reductions and arg_min/arg_max as linalg.generic reductions.

Float16 accumulates in float32; integer sums wrap in their own width. log_sum_exp subtracts the
maximum first. An empty `axes` list applies the element function alone.
"""
import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import _linalg_ops_gen as linalg_ops
from iree.compiler.dialects import arith, linalg, tensor
from iree.compiler.dialects import math as mathd

from estuary import dtypes
from estuary.dialects.ops.reduction import reduced_shape
from estuary.passes.lowering import common as C
from estuary.passes.lowering import lower


def _is_float(dtype):
    return dtype in dtypes.FLOATS


def reduce_generic(x, axes, acc_el, init, combine, pre=None):
    """linalg.generic folding `combine(acc, pre(x))` over `axes` (result drops those dims)."""
    shape = C.shape_of(x)
    rank = len(shape)
    kept = [i for i in range(rank) if i not in axes]
    out_shape = [shape[i] for i in kept]
    filled = linalg.fill(C.scalar_const(acc_el, init), outs=[tensor.empty(out_shape, acc_el)])
    maps = [ir.AffineMap.get_identity(rank), ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(i) for i in kept])]
    iters = [ir.Attribute.parse(C.REDUCTION if i in axes else C.PARALLEL) for i in range(rank)]
    op = linalg.GenericOp([C.tensor_type(out_shape, acc_el)], [x], [filled],
                          ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]), ir.ArrayAttr.get(iters))
    block = op.regions[0].blocks.append(C.element_of(x), acc_el)
    with ir.InsertionPoint(block):
        v = block.arguments[0]
        if pre is not None:
            v = pre(v)
        linalg.YieldOp([combine(block.arguments[1], v)])
    return op.result


def _extremes(dtype, el):
    if _is_float(dtype):
        return -np.inf, np.inf
    info = np.iinfo(dtypes.to_numpy(dtype))
    return int(info.min), int(info.max)


def _ops(dtype):
    f, u = _is_float(dtype), dtype in dtypes.UNSIGNED
    return {
        "add": arith.addf if f else arith.addi,
        "mul": arith.mulf if f else arith.muli,
        "max": arith.maximumf if f else (arith.maxui if u else arith.maxsi),
        "min": arith.minimumf if f else (arith.minui if u else arith.minsi),
        "abs": mathd.absf if f else (lambda v: v if u else mathd.absi(v)),
    }


def _elementwise(n, x, fn):
    el = C.element_of(x)
    return C.elementwise(C.shape_of(x), el, [x], fn)


@lower(*("reduce_" + k for k in ("sum", "mean", "max", "min", "product", "l1", "l2", "log_sum", "log_sum_exp",
                                 "sum_square")))
def lower_reduce(n):
    x = n.inputs[0]
    spec = n.in_specs[0]
    dtype = spec.dtype
    kind = n.name[len("reduce_"):]
    out_shape, axes = reduced_shape(spec.shape, n.attrs["axes"], n.attrs["keep_dimensions"])
    wide = dtype == "float16"
    if wide:
        x = C.elementwise(spec.shape, ir.F32Type.get(), [x], lambda v: arith.extf(ir.F32Type.get(), v))
    el = C.element_of(x)
    o = _ops(dtype)
    if not axes:  # "present and empty": the element function alone
        fns = {"l1": o["abs"], "l2": o["abs"], "log_sum": mathd.log, "sum_square": lambda v: o["mul"](v, v)}
        y = _elementwise(n, x, fns[kind]) if kind in fns else x
    elif kind == "log_sum_exp":
        m = reduce_generic(x, axes, el, -np.inf, arith.maximumf)
        m_keep = C.reshape(m, [1 if i in axes else d for i, d in enumerate(spec.shape)])
        shifted = C.elementwise(spec.shape, el, [x, m_keep], arith.subf)
        s = reduce_generic(shifted, axes, el, 0.0, arith.addf, mathd.exp)
        y = C.elementwise(C.shape_of(s), el, [s, m], lambda a, b: arith.addf(mathd.log(a), b))
    else:
        lo, hi = _extremes(dtype, el)
        table = {
            "sum": (0, o["add"], None), "mean": (0.0, o["add"], None), "max": (lo, o["max"], None),
            "min": (hi, o["min"], None), "product": (1, o["mul"], None), "l1": (0, o["add"], o["abs"]),
            "l2": (0.0, o["add"], lambda v: o["mul"](v, v)), "log_sum": (0.0, o["add"], None),
            "sum_square": (0, o["add"], lambda v: o["mul"](v, v)),
        }
        init, combine, pre = table[kind]
        if _is_float(dtype):
            init = float(init)
        y = reduce_generic(x, axes, el, init, combine, pre)
        count = int(np.prod([spec.shape[a] for a in axes]))
        post = {"mean": lambda v: arith.divf(v, C.scalar_const(v.type, float(count))),
                "l2": mathd.sqrt, "log_sum": mathd.log}.get(kind)
        if post is not None:
            y = _elementwise(n, y, post)
    if wide:
        y = C.elementwise(C.shape_of(y), ir.F16Type.get(), [y], lambda v: arith.truncf(ir.F16Type.get(), v))
    return C.reshape(y, out_shape)


def _arg(n, greater):
    x = n.inputs[0]
    spec = n.in_specs[0]
    axis = n.attrs["axis"]
    out_shape, _ = reduced_shape(spec.shape, [axis], n.attrs["keep_dimensions"])
    rank = spec.rank
    kept = [i for i in range(rank) if i != axis]
    red_shape = [spec.shape[i] for i in kept]
    el = C.element_of(x)
    i64 = ir.IntegerType.get_signless(64)
    lo, hi = _extremes(spec.dtype, el)
    start = lo if greater else hi
    best = linalg.fill(C.scalar_const(el, start), outs=[tensor.empty(red_shape, el)])
    index = linalg.fill(C.scalar_const(i64, -1), outs=[tensor.empty(red_shape, i64)])
    out_map = ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(i) for i in kept])
    maps = [ir.AffineMap.get_identity(rank), out_map, out_map]
    iters = [ir.Attribute.parse(C.REDUCTION if i == axis else C.PARALLEL) for i in range(rank)]
    op = linalg.GenericOp([C.tensor_type(red_shape, el), C.tensor_type(red_shape, i64)], [x], [best, index],
                          ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]), ir.ArrayAttr.get(iters))
    block = op.regions[0].blocks.append(el, el, i64)
    with ir.InsertionPoint(block):
        v, b, bi = block.arguments
        i = arith.index_cast(i64, linalg_ops.IndexOp(axis).result)
        if _is_float(spec.dtype):
            better = arith.cmpf(arith.CmpFPredicate.OGT if greater else arith.CmpFPredicate.OLT, v, b)
        else:
            u = spec.dtype in dtypes.UNSIGNED
            pred = ("ugt" if u else "sgt") if greater else ("ult" if u else "slt")
            better = arith.cmpi(getattr(arith.CmpIPredicate, pred), v, b)
        first = arith.cmpi(arith.CmpIPredicate.eq, bi, C.scalar_const(i64, -1))
        take = arith.ori(better, first)  # first index wins ties
        linalg.YieldOp([arith.select(take, v, b), arith.select(take, i, bi)])
    idx = op.results[1]
    if n.out.dtype == "int32":
        idx = C.elementwise(red_shape, ir.IntegerType.get_signless(32), [idx],
                            lambda v: arith.trunci(ir.IntegerType.get_signless(32), v))
    return C.reshape(idx, out_shape)


@lower("arg_max")
def lower_arg_max(n):
    return _arg(n, True)


@lower("arg_min")
def lower_arg_min(n):
    return _arg(n, False)
