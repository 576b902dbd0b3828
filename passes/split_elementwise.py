"""A split of an element-wise binary result becomes the element-wise op of the operands' splits.

split(add(a, b)) -> add(split(a)_i, split(b)_i) for each part i, when the split is the binary
op's only user and both operands have the result's shape. Each part is the same element-wise
function of the same elements as before. A recurrence written out step by step (NNEF's LSTM from
nnef-tools) adds each step's input projection to its recurrent product over all gates and then
splits the gates; split first, the product's gate parts (matvec.unit_products) reach the gate
math without a joined [1, 4 * hidden] tensor between them, so IREE fuses the adds and the gate
math into the product's dispatch: one dispatch a step instead of two (docs/performance.md).
"""
from iree.compiler import ir

from estuary.dialects import graph
from estuary.dialects.ops.elementwise import BINARY
from estuary.passes import register
from estuary.passes.cleanup import dce
from estuary.passes.lowering import nn_ops
from estuary.passes.rewrite import static_op, attrs, operands, producer, shape_of, short, single_use


def _sinkable(split):
    """The element-wise binary op whose result `split` splits, when the split can go first."""
    op = producer(operands(split)[0])
    if op is None or short(op) not in BINARY or not single_use(op.results[0]):
        return None
    out = shape_of(op.results[0])
    return op if all(shape_of(v) == out for v in operands(op)) else None


@register("nn-split-elementwise")
def split_elementwise(nn, options):
    """Move splits of element-wise binary results onto the operands (split first, then the op)."""
    changed = True
    while changed:  # a split moved onto an operand may meet another binary op
        changed = False
        for split in nn_ops(nn.module.operation):
            if short(split) != "split" or not static_op(split) or (op := _sinkable(split)) is None:
                continue
            at = attrs(split)
            with nn.context, split.location, ir.InsertionPoint(split):
                parts = [graph.create_op("split", [v], at) for v in operands(op)]
                parts = [p if isinstance(p, list) else [p] for p in parts]
                new = [graph.create_op(short(op), [a, b]) for a, b in zip(*parts)]
            for old, value in zip(split.results, new):
                old.replace_all_uses_with(value)
            split.erase()
            op.erase()  # its one user was the split
            changed = True
            break
    dce(nn, options)
