"""Lowered-module rewrites for IREE 3.13's SPIR-V code generation (vulkan-spirv, metal-spirv).

A reduction over an axis that is not the innermost one, fused by IREE with an elementwise op that
reads its result broadcast back over that axis (x - max(x, axis=0), softmax over axis 0), gives
wrong values on Vulkan: on lavapipe every inner size from 9 up that is not a multiple of 64 (as
far as measured), for any of the reductions. Each part alone is right. So on these targets such a
reduction's result passes through `util.optimization_barrier`, which keeps it in a dispatch of
its own. Reductions over the innermost axis (trailing size-1 axes ignored) fuse correctly and
are left alone. Tests (tests/ops/test_reduction.py): `test_spirv_isolates_outer_axis_reductions`
and `test_outer_axis_reductions_read_back_over_their_input`, which CI also runs on lavapipe.
"""
from iree.compiler import ir
from iree.compiler.dialects import util

TARGETS = ("vulkan-spirv", "metal-spirv")
REDUCTIONS = {"tosa.argmax", "tosa.reduce_all", "tosa.reduce_any", "tosa.reduce_max", "tosa.reduce_min",
              "tosa.reduce_product", "tosa.reduce_sum"}


def _outer_axis(op):
    """A TOSA reduction over an axis with a non-unit axis after it."""
    shape = ir.RankedTensorType(op.operands[0].type).shape
    axis = ir.IntegerAttr(op.attributes["axis"]).value
    return any(d != 1 for d in shape[axis + 1:])


def _dims(expr):
    """The loop dimensions an affine expression reads."""
    if isinstance(expr, ir.AffineDimExpr):
        return {expr.position}
    if isinstance(expr, ir.AffineBinaryExpr):
        return _dims(expr.lhs) | _dims(expr.rhs)
    return set()


def _outer_generic(op):
    """A linalg.generic reduction whose first input is reduced along some axis that has a
    non-reduced, non-unit axis inside it."""
    kinds = ["reduction" in str(t) for t in op.attributes["iterator_types"]]
    if not any(kinds):
        return False
    exprs = ir.AffineMapAttr(op.attributes["indexing_maps"][0]).value.results
    shape = ir.RankedTensorType(op.operands[0].type).shape
    inner = True
    for expr, size in reversed(list(zip(exprs, shape))):
        if size == 1:
            continue
        reduced = any(kinds[d] for d in _dims(expr))
        if not reduced:
            inner = False
        elif not inner:
            return True
    return False


def _isolated(op):
    if op.name in REDUCTIONS:
        return _outer_axis(op)
    return op.name == "linalg.generic" and _outer_generic(op)


def isolate_outer_reductions(module):
    """Put the results of each outer-axis reduction (TOSA or linalg.generic) behind an optimization
    barrier; returns how many."""
    found = []

    def visit(op):
        if _isolated(op):
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    for op in found:
        for result in op.results:  # one barrier per used result (an arg reduction's values are unused)
            if not list(result.uses):
                continue
            with ir.InsertionPoint.after(op), op.location:
                barrier = util.optimization_barrier([result.type], [result])
            result.replace_all_uses_except(barrier, barrier.owner.operation)
    return len(found)
