"""Small helpers shared by the nn-level rewrite passes (layout, transposes, folding)."""
import numpy as np
from iree.compiler import ir

from estuary.base import dtypes
from estuary.dialects import core, graph
from estuary.dialects.core import TensorSpec
from estuary.passes.lowering import nn_ops


def producer(value, name=None):
    """The nn op defining `value` (optionally only if it is `nn.<name>`), else None."""
    owner = value.owner
    if not isinstance(owner, ir.OpView) or not owner.operation.name.startswith("nn."):
        return None
    op = owner.operation
    if name is not None and op.name != "nn." + name:
        return None
    return op


def constant(value):
    """The numpy array of an `nn.constant` value, else None."""
    op = producer(value, "constant")
    return None if op is None else graph.constant_value(op.attributes["value"])


def constant_row(c, n):
    """A constant C as a length-n row vector (the same for every row of a product it is added to),
    or None when it is not a constant or varies along the rows."""
    arr = constant(c)
    if arr is None or arr.ndim > 2 or (arr.ndim == 2 and arr.shape[0] != 1):
        return None
    return np.broadcast_to(arr.reshape(-1), (n,))


def group_ops(nn, member):
    """The nn ops for which `member(op)` gives (key, info), grouped: {key: [(op, info), ...]},
    keys in the order of their first op, each group in program order."""
    groups = {}
    for op in nn_ops(nn.module.operation):
        m = member(op)
        if m is not None:
            groups.setdefault(m[0], []).append((op, m[1]))
    return groups


def attrs(op):
    return graph.op_attrs(core.get(op.name), op)


def operands(op):
    return graph.operand_groups(core.get(op.name), op)


def short(op):
    return op.name[3:]


def static_op(op):
    """Whether every operand and result of `op` has a static shape. The nn-level optimizations
    rewrite static ops only: with dynamic dimensions they step aside (docs/dynamic-shapes.md)."""
    return all(ir.RankedTensorType(v.type).has_static_shape for v in list(op.operands) + list(op.results))


def single_use(value):
    return len(list(value.uses)) == 1


def make_constant(nn, array, dtype):
    """An nn.constant of `array` in `dtype` at the current insertion point."""
    array = np.ascontiguousarray(np.asarray(array).astype(dtypes.to_numpy(dtype)))
    spec = TensorSpec(array.shape, dtype)
    nn.keep.append(array)
    return graph.create_op("constant", [], {"value": graph.constant_attr(array, spec)})


def replace(nn, op, build):
    """Replace `op`'s single result by what `build()` creates before it; erase `op`."""
    with nn.context, op.location, ir.InsertionPoint(op):
        new = build()
    op.results[0].replace_all_uses_with(new)
    op.erase()
    return new


def dtype_of(value):
    return TensorSpec.of_type(value.type).dtype


def shape_of(value):
    return tuple(TensorSpec.of_type(value.type).shape)
