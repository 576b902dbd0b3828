"""Core ML ND random layers: randomNormal/Uniform/Bernoulli Like/Static/Dynamic, categoricalDistribution.

Seeds: the spec only says "seed used for the distribution". Estuary's generator is counter-based
(nn.random_uniform / nn.random_normal): the output is a fixed function of (seed, element position),
so a model returns the same values on every prediction, and two layers with the same seed and
shape return the same values (every seed, including -1, is such a fixed stream). Values cannot
match Apple's generator, only the distributions do.
"""
import numpy as np

from estuary.importers.coreml.nd import constant_input
from estuary.importers.coreml.ops import OPS


def _shape(c, layer, kind):
    """Output shape: the input's shape (Like), outputShape (Static) or the constant input (Dynamic)."""
    if kind.endswith("Like"):
        return list(c.spec(c.input(layer)).shape)
    if kind.endswith("Static"):
        shape = [int(d) for d in getattr(layer, kind).outputShape]
    else:
        a = np.asarray(constant_input(c, layer, 0, "output shape"), dtype=np.float64).reshape(-1)
        c.check(np.all(a == np.round(a)), f"output shape {a.tolist()} must hold integers")
        shape = [int(d) for d in a]
    c.check(len(shape) > 0 and all(d > 0 for d in shape), f"output shape {shape} must be non-empty and positive")
    return shape


def _uniform(c, shape, seed, low=0.0, high=1.0):
    return c.op("random_uniform", [], shape=shape, low=low, high=high, seed=int(seed))


def _register(kind, build):
    @OPS.op(kind)
    def convert(c, layer):
        return build(c, getattr(layer, kind), _shape(c, layer, kind))
    convert.__name__ = f"convert_{kind}"


def _normal(c, p, shape):
    c.check(p.stdDev >= 0, f"stdDev {p.stdDev} must be non-negative")
    return c.op("random_normal", [], shape=shape, mean=float(np.float32(p.mean)), stddev=float(np.float32(p.stdDev)),
                seed=int(p.seed))


def _uniform_layer(c, p, shape):
    low, high = float(np.float32(p.minVal)), float(np.float32(p.maxVal))
    c.check(low <= high, f"minVal {low} must not exceed maxVal {high}")
    return _uniform(c, shape, p.seed, low, high)


def _bernoulli(c, p, shape):
    """1.0 with probability prob: u < prob for u uniform in [0, 1)."""
    prob = float(np.float32(p.prob))
    c.check(0.0 <= prob <= 1.0, f"prob {prob} must be in [0, 1]")
    hit = c.op("lesser", [_uniform(c, shape, p.seed), c.const(np.float32(prob))])
    return c.op("cast", [hit], to="float32")


for _suffix in ("Like", "Static", "Dynamic"):
    _register("randomNormal" + _suffix, _normal)
    _register("randomUniform" + _suffix, _uniform_layer)
    _register("randomBernoulli" + _suffix, _bernoulli)


@OPS.op("categoricalDistribution")
def convert_categorical(c, layer):
    """numSamples class indices per row of the last axis (as float). Probabilities p =
    softmax(logits / temperature), logits = the input (isLogits) or log(input + eps); sample =
    #{k < C - 1 : cdf[k] <= u * cdf[C - 1]} for u uniform in [0, 1) (inverse-CDF sampling)."""
    p = layer.categoricalDistribution
    x = c.input(layer)
    shape = list(c.spec(x).shape)
    c.check(len(shape) >= 1, "input must have rank >= 1")
    n = int(p.numSamples)
    c.check(n >= 1, f"numSamples {n} must be positive")
    temperature = float(np.float32(p.temperature))
    c.check(temperature > 0, f"temperature {temperature} must be positive")
    classes = shape[-1]
    out = shape[:-1] + [n]
    if classes == 1:
        return c.const(np.zeros(out, np.float32))
    logits = x if p.isLogits else c.op("log", [c.op("add", [x, c.const(np.float32(p.eps))])])
    if temperature != 1.0:
        logits = c.op("div", [logits, c.const(np.float32(temperature))])
    probs = c.op("softmax", [logits], axis=len(shape) - 1)
    cdf = c.op("cumulative_sum", [probs], axis=len(shape) - 1)
    rank = len(shape)
    head = c.op("slice", [cdf], starts=[0] * rank, sizes=shape[:-1] + [classes - 1])
    total = c.op("slice", [cdf], starts=[0] * (rank - 1) + [classes - 1], sizes=shape[:-1] + [1])
    head = c.op("reshape", [head], new_shape=shape[:-1] + [1, classes - 1])
    total = c.op("reshape", [total], new_shape=shape[:-1] + [1, 1])
    u = c.op("mul", [_uniform(c, shape[:-1] + [n, 1], p.seed), total])
    below = c.op("cast", [c.op("lesser_or_equal", [head, u])], to="float32")
    return c.op("reduce_sum", [below], axes=[rank], keep_dimensions=False)
