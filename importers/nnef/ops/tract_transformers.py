"""tract's transformer operations (sonos/tract transformers/src/ops), decomposed into nn ops.

tract_transformers_sdpa(q, k, v, [mask], scale, datum_type, acc_datum_type, is_causal)
(sdpa.rs): q [B, H, L, D] (or [B, L, D]), k / v [B, Hk, S, D] with H a multiple of Hk (query
head h reads key head h // (H / Hk)); scores = q k^T * scale (default 1/sqrt(D)); a mask of
lower rank gains leading unit axes; a float mask is added, a logical one keeps the positions where
it is true (torch's meaning, which the exporter's boolean masks carry; tract 0.23 itself refuses
or adds such a mask); is_causal masks key j for query i when j > i + (S - L) (tract's causal mask
is aligned to the last query, as with a cache of S - L past positions; equal to torch's when
S = L); softmax over the keys, then the weighted sum of v. Computed in float32 whatever
acc_datum_type says.

tract_transformers_rms_norm / tract_core_rms_norm(input, axis, eps): x / sqrt(mean(x^2) + eps).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from estuary.base import dims
from estuary.importers.mlprogram import symbolic
from estuary.importers.nnef import signatures
from estuary.importers.nnef.ops import OPS

LOWEST = float(np.finfo(np.float32).min)

signatures.declare("""
fragment tract_transformers_sdpa( q: tensor<scalar>, k: tensor<scalar>, v: tensor<scalar>, mask: tensor<scalar> = false,
    scale: ? = false, datum_type: string = 'f32', acc_datum_type: string = 'f32', is_causal: logical = false )
    -> ( output: tensor<scalar> );
fragment tract_transformers_rms_norm( input: tensor<scalar>, axis: integer, eps: scalar = 1e-6 ) -> ( output: tensor<scalar> );
fragment tract_core_rms_norm( input: tensor<scalar>, axis: integer, eps: scalar = 1e-6 ) -> ( output: tensor<scalar> );
""")


def _mask(c: Any, inv: Any) -> Any:
    arg = inv.inputs.get("mask")
    if isinstance(arg, str) and arg in c.wires:
        known = c.wires[arg].known
        if known is not None and np.ndim(known) == 0 and np.asarray(known).dtype == bool and not bool(known):
            return None  # the `false` default: no mask
    return None if arg is None else c.tensor(arg)


def _heads(c: Any, x: Any, groups: int) -> Any:
    """[B, Hk, S, D] -> [B, Hk * groups, S, D], each head repeated `groups` times in a row."""
    if groups == 1:
        return x
    b, h, s, d = c.spec(x).shape
    wide = c.op("expand", [c.reshape(x, [b, h, 1, s, d])], new_shape=[b, h, groups, s, d])
    return c.reshape(wide, [b, h * groups, s, d])


def _causal(c: Any, rows: dims.Value, cols: dims.Value) -> Any:
    """[rows, cols] additive mask: LOWEST where key j > query i + (cols - rows)."""
    i = c.reshape(symbolic.iota(c, rows), [rows, 1])
    j = c.reshape(symbolic.iota(c, cols), [1, cols])
    if not (isinstance(cols, int) and isinstance(rows, int) and cols == rows):
        i = c.op("add", [i, symbolic.dims_tensor(c, [cols - rows], [1, 1])])
    future = c.op("greater", [j, i])
    return c.op("where", [future, c.const(np.float32(LOWEST)), c.const(np.float32(0))])


@OPS.op("tract_transformers_sdpa")
def sdpa(c: Any, inv: Any) -> Any:
    q, k, v = (c.tensor(inv.inputs[n]) for n in ("q", "k", "v"))
    rank = c.spec(q).rank
    c.check(rank in (3, 4) and c.spec(k).rank == rank and c.spec(v).rank == rank,
            f"q, k and v must all be rank 3 or 4, got {c.spec(q).rank}, {c.spec(k).rank}, {c.spec(v).rank}")
    mask = _mask(c, inv)
    causal = bool(inv.attribs.get("is_causal", False))
    c.check(not (causal and mask is not None), "a mask cannot be given with is_causal = true")
    if rank == 3:
        q, k, v = (c.reshape(t, [c.spec(t).shape[0], 1] + list(c.spec(t).shape[1:])) for t in (q, k, v))
    heads, kv_heads = c.spec(q).shape[1], c.spec(k).shape[1]
    c.check(isinstance(heads, int) and isinstance(kv_heads, int) and heads % kv_heads == 0,
            f"{heads} query heads must be a multiple of {kv_heads} key heads")
    k, v = _heads(c, k, heads // kv_heads), _heads(c, v, heads // kv_heads)
    depth = c.spec(q).shape[-1]
    scale = inv.attribs.get("scale", False)
    scale = 1.0 / math.sqrt(int(depth)) if scale is False or scale is None else float(scale)
    kt = c.op("transpose", [k], permutation=[0, 1, 3, 2])
    scores = c.op("mul", [c.op("matmul", [q, kt]), c.const(np.float32(scale))])
    rows, cols = c.spec(scores).shape[2], c.spec(scores).shape[3]
    if causal:
        scores = c.op("add", [scores, _causal(c, rows, cols)])
    if mask is not None:
        mrank = c.spec(mask).rank
        c.check(mrank <= 4, f"the mask has rank {mrank}, more than q's")
        if rank == 3 and mrank == 3:
            mask = c.reshape(mask, [c.spec(mask).shape[0], 1] + list(c.spec(mask).shape[1:]))
        elif mrank < 4:
            mask = c.reshape(mask, [1] * (4 - mrank) + list(c.spec(mask).shape))
        if c.spec(mask).dtype == "uint8":
            scores = c.op("where", [mask, scores, c.const(np.float32(LOWEST))])
        else:
            if c.spec(mask).dtype != "float32":
                mask = c.op("cast", [mask], to="float32")
            scores = c.op("add", [scores, mask])
    out = c.op("matmul", [c.op("softmax", [scores], axis=3), v])
    if rank == 3:
        shape = list(c.spec(out).shape)
        out = c.reshape(out, [shape[0]] + shape[2:])
    return out


def _rms_norm(c: Any, inv: Any) -> Any:
    x = c.tensor(inv.inputs["input"])
    axis = int(inv.attribs["axis"])
    axis = axis + c.spec(x).rank if axis < 0 else axis
    mean = c.op("reduce_mean", [c.op("mul", [x, x])], axes=[axis], keep_dimensions=True)
    eps = c.const(np.float32(inv.attribs.get("eps", 1e-6)))
    return c.op("div", [x, c.op("sqrt", [c.op("add", [mean, eps])])])


OPS.op("tract_transformers_rms_norm", "tract_core_rms_norm")(_rms_norm)
