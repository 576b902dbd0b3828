"""Core ML normalizations: batchnorm, mvn, l2normalize, softmax, softmaxND, lrn, layerNormalization."""
import numpy as np

from estuary.base import dims
from estuary.importers.coreml.classic import per_channel, scalar
from estuary.importers.coreml.nd import axis_of
from estuary.importers.coreml.ops import OPS


def _moments(c, x, axes):
    mean = c.op("reduce_mean", [x], axes=axes, keep_dimensions=True)
    centred = c.op("sub", [x, mean])
    var = c.op("reduce_mean", [c.op("mul", [centred, centred])], axes=axes, keep_dimensions=True)
    return centred, var


@OPS.op("batchnorm")
def batchnorm(c, layer):
    p = layer.batchnorm
    x = c.input(layer)
    shape = c.spec(x).shape
    rank = len(shape)
    c.check(rank >= 3, f"expects an input of rank >= 3, got {list(shape)}")
    ch = int(p.channels)
    c.check(shape[-3] == ch, f"the input has {shape[-3]} channels, the layer {ch}")
    gamma = per_channel(c, c.weights(p.gamma, [ch], "gamma"), x)
    beta = per_channel(c, c.weights(p.beta, [ch], "beta"), x)
    if p.computeMeanVar:
        axes = [rank - 2, rank - 1] if p.instanceNormalization else [i for i in range(rank) if i != rank - 3]
        centred, var = _moments(c, x, axes)
        norm = c.op("div", [centred, c.op("sqrt", [c.op("add", [var, scalar(c, p.epsilon)])])])
        return c.op("add", [c.op("mul", [norm, gamma]), beta])
    mean = c.const(c.weights(p.mean, [ch], "mean"))
    var = c.const(c.weights(p.variance, [ch], "variance"))
    return c.op("batch_normalization", [x, mean, var, c.const(c.weights(p.gamma, [ch], "gamma")),
                                        c.const(c.weights(p.beta, [ch], "beta"))],
                axis=rank - 3, epsilon=float(p.epsilon))


@OPS.op("mvn")
def mvn(c, layer):
    p = layer.mvn
    x = c.input(layer)
    rank = c.spec(x).rank
    c.check(rank >= 3, "expects an input of rank >= 3")
    axes = [rank - 3, rank - 2, rank - 1] if p.acrossChannels else [rank - 2, rank - 1]
    centred, var = _moments(c, x, axes)
    if not p.normalizeVariance:
        return centred
    return c.op("div", [centred, c.op("sqrt", [c.op("add", [var, scalar(c, p.epsilon)])])])


@OPS.op("l2normalize")
def l2normalize(c, layer):
    x = c.input(layer)
    rank = c.spec(x).rank
    c.check(rank >= 3, "expects an input of rank >= 3")
    sq = c.op("reduce_sum_square", [x], axes=[rank - 3, rank - 2, rank - 1], keep_dimensions=True)
    return c.op("div", [x, c.op("sqrt", [c.op("add", [sq, scalar(c, layer.l2normalize.epsilon)])])])


@OPS.op("softmax")
def softmax(c, layer):
    x = c.input(layer)
    rank = c.spec(x).rank
    c.check(rank >= 3, "expects an input of rank >= 3 (softmax over axis -3)")
    return c.op("softmax", [x], axis=rank - 3)


@OPS.op("lrn")
def lrn(c, layer):
    p = layer.lrn
    x = c.input(layer)
    shape = list(c.spec(x).shape)
    rank = len(shape)
    c.check(rank >= 3, "expects an input of rank >= 3")
    size = int(p.localSize)
    c.check(size >= 1, "localSize must be >= 1")
    ch = shape[-3]
    # window over channels [i - (size-1)/2, i + size/2]: a banded [C, C] matrix applied along C
    lo = (size - 1) // 2
    band = np.zeros((ch, ch), np.float32)
    for i in range(ch):
        band[i, max(0, i - lo):min(ch, i - lo + size)] = 1.0
    lead = shape[:-3]
    n = dims.size(lead)
    sq = c.reshape(c.op("mul", [x, x]), [n, ch, shape[-2] * shape[-1]])
    sums = c.op("matmul", [c.const(np.broadcast_to(band, (n, ch, ch)).copy()), sq])
    sums = c.reshape(sums, shape)
    denom = c.op("add", [c.op("mul", [sums, scalar(c, p.alpha / size)]), scalar(c, p.k)])
    return c.op("div", [x, c.op("pow", [denom, scalar(c, p.beta)])])


@OPS.op("softmaxND")
def convert_softmax_nd(c, layer):
    x = c.input(layer)
    return c.op("softmax", [x], axis=axis_of(c, layer.softmaxND.axis, len(c.spec(x).shape)))


@OPS.op("layerNormalization")
def convert_layer_normalization(c, layer):
    """gamma * (x - mean) / sqrt(var + eps) + beta over the last len(normalizedShape) dimensions."""
    p = layer.layerNormalization
    x = c.input(layer)
    shape = tuple(c.spec(x).shape)
    norm = tuple(int(d) for d in p.normalizedShape)
    c.check(0 < len(norm) <= len(shape) and shape[len(shape) - len(norm):] == norm,
            f"normalizedShape {list(norm)} must be the trailing dimensions of the input shape {list(shape)}")
    axes = list(range(len(shape) - len(norm), len(shape)))
    gamma = c.const(c.weights(p.gamma, norm, what="gamma"))
    beta = c.const(c.weights(p.beta, norm, what="beta"))
    return c.op("layer_normalization", [x, gamma, beta], axes=axes, epsilon=float(p.eps))
