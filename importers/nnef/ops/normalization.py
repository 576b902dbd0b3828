"""batch_normalization (per-channel parameters, §4.9.4) converted directly; the other
normalization fragments and moments are expanded from their bodies.
"""
import numpy as np

from estuary.importers.nnef.ops import OPS


def _per_channel(c, value, rank, channels):
    """`value` as a [channels] vector if it broadcasts NNEF-style along axis 1 only, else None."""
    shape = list(c.spec(value).shape)
    if len(shape) == rank and rank > 2 and shape[-1] == channels != 1 and all(d == 1 for d in shape[:-1]):
        return c.reshape(value, [channels])  # [1, ..., 1, C]: torch-to-nnef's Khronos target, per channel
    shape += [1] * (rank - len(shape))
    if len(shape) != rank or shape[0] != 1 or any(d != 1 for d in shape[2:]) or shape[1] not in (1, channels):
        return None
    value = c.reshape(value, [shape[1]])
    return value if shape[1] == channels else c.op("expand", [value], new_shape=[channels])


@OPS.op("batch_normalization")
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


# Supported through the expansion of their fragment bodies into the converters above.
OPS.expand("local_response_normalization", "local_mean_normalization", "local_variance_normalization",
           "local_contrast_normalization", "l1_normalization", "l2_normalization", "moments")
