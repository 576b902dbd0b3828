"""Lowering rules: batch/instance/layer normalization in TOSA, computed in float32.

Every rule is (x - mean) * rsqrt(variance + epsilon) [* scale] [+ bias], with the statistics
(instance/layer) from tosa.reduce_sum in two passes: the mean, then the mean of the squared
centred values (no E[x^2] - E[x]^2 cancellation). float16 operands are widened to float32 and
the result is rounded once; epsilon is first cast to the input's type, as the spec says.
"""
import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import arith, tosa

from estuary.base import dims
from estuary.dialects.ops.matmul import as_dtype
from estuary.dialects.ops.normalization import default_axes
from estuary.passes.lowering import common as C
from estuary.passes.lowering import lowering


def _f32():
    return ir.F32Type.get()


def _to_f32(v):
    if v is None or C.element_of(v) == _f32():
        return v
    return tosa.cast(C.tensor_type(C.shape_of(v), _f32()), v)


def _narrow(y, spec):
    out = C.storage(spec)
    return y if out.element_type == _f32() else tosa.cast(C.tensor_type(C.shape_of(y), out.element_type), y)


def _scalar(value, rank):
    return C.const(np.full([1] * rank, value), "float32")


def _out_type(a, b):
    """Result type of a broadcasting binary op on equal-rank float32 a, b."""
    return C.tensor_type([y if x == 1 else x for x, y in zip(C.shape_of(a), C.shape_of(b))], _f32())


def _sub(a, b):
    return tosa.sub(_out_type(a, b), a, b)


def _add(a, b):
    return tosa.add(_out_type(a, b), a, b)


def _mul(a, b):
    return C.mul(a, b, _out_type(a, b))


def _reduce_mean(x, axes, count):
    """Mean over `axes`, kept as size-1 dims (tosa.reduce_sum per axis, then * 1/count; a
    dynamic count is read at run time). With dynamic dimensions one reduction runs over the
    merged axes: IREE 3.13 failed to schedule a chain of per-axis reductions through a dynamic
    intermediate ("cyclic dependencies")."""
    shape = C.shape_of(x)
    if dims.is_static(shape):
        for a in axes:
            shape[a] = 1
            x = tosa.reduce_sum(x, a, results=[C.tensor_type(shape, _f32())])
    else:
        x = C.reduce_kept(x, axes, tosa.reduce_sum)
        shape = C.shape_of(x)
    if isinstance(count, dims.Dim):
        scale = arith.divf(C.scalar_const(_f32(), 1.0), C.index_to_float(count, _f32()))
        return C.elementwise(shape, _f32(), [x], lambda v: arith.mulf(v, scale))
    return _mul(x, _scalar(1.0 / count, len(shape)))


def _inv_std(var, epsilon):
    """1 / sqrt(var + epsilon)."""
    return tosa.rsqrt(var.type, _add(var, _scalar(epsilon, len(C.shape_of(var)))))


def _affine(centered, inv_std, scale, bias):
    """centered * inv_std [* scale] [+ bias], all of equal rank (size-1 dims broadcast)."""
    y = _mul(centered, inv_std)
    if scale is not None:
        y = _mul(y, scale)
    if bias is not None:
        y = _add(y, bias)
    return y


def _normalize(x, axes, epsilon, scale, bias):
    """Normalize float32 x over `axes` with statistics computed on the fly."""
    rank = len(C.shape_of(x))
    if not axes:  # nothing reduced: mean = x, variance = 0 (x - x keeps NaN/inf as the spec does)
        return _affine(_sub(x, x), _scalar(1.0 / np.sqrt(epsilon), rank), scale, bias)
    count = dims.size(C.shape_of(x)[a] for a in axes)
    count = float(count) if not isinstance(count, dims.Dim) else count
    centered = _sub(x, _reduce_mean(x, axes, count))
    var = _reduce_mean(_mul(centered, centered), axes, count)
    return _affine(centered, _inv_std(var, epsilon), scale, bias)


def _channel(v, rank, axis):
    """A 1-D per-channel operand reshaped to broadcast along `axis` of a rank-`rank` tensor."""
    if v is None:
        return None
    shape = [1] * rank
    shape[axis] = C.shape_of(v)[0]
    return C.reshape(v, shape)


@lowering("batch_normalization")
def lower_batch_normalization(n):
    x, mean, var, scale, bias = [_to_f32(v) for v in n.inputs]
    axis, rank = n.attrs["axis"], n.out.rank
    eps = as_dtype(n.attrs["epsilon"], n.out.dtype)
    inv = _inv_std(_channel(var, rank, axis), eps)
    y = _affine(_sub(x, _channel(mean, rank, axis)), inv, _channel(scale, rank, axis), _channel(bias, rank, axis))
    return _narrow(y, n.out)


@lowering("instance_normalization")
def lower_instance_normalization(n):
    x, scale, bias = [_to_f32(v) for v in n.inputs]
    nchw = n.attrs["layout"] == "nchw"
    axes, ch = ([2, 3], 1) if nchw else ([1, 2], 3)
    eps = as_dtype(n.attrs["epsilon"], n.out.dtype)
    return _narrow(_normalize(x, axes, eps, _channel(scale, 4, ch), _channel(bias, 4, ch)), n.out)


@lowering("layer_normalization")
def lower_layer_normalization(n):
    """scale/bias dims follow the listed axes: transpose them into the input's axis order."""
    x, scale, bias = [_to_f32(v) for v in n.inputs]
    axes = default_axes(n.out.rank, n.attrs["axes"])
    order = [int(i) for i in np.argsort(axes)]
    shape = [d if i in axes else 1 for i, d in enumerate(n.out.shape)]

    def place(v):
        return None if v is None else C.reshape(C.transpose(v, order), shape)

    eps = as_dtype(n.attrs["epsilon"], n.out.dtype)
    return _narrow(_normalize(x, axes, eps, place(scale), place(bias)), n.out)
