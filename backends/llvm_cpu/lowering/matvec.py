"""llvm-cpu's forms of products of one row, marked for `cpu-tiles` (contract.py).

The row form: matvec.row_products' multi-result generic (passes/lowering/matvec.py), marked
MATVEC, which `cpu-tiles` gives one output element per vector step with the reduction as the
vector (`tile_rules.matvec_tiles`). Batch-1 recurrent steps take it on every target; on llvm-cpu
so does any one-row product with a constant matrix of at most MAX_WEIGHTS elements
(`matvec.vector_form`; larger ones keep IREE's kernel).

The column-vector form (`unit_products`, marked UNIT_MATVEC) on AVX2 and AVX-512
(`CompileOptions.tile_lanes`): weights in blocks of two registers' width, so that consumers of
the product (an LSTM's gate math) fuse into its dispatch, vectorized along the columns.
"""
from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
from iree.compiler import ir

from estuary.backends.llvm_cpu import contract
from estuary.backends.llvm_cpu.tile_rules import unit_width
from estuary.passes.lowering import RuleContext, matvec
from estuary.passes.lowering import common as C
from estuary.passes.lowering.forms import GateProducts
from estuary.passes.lowering.matmul import to_f32
from estuary.passes.lowering.pointwise import constant_array

BLOCK = 256            # output columns per result
UNIT_PARTS = 4         # results of a one-row product in the column-vector form, at most (two registers each)


def row_products(v: ir.Value, weights: Sequence[ir.Value]) -> list[ir.Value]:
    """matvec.row_products, marked MATVEC for `cpu-tiles`."""
    results = matvec.row_products(v, weights)
    contract.mark(results[0].owner, contract.MATVEC)
    return results


def one_row_product(n: RuleContext, a: ir.Value, b: ir.Value) -> ir.Value | None:
    """a [.., 1, K] times the constant b [.., K, N] -> [1, N]: the column-vector form where it
    applies, else the row form for a matrix of at most MAX_WEIGHTS elements, else None (IREE's
    data-tiled kernel)."""
    k, cols = C.shape_of(a)[-1], C.shape_of(b)[-1]
    v, matrix = C.reshape(a, [k]), C.reshape(b, [k, cols])
    y = _column_form(n, v, matrix)
    if y is None and matvec.vector_form(k, cols):
        y = _row_times_matrix(v, matrix)
    return y


def _column_form(n: RuleContext, v: ir.Value, b: ir.Value) -> ir.Value | None:
    """v [K] x constant b [K, N] -> [1, N] in the column-vector form (`unit_products`) on AVX2 and
    AVX-512 (`n.options.tile_lanes`), at least BLOCK columns, else None: the columns in UNIT_PARTS
    (at least two) equal results, N padded with zero columns to whole vector steps. The results
    are joined along the last axis of the result's shape, so that slices of whole parts (an
    LSTM's gates) fold to the parts and their consumers fuse into the product's dispatch."""
    k, cols = C.shape_of(b)
    width = unit_width(n.options.tile_lanes)
    if not width or cols < BLOCK or k * cols > matvec.MAX_WEIGHTS:
        return None
    w = constant_array(b)
    if w is None:
        return None
    parts = min(UNIT_PARTS, max(2, -(-cols // BLOCK)))
    size = -(-cols // (parts * width)) * width
    w = np.pad(w.astype(np.float32), [(0, 0), (0, parts * size - cols)])
    results = unit_products(to_f32(v), [w[:, i * size:(i + 1) * size] for i in range(parts)], width, n.run.cache)
    y = C.concat([C.reshape(r, [1, size]) for r in results], 1)
    return y if parts * size == cols else C.slice_(y, [0, 0], [1, cols])


def _row_times_matrix(v: ir.Value, b: ir.Value) -> ir.Value:
    """v [K] x constant b [K, N] -> [1, N]: one marked generic with a result per block of at most
    BLOCK columns (at least two, so IREE sees no contraction). A generic's results share one
    iteration space, so the blocks are equal: N is padded with zero columns when needed."""
    k, cols = C.shape_of(b)
    parts = max(2, -(-cols // BLOCK))
    size = -(-cols // parts)
    bt = C.transpose(to_f32(b), [1, 0])
    if parts * size != cols:
        bt = C.pad_constant(bt, [(0, parts * size - cols), (0, 0)], 0, "float32")
    ws = [C.slice_(bt, [i * size, 0], [size, k]) for i in range(parts)]
    y = C.concat(row_products(to_f32(v), ws), 0)
    return C.reshape(y if parts * size == cols else C.slice_(y, [0], [cols]), [1, cols])


def lstm_gate_products(n: RuleContext, rw: ir.Value, hidden: int, directions: int) -> GateProducts | None:
    """The column-vector form of a batch-1 LSTM's recurrent products (`Forms.lstm_gate_products`):
    for one direction, a constant rw and a hidden size of whole vector steps on AVX2 and AVX-512,
    else None. The weight is read once per network; each step's gate math fuses into the
    product's dispatch, vectorized along the units (the row form keeps it in a dispatch of its
    own, one per step)."""
    width = unit_width(n.options.tile_lanes)
    if directions != 1 or not width or hidden % width:
        return None
    w = constant_array(rw)
    if w is None:
        return None
    matrix = np.ascontiguousarray(w[0].T, dtype=np.float32)  # [K, 4 * hidden]

    def products(h: ir.Value) -> list[ir.Value]:
        nd, _, k = C.shape_of(h)
        results = unit_products(C.reshape(h, [k]), [matrix[:, i * hidden:(i + 1) * hidden] for i in range(4)],
                                width, n.run.cache)
        return [C.reshape(r, [nd, 1, hidden]) for r in results]

    return products


def unit_products(v: ir.Value, matrices: Sequence[np.ndarray], width: int, cache: dict) -> list[ir.Value]:
    """[v · m for m in matrices] in the column-vector form: v [K] float32, each m a numpy [K, n]
    array (n a multiple of `width`) -> [n] each. The weights are stored in blocks of `width`
    columns, [n / width, K, width], and the op is one multi-result generic over (block, column,
    k) marked UNIT_MATVEC, so that `cpu-tiles` gives it `width` columns of every result per vector
    step (a broadcast of v[k] times one contiguous run of each result's weights) and consumers
    of its results (an LSTM's gate math) fuse into its dispatch, vectorized along the columns.
    The row form (`row_products`, the reduction as the vector) keeps those consumers in a dispatch
    of their own: one per step of a recurrence (docs/performance.md). Identical matrices share
    one constant per function (each step of an unrolled recurrence uses the same weights)."""
    blocks = matrices[0].shape[1] // width
    weights = [_blocked_constant(m, width, cache) for m in matrices]
    d = [ir.AffineDimExpr.get(i) for i in range(3)]
    maps = ([ir.AffineMap.get(3, 0, [d[2]])] + [ir.AffineMap.get(3, 0, [d[0], d[2], d[1]])] * len(weights)
            + [ir.AffineMap.get(3, 0, [d[0], d[1]])] * len(weights))
    iters = [ir.Attribute.parse(C.PARALLEL)] * 2 + [ir.Attribute.parse(C.REDUCTION)]
    shape = [blocks, width]
    results = matvec.products(v, weights, [matvec.zeros(shape)] * len(weights), [shape] * len(weights), maps, iters)
    contract.mark(results[0].owner, contract.UNIT_MATVEC)
    return [C.reshape(r, [blocks * width]) for r in results]


def _blocked_constant(matrix: np.ndarray, width: int, cache: dict) -> ir.Value:
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
