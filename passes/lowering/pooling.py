"""Lowering rules: pooling as linalg pooling ops over an explicitly padded NHWC input.

Max pooling pads with the lowest value; average and L2 pooling pad with zeros and divide by /
sum over a compile-time count of the valid elements in each window. float16 computes in float32.
"""
import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import arith, linalg, tensor, tosa
from iree.compiler.dialects import math as mathd

from estuary import dtypes
from estuary.dialects.ops.pooling import _windows, pool_geometry
from estuary.passes.lowering import common as C
from estuary.passes.lowering import lower


def _pad_or_crop(x, begin, end, axis, fill, dtype):
    if end < 0:
        shape = C.shape_of(x)
        sizes = list(shape)
        sizes[axis] += end
        x = C.slice_(x, [0] * 4, sizes)
        end = 0
    pads = [(0, 0)] * 4
    pads[axis] = (begin, end)
    return C.pad_constant(x, pads, fill, dtype)


def _lowest(dtype):
    return -np.inf if dtype in dtypes.FLOATS else int(np.iinfo(dtypes.to_numpy(dtype)).min)


def _pool(n, kind):
    a = n.attrs
    spec = n.in_specs[0]
    dtype = spec.dtype
    x = n.inputs[0]
    if a["layout"] == "nchw":
        x = C.transpose(x, [0, 2, 3, 1])
    nb, c, h, w, kh, kw, oh, ow = pool_geometry(spec.shape, a["window_dimensions"], a["padding"], a["strides"],
                                                a["dilations"], a["layout"], a["rounding_type"], a["output_sizes"])
    (sh, sw), (dh, dw) = a["strides"], a["dilations"]
    pt, pl = a["padding"][0], a["padding"][2]
    work = "float32" if dtype == "float16" else dtype
    if work != dtype:
        x = tosa.cast(C.tensor_type([nb, h, w, c], ir.F32Type.get()), x)
    if kind == "l2":
        x = C.mul(x, x, x.type)
    fill = _lowest(dtype) if kind == "max" else 0
    x = _pad_or_crop(x, pt, (oh - 1) * sh + (kh - 1) * dh + 1 - h - pt, 1, fill, work)
    x = _pad_or_crop(x, pl, (ow - 1) * sw + (kw - 1) * dw + 1 - w - pl, 2, fill, work)
    el = C.element_of(x)
    init = linalg.fill(C.scalar_const(el, fill), outs=[tensor.empty([nb, oh, ow, c], el)])
    window = tensor.empty([kh, kw], el)
    kw_args = dict(strides=[sh, sw], dilations=[dh, dw])
    if kind == "max":
        if dtype in dtypes.UNSIGNED:
            init = linalg.fill(C.scalar_const(el, 0), outs=[tensor.empty([nb, oh, ow, c], el)])
            y = linalg.pooling_nhwc_max_unsigned(x, window, outs=[init], **kw_args)
        else:
            y = linalg.pooling_nhwc_max(x, window, outs=[init], **kw_args)
    else:
        y = linalg.pooling_nhwc_sum(x, window, outs=[init], **kw_args)
        if kind == "average":
            rows = _windows(h, kh, pt, sh, dh, oh)
            cols = _windows(w, kw, pl, sw, dw, ow)
            count = np.array([[max(1, len(r) * len(q)) for q in cols] for r in rows], np.float64)
            inv = C.const((1.0 / count).reshape(1, oh, ow, 1), work)
            y = C.mul(y, inv, y.type)
        else:
            y = C.elementwise([nb, oh, ow, c], el, [y], mathd.sqrt)
    if work != dtype:
        y = tosa.cast(C.tensor_type([nb, oh, ow, c], ir.F16Type.get()), y)
    if a["layout"] == "nchw":
        y = C.transpose(y, [0, 3, 1, 2])
    return y


@lower("average_pool2d")
def lower_average_pool2d(n):
    return _pool(n, "average")


@lower("l2_pool2d")
def lower_l2_pool2d(n):
    return _pool(n, "l2")


@lower("max_pool2d")
def lower_max_pool2d(n):
    return _pool(n, "max")


def _take_axis(x, axis, indices):
    """x gathered along `axis` at compile-time `indices` (linalg.generic + tensor.extract)."""
    from iree.compiler.dialects import _linalg_ops_gen as linalg_ops

    shape = C.shape_of(x)
    out_shape = list(shape)
    out_shape[axis] = len(indices)
    el = C.element_of(x)
    idx = C.const(np.asarray(indices, np.int32), "int32")
    rank = len(shape)
    maps = [ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(axis)]), ir.AffineMap.get_identity(rank)]
    op = linalg.GenericOp([C.tensor_type(out_shape, el)], [idx], [tensor.empty(out_shape, el)],
                          ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]),
                          ir.ArrayAttr.get([ir.Attribute.parse(C.PARALLEL)] * rank))
    block = op.regions[0].blocks.append(ir.IntegerType.get_signless(32), el)
    with ir.InsertionPoint(block):
        coords = [linalg_ops.IndexOp(d).result for d in range(rank)]
        coords[axis] = arith.index_cast(ir.IndexType.get(), block.arguments[0])
        linalg.YieldOp([tensor.extract(x, coords)])
    return op.result


@lower("resample2d")
def lower_resample2d(n):
    from estuary.dialects.ops.pooling import _resample_scales, resample_plan

    spec = n.in_specs[0]
    a = n.attrs
    x = n.inputs[0]
    f32 = ir.F32Type.get()
    if spec.dtype == "float16":
        x = tosa.cast(C.tensor_type(spec.shape, f32), x)
    factors, sizes = _resample_scales(spec.shape, a["scales"], a["sizes"], a["axes"])
    for axis, f, size in zip(a["axes"], factors, sizes):
        i0, i1, w = resample_plan(C.shape_of(x)[axis], size, f, a["mode"])
        if i1 is None:
            x = _take_axis(x, axis, i0)
            continue
        shape = [1] * spec.rank
        shape[axis] = size
        lo, hi = _take_axis(x, axis, i0), _take_axis(x, axis, i1)
        wt = C.const(w.reshape(shape), "float32")
        x = C.elementwise(C.shape_of(lo), f32, [lo, hi, wt],
                          lambda p, q, t: arith.addf(p, arith.mulf(t, arith.subf(q, p))))
    if spec.dtype == "float16":
        x = tosa.cast(C.storage(n.out), x)
    return x
