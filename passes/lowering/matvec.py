"""Row-vector products as one multi-result `linalg.generic` tagged for `cpu-tiles`.

IREE turns every single-result one-row contraction into its data-tiled mmt4d kernel, whose
partial sums per tile form one dependency chain: latency-bound for a vector times a small
matrix, as in every step of an unrolled recurrence. A multi-result generic (one result per block
of output columns) is not a contraction to IREE, so it keeps the op as built, and `cpu-tiles`
gives it one output element per vector step with the reduction as the vector.

Used for the recurrent products of batch-1 LSTM/GRU steps and for any one-row product with a
constant matrix of at most MAX_WEIGHTS elements: the LSTM benchmark's NNEF form (per-step
matmuls) and Core ML form (per-gate gemms) got faster this way, the MLP's 4M-element layers
slower, so large matrices keep IREE's kernel (docs/performance.md).
"""
import hashlib

import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import arith, linalg, tensor

from estuary.backends.llvm_cpu.tile_rules import MATVEC_TAG, UNIT_TAG
from estuary.passes.lowering import common as C


MAX_WEIGHTS = 1 << 20  # matrix elements (4 MB of float32: the LSTM's 1 MB gains, the MLP's 16 MB loses)
BLOCK = 256            # output columns per result
UNIT_PARTS = 4         # results of a one-row product in that form, at most (two registers each)


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
    return _products(v, list(weights), inits, shapes, maps, iters, MATVEC_TAG)


def _products(v, weights, inits, shapes, maps, iters, tag):
    """The results of one multi-result generic, tagged `tag`, accumulating v times each weight
    operand into its result (`maps`: v's, the weights', the results')."""
    op = linalg.GenericOp([C.tensor_type(s, _f32()) for s in shapes], [v] + weights, inits,
                          ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]), ir.ArrayAttr.get(iters))
    op.operation.attributes[tag] = ir.UnitAttr.get()
    block = op.regions[0].blocks.append(*[_f32()] * (1 + 2 * len(weights)))
    with ir.InsertionPoint(block):
        x, rest = block.arguments[0], list(block.arguments)[1:]
        ws, accs = rest[:len(weights)], rest[len(weights):]
        linalg.YieldOp([arith.addf(acc, arith.mulf(x, w)) for w, acc in zip(ws, accs)])
    return list(op.results)


def unit_products(v, matrices, width, cache):
    """[v · m for m in matrices] in the column-vector form: v [K] float32, each m a numpy [K, n]
    array (n a multiple of `width`) -> [n] each. The weights are stored in blocks of `width`
    columns, [n / width, K, width], and the op is one multi-result generic over (block, column,
    k) tagged UNIT_TAG, so that `cpu-tiles` gives it `width` columns of every result per vector
    step (a broadcast of v[k] times one contiguous run of each result's weights) and consumers
    of its results (an LSTM's gate math) fuse into its dispatch, vectorized along the columns.
    The row form (`row_products`, the reduction as the vector) keeps those consumers in a dispatch
    of their own: one per step of a recurrence (docs/performance.md). Identical matrices share
    one constant per function (each step of an unrolled recurrence uses the same weights)."""
    k = C.shape_of(v)[0]
    blocks = matrices[0].shape[1] // width
    weights = [_blocked_constant(m, width, cache) for m in matrices]
    d = [ir.AffineDimExpr.get(i) for i in range(3)]
    maps = ([ir.AffineMap.get(3, 0, [d[2]])] + [ir.AffineMap.get(3, 0, [d[0], d[2], d[1]])] * len(weights)
            + [ir.AffineMap.get(3, 0, [d[0], d[1]])] * len(weights))
    iters = [ir.Attribute.parse(C.PARALLEL)] * 2 + [ir.Attribute.parse(C.REDUCTION)]
    shape = [blocks, width]
    results = _products(v, weights, [zeros(shape)] * len(weights), [shape] * len(weights), maps, iters, UNIT_TAG)
    return [C.reshape(r, [blocks * width]) for r in results]


def _blocked_constant(matrix, width, cache):
    """The [n / width, K, width] float32 constant of numpy `matrix` [K, n], built once per function
    (at the start of its body, so that it dominates every use) and lowering run (`cache`:
    LoweringRun.cache)."""
    k, n = matrix.shape
    blocked = np.ascontiguousarray(matrix.reshape(k, n // width, width).transpose(1, 0, 2), dtype=np.float32)
    owner = ir.InsertionPoint.current.block.owner
    func = C.enclosing(owner.operation, "func.func") if owner is not None else None
    if func is None:
        return C.const(blocked, "float32")
    key = ("unit_products", ir.StringAttr(func.attributes["sym_name"]).value, blocked.shape,
           hashlib.sha1(blocked.tobytes()).hexdigest())
    if key not in cache:
        with ir.InsertionPoint.at_block_begin(func.regions[0].blocks[0]):
            cache[key] = C.const(blocked, "float32")
    return cache[key]
