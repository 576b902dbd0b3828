"""Sibling products of one value with constant matrices merge into one wider product.

matmul(x, W1), matmul(x, W2), ... with constant 2-D W_i become matmul(x, [W1 W2 ...]) followed by
one slice per original result along the last axis; gemm(x, B_i, C_i) with the same alpha, beta
and transposition of x, constant B_i and row-vector (or absent) C_i merge the same way. IREE then
runs one wider matrix product instead of several narrow ones: a transformer's query, key and value
projections become one dispatch. Each output element is the same dot product as before.

With a many-row left operand (x of shape [M, K], M >= COLUMN_FORM_ROWS) the merged product is
computed transposed, [W1 W2 ...]^T x^T of shape [N, M], and each original result is the transpose
of a block of its rows. A block of rows is contiguous, so IREE hands it on without the copy that a
block of columns costs, and the transposes fold into the consumers' packing: the Transformer
block's three column-slice copies go, and the value operand's packing runs vectorized
(measurements: docs/performance.md).
"""
import numpy as np
from iree.compiler import ir

from estuary.dialects import graph
from estuary.passes import register
from estuary.passes.cleanup import dce
from estuary.passes.lowering.matvec import vector_form
from estuary.passes.rewrite import (attrs, static_op, constant, constant_row, dtype_of, group_ops, make_constant, operands,
                                    shape_of, short)


COLUMN_FORM_ROWS = 16  # one full row tile of IREE's f32 matmul kernel


def _rows(a, k):
    return int(np.prod(shape_of(a))) // max(k, 1)


def _member(op):
    """(group key, (weight as a [K, N] array, bias row or None)) of a mergeable product, else None.

    (One-row products are judged as a group: _worth_merging.)"""
    kind = short(op)
    if not static_op(op):
        return None
    if kind == "matmul":
        a, b = op.operands
        w = constant(b)
        return None if w is None or w.ndim != 2 else ((kind, a, dtype_of(b)), (w, None))
    if kind != "gemm":
        return None
    a, b, c = operands(op)
    at = attrs(op)
    w = constant(b)
    if w is None:
        return None
    w = w.T if at["b_transpose"] else w
    row = None if c is None else constant_row(c, w.shape[1])
    if c is not None and row is None:
        return None
    key = (kind, a, dtype_of(b), at["alpha"], at["beta"], at["a_transpose"], c is None)
    return key, (w, row)


def _worth_merging(key, group):
    """Several products, and for one-row products (a vector times matrices, as in an unrolled
    recurrence) a merged matrix small enough for the vector form (lowering/matvec.py): merged into
    IREE's one-row kernel instead, a Core ML LSTM's per-step products got slower; in the vector
    form they got faster (docs/performance.md)."""
    if len(group) < 2:
        return False
    k = group[0][1][0].shape[0]
    return _rows(key[1], k) > 1 or vector_form(k, sum(w.shape[1] for _, (w, _) in group))


def _joined(cache, key, build):
    """One constant per distinct set of merged operands: an unrolled recurrent network merges the
    same weights at every step."""
    if key not in cache:
        cache[key] = build()
    return cache[key]


def _row_sliced(op):
    """Whether a user of op's result takes some of its rows (an unrolled recurrence's per-step
    input products): in the column form each such row is a strided column."""
    rows = shape_of(op.results[0])[0]
    return any(short(use.owner) == "slice" and attrs(use.owner)["sizes"][0] < rows for use in op.results[0].uses)


def _column_form(key, group):
    """Whether to merge as the transposed product: a 2-D left operand with many rows whose
    results are used whole-row (a Core ML LSTM's input projections, sliced per step, got slower
    in the column form)."""
    kind, a = key[:2]
    shape = shape_of(a)
    rows = shape[-1] if kind == "gemm" and attrs(group[0][0])["a_transpose"] else shape[0]
    return len(shape) == 2 and rows >= COLUMN_FORM_ROWS and not any(_row_sliced(op) for op, _ in group)


def _side_by_side(weights, transposed):
    """The [K, N_i] matrices joined along their columns ([K, N]), or that join's transpose."""
    w = np.concatenate(weights, axis=1)
    return w.T if transposed else w


def _merged_product(nn, key, group, cache, transposed):
    """The one product of key's operand with the group's matrices side by side (transposed: its
    transpose, the matrices' transposes stacked)."""
    first = group[0][0]
    kind, a, dtype = key[:3]
    weights = [w for _, (w, _) in group]
    sources = tuple(op.operands[1] for op, _ in group)
    w = _joined(cache, ("w", transposed, sources), lambda: make_constant(nn, _side_by_side(weights, transposed), dtype))
    if kind == "matmul":
        if transposed:
            return graph.create_op("matmul", [w, graph.create_op("transpose", [a], {"permutation": [1, 0]})])
        return graph.create_op("matmul", [a, w])
    at = attrs(first)
    biases = [r for _, (_, r) in group]
    c = None
    if biases[0] is not None:
        bias = np.concatenate(biases)
        c = _joined(cache, ("c", transposed, tuple(op.operands[2] for op, _ in group)),
                    lambda: make_constant(nn, bias[:, None] if transposed else bias, dtype))
    operands_ = [w, a, c] if transposed else [a, w, c]
    transposes = ({"a_transpose": False, "b_transpose": not at["a_transpose"]} if transposed
                  else {"a_transpose": at["a_transpose"], "b_transpose": False})
    return graph.create_op("gemm", operands_, {"alpha": at["alpha"], "beta": at["beta"], **transposes})


def _merge(nn, key, group, cache):
    """Replace the products in `group` (program order) by one product and slices of it."""
    first = group[0][0]
    transposed = _column_form(key, group)
    with nn.context, first.location, ir.InsertionPoint(first):
        merged = _merged_product(nn, key, group, cache, transposed)
    offset = 0
    for op, (wi, _) in group:
        shape = list(shape_of(op.results[0]))
        with nn.context, op.location, ir.InsertionPoint(op):
            if transposed:
                block = graph.create_op("slice", [merged], {"starts": [offset, 0], "sizes": shape[::-1]})
                part = graph.create_op("transpose", [block], {"permutation": [1, 0]})
            else:
                starts = [0] * len(shape)
                starts[-1] = offset
                part = graph.create_op("slice", [merged], {"starts": starts, "sizes": shape})
        offset += wi.shape[1]
        op.results[0].replace_all_uses_with(part)
        op.erase()


@register("nn-merge-sibling-matmuls")
def merge_sibling_matmuls(nn, options):
    """Merge matmul/gemm products of one value with constant matrices into one wider product."""
    cache = {}
    for key, group in group_ops(nn, _member).items():  # first products in order: cached constants dominate
        if _worth_merging(key, group):
            _merge(nn, key, group, cache)
    dce(nn, options)
