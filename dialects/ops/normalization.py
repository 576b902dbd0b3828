"""nn ops: batch, instance and layer normalization (WebNN §7.7.6, §7.7.24, §7.7.25)."""
import numpy as np

from estuary.base import dtypes
from estuary.dialects.core import Float, Int, Ints, Str, axes_valid, check, dtype_in, nn_op, same_dim, same_dtype
from estuary.dialects.ops.matmul import as_dtype


def _param(spec, shape, what, input):
    """An optional 1-D/N-D parameter operand: input's data type, exactly `shape` (a dynamic
    dimension of the input and the parameter's fixed size are unified: the runtime checks them)."""
    if spec is not None:
        same_dtype(input, spec, what=f"input and {what}")
        message = f"{what} must have shape {list(shape)}, got {list(spec.shape)}"
        check(spec.rank == len(shape), message)
        for a, b in zip(shape, spec.shape):
            same_dim(a, b, message)


def _bn_ref(x, mean, var, scale, bias, axis, epsilon):
    shape = [1] * x.ndim
    shape[axis] = -1
    r = lambda v: v.astype(np.float64).reshape(shape)  # noqa: E731
    y = (x.astype(np.float64) - r(mean)) / np.sqrt(r(var) + as_dtype(epsilon, str(x.dtype)))
    if scale is not None:
        y = y * r(scale)
    if bias is not None:
        y = y + r(bias)
    return y


@nn_op("batch_normalization", ["input", "mean", "variance", "scale?", "bias?"],
       {"axis": Int(1), "epsilon": Float(1e-5)}, reference=_bn_ref, dynamic=True)
def batch_normalization(input, mean, variance, scale, bias, axis, epsilon):
    """(x - mean) / sqrt(variance + epsilon) * scale + bias, per index of `axis`."""
    dtype_in(input, dtypes.FLOATS)
    check(0 <= axis < input.rank, f"axis {axis} out of range for rank {input.rank}")
    c = input.shape[axis]
    for spec, what in ((mean, "mean"), (variance, "variance"), (scale, "scale"), (bias, "bias")):
        _param(spec, (c,), what, input)
    return input


def _in_ref(x, scale, bias, epsilon, layout):
    xs = x.astype(np.float64)
    if layout == "nhwc":
        xs = xs.transpose(0, 3, 1, 2)
    mean = xs.mean(axis=(2, 3), keepdims=True)
    var = xs.var(axis=(2, 3), keepdims=True)
    y = (xs - mean) / np.sqrt(var + as_dtype(epsilon, str(x.dtype)))
    if scale is not None:
        y = y * scale.astype(np.float64).reshape(1, -1, 1, 1)
    if bias is not None:
        y = y + bias.astype(np.float64).reshape(1, -1, 1, 1)
    return y.transpose(0, 2, 3, 1) if layout == "nhwc" else y


@nn_op("instance_normalization", ["input", "scale?", "bias?"],
       {"epsilon": Float(1e-5), "layout": Str("nchw", ("nchw", "nhwc"))}, reference=_in_ref, dynamic=True)
def instance_normalization(input, scale, bias, epsilon, layout):
    """Normalize each (batch, channel) over the spatial dimensions of a 4-D input."""
    dtype_in(input, dtypes.FLOATS)
    check(input.rank == 4, f"input must be of rank 4, got shape {list(input.shape)}")
    c = input.shape[1] if layout == "nchw" else input.shape[3]
    _param(scale, (c,), "scale", input)
    _param(bias, (c,), "bias", input)
    return input


def default_axes(rank, axes):
    """The spec's default when `axes` is absent: 1 .. rank-1 (empty for rank <= 1)."""
    return list(range(1, rank)) if axes is None else list(axes)


def _ln_ref(x, scale, bias, axes, epsilon):
    ax = tuple(default_axes(x.ndim, axes))
    xs = x.astype(np.float64)
    mean = xs.mean(axis=ax, keepdims=True) if ax else xs
    var = xs.var(axis=ax, keepdims=True) if ax else np.zeros_like(xs)
    y = (xs - mean) / np.sqrt(var + as_dtype(epsilon, str(x.dtype)))
    shape = [x.shape[i] if i in ax else 1 for i in range(x.ndim)]
    order = np.argsort(ax) if ax else []
    if scale is not None:
        y = y * scale.astype(np.float64).transpose(order).reshape(shape)
    if bias is not None:
        y = y + bias.astype(np.float64).transpose(order).reshape(shape)
    return y


@nn_op("layer_normalization", ["input", "scale?", "bias?"], {"axes": Ints(None), "epsilon": Float(1e-5)},
       reference=_ln_ref, dynamic=True)
def layer_normalization(input, scale, bias, axes, epsilon):
    """Normalize over `axes` (absent: all but the first; empty: none, the output is then bias, or 0).
    scale/bias have one dimension per axis, sized as the input along that axis, in the order the
    axes are listed."""
    dtype_in(input, dtypes.FLOATS)
    ax = default_axes(input.rank, axes)
    axes_valid(ax, input.rank)
    expected = [input.shape[a] for a in ax]
    for spec, what in ((scale, "scale"), (bias, "bias")):
        if spec is not None:
            same_dtype(input, spec, what=f"input and {what}")
            check(spec.rank == len(ax), f"{what} must have rank {len(ax)} (one dimension per axis of {ax}), "
                                        f"got shape {list(spec.shape)}")
            _param(spec, expected, what, input)
    return input
