"""limit-elementwise-chains: an optimization barrier every CHAIN_LIMIT elementwise ops of a chain.

IREE fuses a chain of elementwise ops into one dispatch region, and its ElementwiseOpFusion,
ConstExprAnalysis and HoistIntoGlobals passes take time quadratic in the chain's length (a chain
of 4,000 relus: 34, 19 and 18 s of a 94 s compile; docs/performance.md). A
`util.optimization_barrier` every CHAIN_LIMIT ops of a chain splits it into dispatches of that
many ops, making those passes linear in the graph; a chain that long gains nothing from being one
dispatch. Chains shorter than the limit (every model seen so far) are left alone, so their
artefacts do not change."""
from __future__ import annotations

from typing import Any

from iree.compiler import ir
from iree.compiler.dialects import util

from estuary.passes import register

CHAIN_LIMIT = 256
# TOSA ops IREE lowers to elementwise linalg.generic ops (and fuses with their neighbours)
TOSA_ELEMENTWISE = {f"tosa.{n}" for n in (
    "abs", "add", "arithmetic_right_shift", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "cast",
    "ceil", "clamp", "cos", "equal", "erf", "exp", "floor", "greater", "greater_equal", "int_div", "log",
    "logical_and", "logical_left_shift", "logical_not", "logical_or", "logical_right_shift", "logical_xor",
    "maximum", "minimum", "mul", "negate", "pow", "reciprocal", "rescale", "rsqrt", "select", "sigmoid", "sin",
    "sub", "tanh")}


def _elementwise(op: ir.Operation) -> bool:
    if len(op.results) != 1:
        return False
    if op.name == "linalg.generic":
        return all("parallel" in str(t) for t in op.attributes["iterator_types"])
    return op.name in TOSA_ELEMENTWISE


def limit_chains(module: ir.Module, limit: int = CHAIN_LIMIT) -> int:
    """Put a barrier after every `limit`-th op of each elementwise chain; returns how many."""
    depth: dict[ir.Value, int] = {}
    cut: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if _elementwise(op):
            d = 1 + max((depth.get(v, 0) for v in op.operands), default=0)
            if d >= limit:
                cut.append(op)
                d = 0
            depth[op.results[0]] = d
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    for op in cut:
        result = op.results[0]
        with ir.InsertionPoint.after(op), op.location:
            barrier = util.optimization_barrier([result.type], [result])
        result.replace_all_uses_except(barrier, barrier.owner.operation)
    return len(cut)


@register("limit-elementwise-chains")
def limit_elementwise_chains(nn: Any, options: Any) -> dict[str, Any]:
    """After lowering: an optimization barrier every 256 ops of an elementwise chain (IREE's fusion
    passes are quadratic in a fused chain's length)."""
    with nn.context, ir.Location.unknown():
        return {"chain_barriers": limit_chains(nn.module)}
