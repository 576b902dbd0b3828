"""Batch-norm and per-channel scale / bias folding into the preceding conv2d's constant weights;
a batch norm that follows no convolution gets its scale precomputed.

batch_normalization(conv(x, W, b)) with constant parameters is conv(x, W * s, (b - mean) * s + beta)
with s = gamma / sqrt(var + eps) per output channel (computed in float64, rounded once); a
following mul / add by a constant that varies only along the channel axis folds the same way.
"""
import numpy as np

from estuary.dialects import graph
from estuary.passes import register
from estuary.passes.cleanup import dce
from estuary.passes.lowering import nn_ops
from estuary.passes.rewrite import attrs, constant, dtype_of, make_constant, operands, producer, replace, shape_of

FLOATS = ("float32", "float16")


def _conv_parts(value):
    """(op, W, b or None, attrs, channel axis) of a single-use conv2d with constant W (and b)."""
    op = producer(value, "conv2d")
    if op is None or len(list(value.uses)) != 1 or dtype_of(value) not in FLOATS:
        return None
    x, w, b = operands(op)
    warr = constant(w)
    barr = None if b is None else constant(b)
    if warr is None or (b is not None and barr is None):
        return None
    a = attrs(op)
    return op, warr, barr, a, (1 if a["input_layout"] == "nchw" else 3)


def _rebuild(nn, old, conv, warr, barr, scale, shift):
    """Replace `old` by conv with W scaled per output channel and bias -> bias * scale + shift."""
    op, _, _, a, _ = conv
    x = operands(op)[0]
    dtype = dtype_of(op.results[0])
    o_axis = a["filter_layout"].index("o")
    shape = [1] * 4
    shape[o_axis] = -1
    w64 = warr.astype(np.float64) * scale.reshape(shape)
    b64 = (np.zeros(scale.shape) if barr is None else barr.astype(np.float64)) * scale + shift

    def build():
        w = make_constant(nn, w64, dtype)
        b = make_constant(nn, b64, dtype)
        return graph.create_op("conv2d", [x, w, b], {k: v for k, v in a.items() if v is not None})

    replace(nn, old, build)


def _fold_bn(nn, op):
    x, mean, var, gamma, beta = operands(op)
    conv = _conv_parts(x)
    a = attrs(op)
    if conv is None or a["axis"] != conv[4]:
        return False
    params = [constant(v) if v is not None else None for v in (mean, var, gamma, beta)]
    if any(p is None and v is not None for p, v in zip(params, (mean, var, gamma, beta))):
        return False
    m, v, g, b = (None if p is None else p.astype(np.float64) for p in params)
    eps = float(np.asarray(a["epsilon"], dtype=np.dtype(dtype_of(x))))
    s = 1.0 / np.sqrt(v + eps)
    if g is not None:
        s = s * g
    shift = -m * s + (0.0 if b is None else b)
    _rebuild(nn, op, conv, conv[1], conv[2], s, shift)
    return True


def _precompute_bn(nn, op):
    """A float32 batch_normalization with constant parameters that follows no convolution (a
    pre-activation BN after a concatenation, as in DenseNet) as (x - mean) * s + bias with
    s = scale / sqrt(variance + epsilon) computed here in float64: IREE would otherwise evaluate
    each rsqrt chain at compile time in a program of its own (DenseNet-121: 62 of them)."""
    x, mean, var, gamma, beta = operands(op)
    if dtype_of(x) != "float32" or constant(mean) is None or constant(var) is None \
            or any(v is not None and constant(v) is None for v in (gamma, beta)):
        return False
    a = attrs(op)
    rank = len(shape_of(x))
    eps = float(np.float32(a["epsilon"]))
    s = 1.0 / np.sqrt(constant(var).astype(np.float64) + eps)
    if gamma is not None:
        s = s * constant(gamma).astype(np.float64)
    along = (-1,) + (1,) * (rank - 1 - a["axis"])  # broadcasts along `axis`

    def build():
        y = graph.create_op("sub", [x, make_constant(nn, constant(mean).reshape(along), "float32")], {})
        y = graph.create_op("mul", [y, make_constant(nn, s.reshape(along), "float32")], {})
        if beta is not None:
            y = graph.create_op("add", [y, make_constant(nn, constant(beta).reshape(along), "float32")], {})
        return y

    replace(nn, op, build)
    return True


def _channel_vector(arr, shape, axis):
    """`arr` (broadcast against `shape`) as a per-channel vector along `axis`, or None."""
    if arr is None or arr.ndim > len(shape):
        return None
    full = arr.reshape((1,) * (len(shape) - arr.ndim) + arr.shape)
    if any(d != 1 for i, d in enumerate(full.shape) if i != axis):
        return None
    return np.broadcast_to(full.reshape(-1), (shape[axis],)).astype(np.float64)


def _fold_affine(nn, op, kind):
    a, b = op.operands
    conv, other = _conv_parts(a), b
    if conv is None:
        conv, other = _conv_parts(b), a
    if conv is None or shape_of(op.results[0]) != shape_of(conv[0].results[0]):
        return False
    vec = _channel_vector(constant(other), shape_of(op.results[0]), conv[4])
    if vec is None:
        return False
    n = vec.shape[0]
    if kind == "mul":
        _rebuild(nn, op, conv, conv[1], conv[2], vec, np.zeros(n))
    else:
        _rebuild(nn, op, conv, conv[1], conv[2], np.ones(n), vec)
    return True


@register("nn-fold-batch-norm")
def fold_batch_norm(nn, options):
    """Fold batch_normalization and constant per-channel mul/add into the preceding conv2d."""
    changed = True
    while changed:
        changed = False
        for op in nn_ops(nn.module.operation):
            name = op.name[3:]
            if name == "batch_normalization":
                changed |= _fold_bn(nn, op) or _precompute_bn(nn, op)
            elif name in ("mul", "add"):
                changed |= _fold_affine(nn, op, name)
        dce(nn, options)
