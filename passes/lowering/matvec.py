"""Row-vector products as one multi-result `linalg.generic` tagged for `cpu-tiles`.

IREE turns every single-result one-row contraction into its data-tiled mmt4d kernel, whose
partial sums per tile form one dependency chain: latency-bound for a vector times a small
matrix, as in every step of an unrolled recurrence. A multi-result generic (one result per block
of output columns) is not a contraction to IREE, so it keeps the op as built, and `cpu-tiles`
gives it one output element per vector step with the reduction as the vector.

Used for the recurrent products of batch-1 LSTM/GRU steps and for any one-row product with a
constant matrix of at most MAX_WEIGHTS elements. Measured on the LSTM benchmark (2 cores,
AVX-512): the NNEF form (per-step matmuls) 0.99 -> 0.54 ms, the Core ML form (per-gate gemms)
0.87 -> 0.71 ms; the MLP's 4M-element layers were slower this way (4.4 -> 6.7 ms), so large
matrices keep IREE's kernel.
"""
from iree.compiler import ir
from iree.compiler.dialects import arith, linalg, tensor

from estuary.cpu_tiles import MATVEC_TAG
from estuary.passes.lowering import common as C


MAX_WEIGHTS = 1 << 20  # matrix elements (4 MB of float32: the LSTM's 1 MB gains, the MLP's 16 MB loses)
BLOCK = 256            # output columns per result


def vector_form(k, n):
    """True when a one-row product with a constant [k, n] matrix is built by `row_products`."""
    return k >= 16 and n >= 2 and k * n <= MAX_WEIGHTS


def _f32():
    return ir.F32Type.get()


def zeros(shape):
    """A zero-filled float32 tensor (linalg.fill)."""
    return linalg.fill(arith.constant(_f32(), 0.0), outs=[tensor.empty(shape, _f32())])


def is_constant(value, depth=8):
    """True when `value` is computed from constants only (looked up `depth` producers deep)."""
    owner = value.owner
    if not isinstance(owner, ir.OpView):
        return False  # a block argument: a model input
    op = owner.operation
    if op.name in ("tosa.const", "tosa.const_shape", "arith.constant"):
        return True
    return depth > 0 and all(is_constant(v, depth - 1) for v in op.operands)


def row_products(v, weights):
    """[v · w^T for w in weights]: v [*lead, K] and each w [*lead, n_i, K] -> [*lead, n_i], float32.

    Results start from a zero fill (an input as the init of a result that is fused into a
    consumer makes IREE 3.13 write into a read-only buffer). Callers leave unit dimensions out,
    so IREE keeps the op (and its tag) as built."""
    lead, k = C.shape_of(v)[:-1], C.shape_of(v)[-1]
    n = len(lead)
    d = [ir.AffineDimExpr.get(i) for i in range(n + 2)]
    maps = ([ir.AffineMap.get(n + 2, 0, d[:n] + [d[n + 1]])] + [ir.AffineMap.get(n + 2, 0, d)] * len(weights)
            + [ir.AffineMap.get(n + 2, 0, d[:n + 1])] * len(weights))
    iters = [ir.Attribute.parse(C.PARALLEL)] * (n + 1) + [ir.Attribute.parse(C.REDUCTION)]
    shapes = [lead + [C.shape_of(w)[-2]] for w in weights]
    fills = {}
    for s in shapes:
        if tuple(s) not in fills:
            fills[tuple(s)] = zeros(s)
    inits = [fills[tuple(s)] for s in shapes]
    op = linalg.GenericOp([C.tensor_type(s, _f32()) for s in shapes], [v] + list(weights), inits,
                          ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]), ir.ArrayAttr.get(iters))
    op.operation.attributes[MATVEC_TAG] = ir.UnitAttr.get()
    block = op.regions[0].blocks.append(*[_f32()] * (1 + 2 * len(weights)))
    with ir.InsertionPoint(block):
        x, rest = block.arguments[0], list(block.arguments)[1:]
        ws, accs = rest[:len(weights)], rest[len(weights):]
        linalg.YieldOp([arith.addf(acc, arith.mulf(x, w)) for w, acc in zip(ws, accs)])
    return list(op.results)
