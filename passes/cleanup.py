"""Generic nn-level clean-ups: dead-code elimination, CSE, constant folding."""
import numpy as np
from iree.compiler import ir

from estuary.base import dtypes
from estuary.dialects import core, graph
from estuary.dialects.core import TensorSpec
from estuary.passes import register
from estuary.passes.lowering import nn_ops
from estuary.passes.rewrite import static_op

# Folding materializes results in the module: bound their size.
FOLD_LIMIT = 1 << 22
# 8-bit integer constants of at least this many elements stay narrow when cast (_widens_integers)
NARROW_MIN = 1024


def _unused(op):
    return all(not list(r.uses) for r in op.results)


@register("nn-dce")
def dce(nn, options):
    """Erase nn ops whose results are unused (repeatedly, back to front)."""
    for op in reversed(nn_ops(nn.module.operation)):
        if _unused(op):
            op.erase()


def _key(op):
    """What makes two ops the same computation: the function they are in (a multifunction
    model's functions share no values), op name, operands, attributes and result types."""
    attrs = tuple(sorted((name, str(op.attributes[name])) for name in op.attributes))
    func = op.parent
    while func is not None and func.name != "func.func":
        func = func.parent
    return (func, op.name, tuple(op.operands), attrs, tuple(str(r.type) for r in op.results))


@register("nn-cse")
def cse(nn, options):
    """Merge nn ops that compute the same thing (same op, operands, attributes, types)."""
    seen = {}
    for op in nn_ops(nn.module.operation):
        key = _key(op)
        first = seen.get(key)
        if first is None:
            seen[key] = op
            continue
        for old, new in zip(op.results, first.results):
            old.replace_all_uses_with(new)
        op.erase()


def _constant_array(value):
    owner = value.owner
    if not isinstance(owner, ir.OpView) or owner.operation.name != "nn.constant":
        return None
    return graph.constant_value(owner.operation.attributes["value"])


def _widens_integers(op):
    """A cast widening a large 8-bit integer constant: a compressed weight's dequantization
    (int8 / uint8 data, or palette indices before their gather). Left unfolded so that the
    artefact stores the narrow data (docs/mlprogram.md, compressed weights)."""
    if op.name != "nn.cast":
        return False
    src, dst = TensorSpec.of_type(op.operands[0].type), TensorSpec.of_type(op.results[0].type)
    return src.dtype in ("int8", "uint8") and src.static and src.size >= NARROW_MIN and \
        np.dtype(dtypes.to_numpy(dst.dtype)).itemsize > 1


def _fold(op, opdef):
    """Result arrays of `op` computed by its numpy reference, or None if it cannot fold."""
    if not static_op(op):
        return None
    if opdef is None or opdef.reference is None or opdef.name == "constant" or _widens_integers(op):
        return None
    out_specs = [TensorSpec.of_type(r.type) for r in op.results]
    if sum(s.size for s in out_specs) > FOLD_LIMIT:
        return None
    groups = graph.operand_groups(opdef, op)
    arrays = []
    for g in groups:
        if g is None:
            arrays.append(None)
            continue
        vals = [_constant_array(v) for v in (g if isinstance(g, list) else [g])]
        if any(v is None for v in vals):
            return None
        arrays.append(vals if isinstance(g, list) else vals[0])
    try:
        result = opdef.reference(*arrays, **graph.op_attrs(opdef, op))
    except Exception:  # a reference that cannot handle this case simply does not fold
        return None
    results = list(result) if isinstance(result, (list, tuple)) else [result]
    if len(results) != len(out_specs):
        return None
    out = []
    for r, spec in zip(results, out_specs):
        r = np.asarray(r)
        if tuple(r.shape) != spec.shape:
            return None
        out.append(r.astype(dtypes.to_numpy(spec.dtype)))
    return out


@register("nn-fold-constants")
def fold_constants(nn, options):
    """Evaluate nn ops whose operands are all constants with their numpy reference. Returns
    {"narrow_weights": n} when n widening casts of integer constants were kept (compressed
    weights: the compiler then expands them once at load, compiler.NARROW_WEIGHT_FLAGS)."""
    narrow = 0
    for op in nn_ops(nn.module.operation):
        opdef = core.get(op.name)
        if _widens_integers(op) and _constant_array(op.operands[0]) is not None:
            narrow += 1
        arrays = _fold(op, opdef)
        if arrays is None:
            continue
        with nn.context, op.location, ir.InsertionPoint(op):
            for old, arr in zip(op.results, arrays):
                spec = TensorSpec.of_type(old.type)
                attr = graph.constant_attr(arr, spec)
                nn.keep.append(arr)
                new = ir.Operation.create("nn.constant", results=[old.type], attributes={"value": attr})
                old.replace_all_uses_with(new.result)
        op.erase()
    dce(nn, options)
    return {"narrow_weights": narrow} if narrow else None
