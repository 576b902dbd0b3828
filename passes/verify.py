"""nn-verify: re-check every nn op against its declaration (operands, attributes, result types)."""
from iree.compiler import ir

from estuary.base import dims
from estuary.dialects import core, graph
from estuary.dialects.core import TensorSpec
from estuary.base.errors import VerificationError, where
from estuary.passes import register
from estuary.passes.lowering import nn_ops

_STRUCTURAL = {"operandSegmentSizes"}


def verify_op(op):
    """None if `op` is valid, else the message explaining why not."""
    opdef = core.get(op.name)
    if opdef is None:
        return f"unknown op {op.name}"
    try:
        given = {}
        for name in op.attributes:
            if name in _STRUCTURAL:
                continue
            kind = opdef.attrs.get(name)
            if kind is None:
                raise VerificationError(f"unknown attribute '{name}'")
            given[name] = kind.from_mlir(op.attributes[name])
        attrs = opdef.complete_attrs(given)
        groups = graph.operand_groups(opdef, op)
        core.check(len(groups) == len(opdef.operands) and
                   all(g is not None or d.endswith(("?", "*")) for g, d in zip(groups, opdef.operands)),
                   f"expects operands {opdef.operands}, got {len(list(op.operands))}")
        specs = [None if g is None else [TensorSpec.of_type(v.type) for v in g] if isinstance(g, list)
                 else TensorSpec.of_type(g.type) for g in groups]
        if not opdef.dynamic:
            graph.refuse_dynamic(opdef, specs, attrs)
        expected = graph.infer(opdef, specs, attrs)
        actual = [TensorSpec.of_type(r.type) for r in op.results]
        unifier = dims.current()  # a type written before two symbols were found equal names either
        if unifier is not None:
            actual = [graph.resolved(a, unifier) for a in actual]
        core.check(expected == actual, f"result types {[str(a) for a in actual]} do not match the "
                                       f"inferred {[str(e) for e in expected]}")
    except VerificationError as e:
        return str(e)
    except (ValueError, TypeError) as e:
        return f"malformed op: {e}"
    return None


@register("nn-verify")
def verify(nn, options):
    """Check every nn op; report all invalid ops at once."""
    problems = []
    for op in nn_ops(nn.module.operation):
        msg = verify_op(op)
        if msg:
            problems.append(f"{where(nn.source, graph.loc_name(op), op.name)}: {msg}")
    if problems:
        raise VerificationError("\n".join(problems))
