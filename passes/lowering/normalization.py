"""Lowering rules: batch/instance/layer normalization (float32 arithmetic, two-pass variance)."""
import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import arith, tosa
from iree.compiler.dialects import math as mathd

from estuary.dialects.ops.normalization import default_axes
from estuary.passes.lowering import common as C
from estuary.passes.lowering import lower
from estuary.passes.lowering.reduction import reduce_generic


def _f32(v):
    if v is None or C.element_of(v) == ir.F32Type.get():
        return v
    return tosa.cast(C.tensor_type(C.shape_of(v), ir.F32Type.get()), v)


def _narrow(y, spec):
    out = C.storage(spec)
    return y if out.element_type == ir.F32Type.get() else tosa.cast(C.tensor_type(C.shape_of(y), out.element_type), y)


def _affine(x, center, inv_std, scale, bias):
    """(x - center) * inv_std [* scale] [+ bias], all broadcast to x's shape."""
    f32 = ir.F32Type.get()
    extra = [v for v in (scale, bias) if v is not None]

    def body(xv, c, s, *rest):
        y = arith.mulf(arith.subf(xv, c), s)
        i = 0
        if scale is not None:
            y = arith.mulf(y, rest[i])
            i += 1
        if bias is not None:
            y = arith.addf(y, rest[i])
        return y

    return C.elementwise(C.shape_of(x), f32, [x, center, inv_std] + extra, body)


def _moments(x, axes, epsilon):
    """Mean and 1/sqrt(variance + epsilon) over `axes`, kept as size-1 dims."""
    shape = C.shape_of(x)
    f32 = ir.F32Type.get()
    keep = [1 if i in axes else d for i, d in enumerate(shape)]
    if not axes:
        return x, C.const(np.full([1] * len(shape), 1 / np.sqrt(epsilon)), "float32")
    count = float(np.prod([shape[a] for a in axes]))
    mean = C.reshape(reduce_generic(x, axes, f32, 0.0, arith.addf), keep)
    mean = C.elementwise(keep, f32, [mean], lambda v: arith.divf(v, C.scalar_const(f32, count)))
    centered = C.elementwise(shape, f32, [x, mean], arith.subf)
    var = C.reshape(reduce_generic(centered, axes, f32, 0.0, arith.addf, lambda v: arith.mulf(v, v)), keep)
    inv = C.elementwise(keep, f32, [var], lambda v: mathd.rsqrt(
        arith.addf(arith.divf(v, C.scalar_const(f32, count)), C.scalar_const(f32, epsilon))))
    return mean, inv


def _channel_shape(rank, axis, c):
    shape = [1] * rank
    shape[axis] = c
    return shape


@lower("batch_normalization")
def lower_batch_normalization(n):
    x, mean, var, scale, bias = [_f32(v) for v in n.inputs]
    axis, eps = n.attrs["axis"], n.attrs["epsilon"]
    shape = _channel_shape(n.out.rank, axis, n.out.shape[axis])
    f32 = ir.F32Type.get()
    inv = C.elementwise(shape, f32, [C.reshape(var, shape)],
                        lambda v: mathd.rsqrt(arith.addf(v, C.scalar_const(f32, eps))))
    r = lambda v: None if v is None else C.reshape(v, shape)  # noqa: E731
    return _narrow(_affine(x, r(mean), inv, r(scale), r(bias)), n.out)


@lower("instance_normalization")
def lower_instance_normalization(n):
    x, scale, bias = [_f32(v) for v in n.inputs]
    nchw = n.attrs["layout"] == "nchw"
    axes = [2, 3] if nchw else [1, 2]
    ch = 1 if nchw else 3
    mean, inv = _moments(x, axes, n.attrs["epsilon"])
    shape = _channel_shape(4, ch, n.out.shape[ch])
    r = lambda v: None if v is None else C.reshape(v, shape)  # noqa: E731
    return _narrow(_affine(x, mean, inv, r(scale), r(bias)), n.out)


@lower("layer_normalization")
def lower_layer_normalization(n):
    x, scale, bias = [_f32(v) for v in n.inputs]
    axes = default_axes(n.out.rank, n.attrs["axes"])
    mean, inv = _moments(x, axes, n.attrs["epsilon"])
    order = list(np.argsort(axes)) if axes else []
    shape = [d if i in axes else 1 for i, d in enumerate(n.out.shape)]

    def r(v):
        return None if v is None else C.reshape(C.transpose(v, order), shape)

    return _narrow(_affine(x, mean, inv, r(scale), r(bias)), n.out)
