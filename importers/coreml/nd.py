"""Helpers shared by the ND (rank-N, Core ML 3 and later) layer converters: axes, scalars like a
value, truth values, and inputs known at compile time (a shape, K, reps or an axis given as a
layer input).
"""
import numpy as np
from iree.compiler import ir

from estuary.dialects import core, graph
from estuary.importers.coreml.converter import params


def scalar_like(c, value, like):
    """A rank-0 constant `value` in the data type of Value `like`."""
    return c.const(np.asarray(value, dtype=np.dtype(c.spec(like).dtype)))


def axis_of(c, axis, rank, what="axis"):
    """A Core ML axis (negative counts from the end) as a non-negative index, checked."""
    c.check(-rank <= axis < rank, f"{what} {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def as_dtype(c, mask, like):
    """A uint8 0/1 mask as 1.0/0.0 in the data type of `like`."""
    return c.op("cast", [mask], to=c.spec(like).dtype)


def truth(c, x):
    """uint8 mask of x != 0 (Core ML's truth value of a tensor)."""
    return c.op("logical_not", [c.op("equal", [x, scalar_like(c, 0, x)])])


def two_operands(c, layer):
    """The operands of a binary layer: two inputs, or the input and the `alpha` scalar."""
    a = c.input(layer)
    if len(layer.input) >= 2:
        b = c.input(layer, 1)
        c.check(c.spec(a).dtype == c.spec(b).dtype,
                f"inputs have different data types {c.spec(a).dtype} and {c.spec(b).dtype}")
        return a, b
    return a, scalar_like(c, params(layer).alpha, a)


def at_least_1d(c, y):
    """Core ML tensors have rank >= 1: a rank-0 result becomes shape (1,)."""
    return c.op("reshape", [y], new_shape=[1]) if len(c.spec(y).shape) == 0 else y


def shape_of(c, v):
    return list(c.spec(v).shape)


_FOLD_LIMIT = 1 << 16  # elements: shape arithmetic is small


def constant_array(v, depth=32):
    """The numpy value of `v` when it is known at compile time: an nn.constant, or an nn op (with a
    numpy reference) whose operands all are (e.g. getShape -> sliceStatic -> concatND); else None."""
    owner = v.owner
    if not isinstance(owner, ir.OpView) or not owner.operation.name.startswith("nn.") or depth == 0:
        return None
    op = owner.operation
    if op.name == "nn.constant":
        return graph.constant_value(op.attributes["value"])
    opdef = core.get(op.name[3:])
    if opdef is None or opdef.reference is None or graph.spec_of(v).size > _FOLD_LIMIT:
        return None
    args = []
    for g in graph.operand_groups(opdef, op):
        vals = None if g is None else [constant_array(x, depth - 1) for x in (g if isinstance(g, list) else [g])]
        if vals is not None and any(a is None for a in vals):
            return None
        args.append(vals if isinstance(g, list) else vals and vals[0])
    try:
        result = opdef.reference(*args, **graph.op_attrs(opdef, op))
    except Exception:  # a reference that cannot evaluate this case: not a constant for us
        return None
    results = list(result) if isinstance(result, (list, tuple)) else [result]
    index = list(op.results).index(v) if len(results) > 1 else 0
    return np.asarray(results[index]).reshape(graph.spec_of(v).shape)


def constant_input(c, layer, k, what):
    """The numpy value of input k, which must be known at compile time."""
    value = constant_array(c.input(layer, k))
    if value is None:
        c.fail(f"{what} (input {k}, '{layer.input[k]}') must be a compile-time constant: "
               f"data-dependent shapes are not supported")
    return np.asarray(value)


def int_list(c, array, what):
    flat = np.asarray(array, dtype=np.float64).reshape(-1)
    c.check(np.all(flat == np.round(flat)), f"{what} {flat.tolist()} must hold integers")
    return [int(v) for v in flat]
