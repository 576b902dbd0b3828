"""Compound fragments of §4.9 (and of the `nnef` parser's standard library) not owned elsewhere.

Converted directly (one nn op is faster and at least as exact as the fragment's body): sigmoid,
relu, leaky_relu, prelu, elu, softplus, softmax, batch_normalization (per-channel parameters), add_n,
copy_n, zero_point_linear_quantize (its library body uses the non-standard `cast`). Every other
compound fragment is supported by the loader's expansion of its body into primitives (listed with
`nnef_expanded` below); gelu is the parser library's definition x * sigmoid(1.702 x), not the erf
form. planewise_conv is neither in the spec nor in the parser's library.
"""
import numpy as np

from estuary.importers.nnef import quant
from estuary.importers.nnef.registry import nnef_expanded, nnef_op


def _x(c, inv):
    return c.tensor(inv.inputs["x"])


@nnef_op("sigmoid")
def sigmoid(c, inv):
    return c.op("sigmoid", [_x(c, inv)])


@nnef_op("relu")
def relu(c, inv):
    return c.op("relu", [_x(c, inv)])


@nnef_op("softplus")
def softplus(c, inv):
    return c.op("softplus", [_x(c, inv)])


@nnef_op("leaky_relu")
def leaky_relu(c, inv):
    """select(x < 0, alpha x, x): nn.leaky_relu (x >= 0 ? x : alpha x) is the same function."""
    return c.op("leaky_relu", [_x(c, inv)], alpha=float(inv.attribs["alpha"]))


@nnef_op("elu")
def elu(c, inv):
    """select(x < 0, alpha (exp(x) - 1), x); both sides give 0 at x = 0."""
    return c.op("elu", [_x(c, inv)], alpha=float(inv.attribs.get("alpha", 1.0)))


@nnef_op("prelu")
def prelu(c, inv):
    x, alpha = c.align(_x(c, inv), c.tensor(inv.inputs["alpha"]))
    return c.op("prelu", [x, alpha])


@nnef_op("softmax")
def softmax(c, inv):
    x = _x(c, inv)
    rank = c.spec(x).rank
    axes = sorted(inv.attribs.get("axes", [1]))
    c.check(len(set(axes)) == len(axes) and all(0 <= a < rank for a in axes),
            f"axes {axes} must be unique, non-negative and less than the rank {rank}")
    if len(axes) == 1:
        return c.op("softmax", [x], axis=axes[0])
    if not axes:  # e / e
        return c.op("div", [c.op("exp", [c.op("sub", [x, x])])] * 2)
    e = c.op("exp", [c.op("sub", [x, c.op("reduce_max", [x], axes=axes, keep_dimensions=True)])])
    return c.op("div", [e, c.op("reduce_sum", [e], axes=axes, keep_dimensions=True)])


def _per_channel(c, value, rank, channels):
    """`value` as a [channels] vector if it broadcasts NNEF-style along axis 1 only, else None."""
    shape = list(c.spec(value).shape)
    shape += [1] * (rank - len(shape))
    if len(shape) != rank or shape[0] != 1 or any(d != 1 for d in shape[2:]) or shape[1] not in (1, channels):
        return None
    value = c.reshape(value, [shape[1]])
    return value if shape[1] == channels else c.op("expand", [value], new_shape=[channels])


@nnef_op("batch_normalization")
def batch_normalization(c, inv):
    """offset + scale (x - mean) / sqrt(variance + epsilon): nn.batch_normalization over axis 1 when
    every parameter is per-channel, else the fragment's formula."""
    x = c.tensor(inv.inputs["input"])
    params = [c.tensor(inv.inputs[k]) for k in ("mean", "variance", "offset", "scale")]
    eps = float(inv.attribs["epsilon"])
    shape = list(c.spec(x).shape)
    if len(shape) >= 2:
        vectors = [_per_channel(c, p, len(shape), shape[1]) for p in params]
        if all(v is not None for v in vectors):
            mean, var, offset, scale = vectors
            return c.op("batch_normalization", [x, mean, var, scale, offset], axis=1, epsilon=eps)
    mean, var, offset, scale = params
    x, mean = c.align(x, mean)
    centered = c.op("sub", [x, mean])
    var = c.op("add", [var, c.const(np.float32(eps))])
    y = c.op("div", c.align(c.op("mul", c.align(scale, centered)), c.op("sqrt", [var])))
    return c.op("add", c.align(offset, y))


@nnef_op("add_n")
def add_n(c, inv):
    xs = c.tensors(inv.inputs["x"])
    c.check(len(xs) > 0, "add_n of an empty list")
    total = xs[0]
    for x in xs[1:]:
        total = c.op("add", c.align(total, x))
    return c.op("identity", [total]) if len(xs) == 1 else total


@nnef_op("copy_n")
def copy_n(c, inv):
    x = _x(c, inv)
    times = int(inv.attribs["times"])
    c.check(times >= 0, f"times must not be negative, got {times}")
    return [c.op("identity", [x]) for _ in range(times)]


@nnef_op("zero_point_linear_quantize")
def zero_point_linear_quantize(c, inv):
    """The library fragment's formula (its body needs the non-standard `cast`): s = round(x / scale) + z,
    q = clamp(s, lo, r), y = (q - z) scale with r = 2^(bits-1) - 1 (signed) or 2^bits - 1, and lo = 0
    (unsigned), -r (signed symmetric) or -r - 1 (signed)."""
    x = _x(c, inv)
    zero = c.tensor(inv.inputs["zero_point"])
    if c.spec(zero).dtype != "float32":
        zero = c.op("cast", [zero], to="float32")
    scale = c.tensor(inv.inputs["scale"])
    bits, signed, symmetric = int(inv.attribs["bits"]), inv.attribs["signed"], inv.attribs["symmetric"]
    c.check(0 < bits <= 32, f"bits must be in [1, 32], got {bits}")
    r = 2 ** (bits - 1) - 1 if signed else 2 ** bits - 1
    lo = (-r if symmetric else -r - 1) if signed else 0
    x, zero, scale = c.align(x, zero, scale)
    s = c.op("add", [quant.round_half_up(c, c.op("div", [x, scale])), zero])
    q = c.op("max", [c.op("min", [s, c.const(np.float32(r))]), c.const(np.float32(lo))])
    return c.op("mul", [c.op("sub", [q, zero]), scale])


nnef_expanded("selu", "gelu", "silu", "softabs", "separable_conv", "separable_deconv",
              "local_response_normalization", "local_mean_normalization", "local_variance_normalization",
              "local_contrast_normalization", "l1_normalization", "l2_normalization", "moments",
              "linear_quantize", "min_max_linear_quantize", "logarithmic_quantize")
