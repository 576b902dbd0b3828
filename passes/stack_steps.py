"""Products of a sequence's steps with one constant matrix become one product of all its rows.

A recurrence written out step by step (Core ML's recurrent layers as imported, or any graph that
slices a sequence X [S, ..., K] one step at a time) multiplies every step by the same input
weights: matmul(reshape(slice(X, step t)), W) for t = 0 .. S-1. Those become one product
matmul(reshape(X, [S * rows, K]), W) and a row slice of it per step: one matrix-matrix product
instead of S vector products that each read W again (the Core ML LSTM benchmark ran 32 of them).
Each output element is the same dot product as before. gemm takes part when A is not transposed
and C is absent or a constant row vector (the same for every row).
"""
import math

from iree.compiler import ir

from estuary.dialects import graph
from estuary.passes import register
from estuary.passes.cleanup import dce
from estuary.passes.rewrite import static_op, attrs, constant, constant_row, group_ops, operands, producer, shape_of, short


def _step(a):
    """(X, t, rows) when `a` is reshape(slice(X)) of step t of X's first axis, every other axis
    whole, as a [rows, K] matrix; else None."""
    r = producer(a, "reshape")
    s = producer(r.operands[0], "slice") if r is not None else None
    if s is None:
        return None
    x = s.operands[0]
    full, at, shape = shape_of(x), attrs(s), shape_of(a)
    if (len(full) < 2 or any(k != 1 for k in at.get("strides") or ()) or at["sizes"][0] != 1 or list(at["sizes"][1:]) != list(full[1:]) or any(at["starts"][1:])
            or len(shape) != 2 or shape[1] != full[-1]):
        return None
    return x, at["starts"][0], shape[0]


def _member(op):
    """(group key, (X, t, rows)) of a product of one step with a constant matrix, else None."""
    kind = short(op)
    if kind not in ("matmul", "gemm") or not static_op(op):
        return None
    a, b, *rest = operands(op)
    step = _step(a)
    if step is None or constant(b) is None or len(shape_of(b)) != 2:
        return None
    if kind == "matmul":
        return (kind, step[0], b), step
    at = attrs(op)
    c = rest[0]
    if at["a_transpose"] or (c is not None and constant_row(c, shape_of(op.results[0])[1]) is None):
        return None
    return (kind, step[0], b, c, at["alpha"], at["beta"], at["b_transpose"]), step


def _stack(nn, group, flat):
    """Replace the step products in `group` (program order) by one product and row slices."""
    first = group[0][0]
    x = group[0][1][0]
    with nn.context, first.location, ir.InsertionPoint(first):
        if x not in flat:
            flat[x] = graph.create_op("reshape", [x], {"new_shape": [math.prod(shape_of(x)[:-1]), shape_of(x)[-1]]})
        stacked = graph.create_op(short(first), [flat[x]] + operands(first)[1:], attrs(first))
    for op, (_, t, rows) in group:
        n = shape_of(op.results[0])[1]
        with nn.context, op.location, ir.InsertionPoint(op):
            part = graph.create_op("slice", [stacked], {"starts": [t * rows, 0], "sizes": [rows, n]})
        op.results[0].replace_all_uses_with(part)
        op.erase()


@register("nn-stack-step-products")
def stack_step_products(nn, options):
    """Stack products of a sequence's steps with one constant matrix into one product."""
    flat = {}
    for group in group_ops(nn, _member).values():
        if len(group) > 1:
            _stack(nn, group, flat)
    dce(nn, options)
