"""Declarations: Random-number ops with explicit seeds.

Counter-based: element i of the output (row-major) is a pure function of (seed, i), so a compiled
model returns the same values on every call for a given seed, on every target, and the numpy
`reference` reproduces them bit for bit for uniform values. The generator is a 32-bit integer hash
(`hash32`, "lowbias32"), not Apple's or any framework's generator: values cannot match theirs,
only their distribution can.
"""
import numpy as np

from estuary.dialects.core import DType, Float, Int, Ints, TensorSpec, check, nn_op

FLOAT_TYPES = ("float32", "float16")
GOLDEN = 0x9E3779B9


def hash32(x):
    """lowbias32 finalizer on uint32 numpy arrays (wrapping)."""
    x = np.asarray(x, np.uint32)
    with np.errstate(over="ignore"):
        x = x ^ (x >> np.uint32(16))
        x = x * np.uint32(0x7FEB352D)
        x = x ^ (x >> np.uint32(15))
        x = x * np.uint32(0x846CA68B)
        x = x ^ (x >> np.uint32(16))
    return x


def seed_words(seed):
    """Two 32-bit keys derived from a 64-bit seed (any int64, including -1)."""
    s = int(seed) & 0xFFFFFFFFFFFFFFFF
    k1 = int(hash32(np.uint32(s & 0xFFFFFFFF) ^ np.uint32(0x243F6A88)))
    k2 = int(hash32(np.uint32(s >> 32) ^ np.uint32(k1)))
    return k1, k2


def bits(seed, counters):
    """The generator: hash32(hash32(counter ^ k1) + k2) for uint32 counters."""
    k1, k2 = seed_words(seed)
    with np.errstate(over="ignore"):
        return hash32(hash32(np.asarray(counters, np.uint32) ^ np.uint32(k1)) + np.uint32(k2))


def unit(b):
    """uint32 bits -> float in [0, 1): the top 24 bits times 2^-24 (exact in float32)."""
    return (b >> np.uint32(8)).astype(np.float64) * 2.0 ** -24


def _uniform_ref(shape, low, high, seed, data_type):
    u = unit(bits(seed, np.arange(int(np.prod(shape)), dtype=np.uint32))).astype(np.float32)
    return (np.float32(low) + u * np.float32(high - low)).astype(data_type).reshape(shape)


def _normal_ref(shape, mean, stddev, seed, data_type):
    n = int(np.prod(shape))
    c = np.arange(n, dtype=np.uint32) * np.uint32(2)
    u1 = 1.0 - unit(bits(seed, c))  # (0, 1]: log is finite
    u2 = unit(bits(seed, c + np.uint32(1)))
    z = np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)
    return (mean + stddev * z).astype(data_type).reshape(shape)


def _shape_rule(shape, data_type):
    check(all(d > 0 for d in shape), f"shape {list(shape)} must have positive dimensions")
    check(int(np.prod(shape)) < 2 ** 31, f"shape {list(shape)} has too many elements (limit 2^31 - 1)")
    return TensorSpec(shape, data_type)


@nn_op("random_uniform", [], {"shape": Ints(), "low": Float(0.0), "high": Float(1.0), "seed": Int(0),
                              "data_type": DType("float32", FLOAT_TYPES)},
       reference=_uniform_ref)
def random_uniform(shape, low, high, seed, data_type):
    """Uniform values in [low, high): low + u * (high - low), u = top 24 bits of the hash * 2^-24."""
    check(low <= high, f"low {low} must not exceed high {high}")
    return _shape_rule(shape, data_type)


@nn_op("random_normal", [], {"shape": Ints(), "mean": Float(0.0), "stddev": Float(1.0), "seed": Int(0),
                             "data_type": DType("float32", FLOAT_TYPES)},
       reference=_normal_ref)
def random_normal(shape, mean, stddev, seed, data_type):
    """Normal values by Box-Muller: mean + stddev * sqrt(-2 ln(1 - u1)) * cos(2 pi u2), with u1, u2
    from counters 2i and 2i + 1 (computed in float32 on the device)."""
    check(stddev >= 0, f"stddev {stddev} must be non-negative")
    return _shape_rule(shape, data_type)
