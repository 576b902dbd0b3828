"""Repeats written as expand (or tile) + merging reshape, rewritten as gathers when shapes are dynamic.

Grouped-query attention repeats each key/value head: `expand` broadcasts a size-1 axis after the
head axis, a `reshape` merges the two ([.., H, 1, S, D] -> [.., H, R, S, D] -> [.., H*R, S, D]).
With a dynamic S, IREE 3.13 failed to compile the merged result as the right operand of a matmul
whose contraction runs over S ("'affine.delinearize_index' op no basis element may be statically
non-positive"). The same tensor as a gather along the head axis (indices 0,0,..,1,1,..) has no
merging reshape and compiles; static shapes keep their form.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from iree.compiler import ir

from estuary.dialects import graph
from estuary.dialects.core import TensorSpec


def _repeat(reshape: ir.Operation) -> tuple[ir.Value, int, int] | None:
    """(source, axis, times) when `reshape` merges an expand's (or a tile's) broadcast axis of size
    1 into the axis before it (a repeat-interleave of `source` along `axis`), else None."""
    expand = reshape.operands[0].owner
    if not isinstance(expand, ir.OpView) or expand.operation.name not in ("nn.expand", "nn.tile"):
        return None
    expand = expand.operation
    if len(list(expand.results[0].uses)) != 1:
        return None
    src = TensorSpec.of_type(expand.operands[0].type).shape
    mid = TensorSpec.of_type(expand.results[0].type).shape
    out = TensorSpec.of_type(reshape.results[0].type).shape
    if len(src) != len(mid) or len(out) != len(mid) - 1 or src[0] != mid[0]:
        return None
    diff = [i for i, (a, b) in enumerate(zip(src, mid)) if a != b]
    if len(diff) != 1 or src[diff[0]] != 1 or diff[0] == 0:
        return None
    axis, times = diff[0] - 1, mid[diff[0]]
    if not isinstance(times, int):
        return None
    merged = list(mid[:axis]) + [mid[axis] * times] + list(mid[axis + 2:])
    if list(out) != merged or not isinstance(mid[axis], int) or TensorSpec.of_type(reshape.results[0].type).static:
        return None
    return expand.operands[0], axis, times


_KEEP: list[Any] = []  # index arrays large enough to be resources: their buffers must outlive the module


def rewrite(module: ir.Module) -> int:
    """Replace each dynamic repeat (expand + merging reshape) by reshape + gather; returns how many."""
    found = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "nn.reshape" and (match := _repeat(op)) is not None:
            found.append((op, match))
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    for op, (source, axis, times) in found:
        spec = TensorSpec.of_type(source.type)
        heads = spec.shape[axis]
        indices = np.repeat(np.arange(heads, dtype=np.int32), times)
        _KEEP.append(indices)
        with ir.InsertionPoint(op), op.location:
            squeezed = graph.create_op("reshape", [source], {"new_shape": [d for i, d in enumerate(spec.shape)
                                                                            if i != axis + 1]})
            index = graph.create_op("constant", [], {"value": graph.constant_attr(indices, TensorSpec(indices.shape,
                                                                                                   "int32"))})
            new = graph.create_op("gather", [squeezed, index], {"axis": axis})
        expand = op.operands[0].owner.operation
        op.results[0].replace_all_uses_with(new)
        op.erase()
        expand.erase()
    return len(found)
