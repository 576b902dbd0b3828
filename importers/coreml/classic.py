"""Helpers shared by the classic (rank-5 era) Core ML layer converters.

Classic layers name their axes [Seq, Batch, C, H, W]; in ND models the same layers address the
trailing axes (C = -3, H = -2, W = -1) and treat every leading axis as batch. The helpers view a
blob as [N, C, H, W] (leading axes folded into N) and restore the leading axes afterwards.
"""
import numpy as np

from estuary.base import dims


def as_nchw(c, x, min_rank=3):
    """(x viewed as [N, C, H, W], leading shape) for a blob of rank >= min_rank."""
    shape = list(c.spec(x).shape)
    c.check(len(shape) >= min_rank, f"expects an input of rank >= {min_rank}, got shape {shape}")
    while len(shape) < 3:
        shape = [1] + shape
    lead = shape[:-3]
    return c.reshape(x, [dims.size(lead)] + shape[-3:]), lead


def restore(c, y, lead):
    """Undo as_nchw: [N, C', H', W'] -> lead + [C', H', W']."""
    return c.reshape(y, list(lead) + list(c.spec(y).shape[1:]))


def scalar(c, value):
    return c.const(np.float32(value))


def axis(c, x, ax):
    """A (possibly negative) axis of x as a non-negative index."""
    rank = c.spec(x).rank
    c.check(-rank <= ax < rank, f"axis {ax} out of range for rank {rank}")
    return ax % rank


def per_channel(c, values, x):
    """A [C] vector as a constant broadcasting along axis -3 of x."""
    rank = c.spec(x).rank
    v = np.asarray(values, np.float32).reshape(-1)
    return c.const(v.reshape([1] * max(rank - 3, 0) + [v.size, 1, 1]))


def border(c, amounts):
    """[top, bottom, left, right] of a BorderAmounts message ([H, W] edges)."""
    edges = list(amounts.borderAmounts)
    if not edges:
        return [0, 0, 0, 0]
    c.check(len(edges) == 2, f"BorderAmounts has {len(edges)} entries, 2 (height, width) expected")
    return [int(edges[0].startEdgeSize), int(edges[0].endEdgeSize), int(edges[1].startEdgeSize),
            int(edges[1].endEdgeSize)]


def same_pads(size, kernel, stride, top_left_heavy=False):
    """(begin, end) SAME padding along one axis (output = ceil(size / stride))."""
    out = -(-size // stride)
    total = max(0, (out - 1) * stride + kernel - size)
    small = total // 2
    return (total - small, small) if top_left_heavy else (small, total - small)


def weight_count(wp):
    """Number of values a WeightParams holds (unquantized encodings)."""
    if len(wp.floatValue):
        return len(wp.floatValue)
    if len(wp.float16Value):
        return len(wp.float16Value) // 2
    if wp.HasField("quantization") and wp.quantization.WhichOneof("QuantizationType"):
        return None
    return len(wp.rawValue) // 4


def vector(c, wp, channels, what):
    """A WeightParams of length 1 or `channels` as a float32 array."""
    n = weight_count(wp)
    if n is None:
        n = channels
    c.check(n in (1, channels), f"{what} has {n} values; 1 or {channels} (one per channel) expected")
    return c.weights(wp, [n], what)
