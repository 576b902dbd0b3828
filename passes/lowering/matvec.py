"""Row-vector products as one multi-result `linalg.generic`, and the helpers of product forms.

IREE turns every single-result one-row contraction into its data-tiled mmt4d kernel, whose
partial sums per tile form one dependency chain: latency-bound for a vector times a small
matrix, as in every step of an unrolled recurrence. A multi-result generic (one result per block
of output columns) is not a contraction to IREE, so it keeps the op as built.

The generic recurrent rules build a batch-1 step's gate products this way (recurrent.py); on
llvm-cpu the same op, marked for `cpu-tiles`, gets one output element per vector step with the
reduction as the vector, and one-row matmuls take it too (backends/llvm_cpu/lowering/matvec.py).
"""
from __future__ import annotations

from collections.abc import Sequence

from iree.compiler import ir
from iree.compiler.dialects import arith, linalg, tensor

from estuary.passes.lowering import common as C

MAX_WEIGHTS = 1 << 20  # matrix elements (4 MB of float32: the LSTM's 1 MB gains, the MLP's 16 MB loses)


def vector_form(k: int, n: int) -> bool:
    """True when a one-row product with a constant [k, n] matrix takes the row form (llvm-cpu's
    one-row products; `nn-merge-sibling-matmuls` merges one-row products only into such a
    matrix): the LSTM benchmark's NNEF form (per-step matmuls) and Core ML form (per-gate gemms)
    got faster this way, the MLP's 4M-element layers slower, so large matrices keep IREE's kernel
    (docs/performance.md)."""
    return k >= 16 and n >= 2 and k * n <= MAX_WEIGHTS


def _f32() -> ir.Type:
    return ir.F32Type.get()


def zeros(shape: Sequence[int]) -> ir.Value:
    """A zero-filled float32 tensor (linalg.fill)."""
    return linalg.fill(arith.constant(_f32(), 0.0), outs=[tensor.empty(shape, _f32())])


def is_constant(value: ir.Value, depth: int = 8) -> bool:
    """True when `value` is computed from constants only (looked up `depth` producers deep)."""
    owner = value.owner
    if not isinstance(owner, ir.OpView):
        return False  # a block argument: a model input
    op = owner.operation
    if op.name in ("tosa.const", "tosa.const_shape", "arith.constant"):
        return True
    return depth > 0 and all(is_constant(v, depth - 1) for v in op.operands)


def row_products(v: ir.Value, weights: Sequence[ir.Value]) -> list[ir.Value]:
    """[v · w^T for w in weights]: v [*lead, K] and each w [*lead, n_i, K] -> [*lead, n_i], float32.

    Results start from a zero fill (an input as the init of a result that is fused into a
    consumer makes IREE 3.13 write into a read-only buffer). Callers leave unit dimensions out,
    so IREE keeps the op (and llvm-cpu's mark on it) as built."""
    lead, k = C.shape_of(v)[:-1], C.shape_of(v)[-1]
    n = len(lead)
    d = [ir.AffineDimExpr.get(i) for i in range(n + 2)]
    maps = ([ir.AffineMap.get(n + 2, 0, d[:n] + [d[n + 1]])] + [ir.AffineMap.get(n + 2, 0, d)] * len(weights)
            + [ir.AffineMap.get(n + 2, 0, d[:n + 1])] * len(weights))
    iters = [ir.Attribute.parse(C.PARALLEL)] * (n + 1) + [ir.Attribute.parse(C.REDUCTION)]
    shapes = [lead + [C.shape_of(w)[-2]] for w in weights]
    fills: dict[tuple[int, ...], ir.Value] = {}
    for s in shapes:
        if tuple(s) not in fills:
            fills[tuple(s)] = zeros(s)
    inits = [fills[tuple(s)] for s in shapes]
    return products(v, list(weights), inits, shapes, maps, iters)


def products(v: ir.Value, weights: list[ir.Value], inits: list[ir.Value], shapes: list[list[int]],
             maps: list[ir.AffineMap], iters: list[ir.Attribute]) -> list[ir.Value]:
    """The results of one multi-result generic accumulating v times each weight operand into its
    result (`maps`: v's, the weights', the results')."""
    op = linalg.GenericOp([C.tensor_type(s, _f32()) for s in shapes], [v] + weights, inits,
                          ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]), ir.ArrayAttr.get(iters))
    block = op.regions[0].blocks.append(*[_f32()] * (1 + 2 * len(weights)))
    with ir.InsertionPoint(block):
        x, rest = block.arguments[0], list(block.arguments)[1:]
        ws, accs = rest[:len(weights)], rest[len(weights):]
        linalg.YieldOp([arith.addf(acc, arith.mulf(x, w)) for w, acc in zip(ws, accs)])
    return list(op.results)
