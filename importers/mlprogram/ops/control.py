"""MIL control flow: cond and while_loop.

cond with a condition known at import converts one branch; with a run-time condition both
branches are computed and each output selected element-wise (the branches have no side effects).
while_loop unrolls: the condition must fold to a constant on every iteration (a loop whose trip
count depends on run-time data is a clear error), at most 256 iterations.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from iree.compiler import ir

from estuary.importers.coreml.nd import constant_array
from estuary.importers.mlprogram.ops import OPS
from estuary.importers.mlprogram.ops.indexing import truth

MAX_UNROLL = 256


def run_block(c: Any, block: Any, bound: dict[str, Any]) -> list[Any]:
    """Convert a nested block with its inputs bound; its outputs, the outer scope left unchanged."""
    saved = dict(c.env)
    try:
        c.env.update(bound)
        c.convert_ops(block.operations)
        c.label, c.op_type = None, None
        missing = [n for n in block.outputs if n not in c.env]
        if missing:
            c.fail(f"block outputs {missing} are not produced by the block")
        return [c.env[n] for n in block.outputs]
    finally:
        c.env = saved


def known(c: Any, v: Any) -> Any:
    if isinstance(v, ir.Value):
        return constant_array(v)
    return v


@OPS.op("cond")
def convert_cond(c: Any, op: Any) -> Any:
    label, kind = c.label, c.op_type
    pred = c.arg(op, "pred")
    c.check(len(op.proto.blocks) == 2, f"cond needs two blocks, has {len(op.proto.blocks)}")
    value = known(c, pred)
    if value is not None:
        out = run_block(c, op.proto.blocks[0 if bool(np.asarray(value).reshape(-1)[0]) else 1], {})
        c.label, c.op_type = label, kind
        return out
    t = run_block(c, op.proto.blocks[0], {})
    f = run_block(c, op.proto.blocks[1], {})
    c.label, c.op_type = label, kind
    mask = truth(c, c.value(pred))
    out = []
    for a, b in zip(t, f):
        a, b = c.value(a), c.value(b)
        c.check(c.spec(a).shape == c.spec(b).shape, f"the branches give shapes {c.spec(a).shape} and {c.spec(b).shape}")
        out.append(c.op("where", [mask, a, b]))
    return out


@OPS.op("while_loop")
def convert_while_loop(c: Any, op: Any) -> Any:
    label, kind = c.label, c.op_type
    state = [c._resolve(b) for b in op.bindings("loop_vars")]
    c.check(len(op.proto.blocks) == 2, f"while_loop needs a condition and a body block, has {len(op.proto.blocks)}")
    cond_block, body_block = op.proto.blocks
    for step in range(MAX_UNROLL + 1):
        bound = {i.name: v for i, v in zip(cond_block.inputs, state)}
        (flag,) = run_block(c, cond_block, bound)
        value = known(c, flag)
        c.label, c.op_type = label, kind
        if value is None:
            c.fail("the loop condition depends on run-time data; only loops with a trip count known at "
                   "compile time are supported (they are unrolled)")
        if not bool(np.asarray(value).reshape(-1)[0]):
            return state
        c.check(step < MAX_UNROLL, f"the loop runs more than {MAX_UNROLL} iterations")
        bound = {i.name: v for i, v in zip(body_block.inputs, state)}
        state = run_block(c, body_block, bound)
        c.label, c.op_type = label, kind
    return state
