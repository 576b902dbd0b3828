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
