"""MIL random_uniform, random_normal and random_bernoulli (shape known at compile time).

Estuary's generator is counter-based and deterministic per seed (nn.random_*), not Apple's: the
values differ from Core ML's, the distributions are the same (docs/design.md, Core ML)."""
from __future__ import annotations

from typing import Any

import numpy as np

from estuary.importers.mlprogram.ops import OPS


def _seed(c: Any, op: Any) -> int:
    seed = int(c.scalar(op, "seed", -1))
    return seed if seed >= 0 else 0


@OPS.op("random_uniform")
def convert_random_uniform(c: Any, op: Any) -> Any:
    shape = c.ints(op, "shape")
    return c.op("random_uniform", [], shape=shape, low=float(c.scalar(op, "low", 0.0)),
                high=float(c.scalar(op, "high", 1.0)), seed=_seed(c, op))


@OPS.op("random_normal")
def convert_random_normal(c: Any, op: Any) -> Any:
    shape = c.ints(op, "shape")
    return c.op("random_normal", [], shape=shape, mean=float(c.scalar(op, "mean", 0.0)),
                stddev=float(c.scalar(op, "stddev", 1.0)), seed=_seed(c, op))


@OPS.op("random_bernoulli")
def convert_random_bernoulli(c: Any, op: Any) -> Any:
    """1.0 with probability `prob` (uniform draw < prob), else 0.0."""
    shape = c.ints(op, "shape")
    prob = float(c.scalar(op, "prob", 0.5))
    u = c.op("random_uniform", [], shape=shape, low=0.0, high=1.0, seed=_seed(c, op))
    return c.op("cast", [c.op("lesser", [u, c.const(np.asarray(prob, np.float32))])], to="float32")


@OPS.op("random_categorical")
def convert_random_categorical(c: Any, op: Any) -> Any:
    """`size` draws per distribution (last axis) by inverse CDF: the index is the number of CDF
    entries a uniform draw is at or above (clamped to the last class), as float."""
    x = c.x(op)
    shape = list(c.spec(x).shape)
    k = shape[-1]
    size = int(c.scalar(op, "size", 1))
    c.check(size >= 1, f"size {size} must be positive")
    mode = str(c.val(op, "mode", "logits"))
    c.check(mode in ("logits", "probs"), f"unknown mode {mode!r}")
    rank = len(shape)
    probs = c.op("softmax", [x], axis=rank - 1) if mode == "logits" else c.op(
        "div", [x, c.op("reduce_sum", [x], axes=[rank - 1], keep_dimensions=True)])
    cdf = c.reshape(c.op("cumulative_sum", [probs], axis=rank - 1), shape[:-1] + [1, k])
    u = c.op("random_uniform", [], shape=shape[:-1] + [size, 1], low=0.0, high=1.0, seed=_seed(c, op))
    above = c.op("cast", [c.op("greater_or_equal", [u, cdf])], to="float32")
    count = c.op("reduce_sum", [above], axes=[rank], keep_dimensions=False)
    return c.op("min", [count, c.const(np.asarray(k - 1, np.float32))])
