"""The WebNN conversion context `OpContext` (`c` in importers/webnn/ops/) and options checking."""
from estuary.dialects.graph import Graph
from estuary.importers.context import ConversionContext
from estuary.importers.registry import Entry
from estuary.importers.webnn import idl


class OpContext(ConversionContext):
    """One WebNN operator being mapped: the graph, the method name and the operator's label."""

    def __init__(self, graph: Graph, op_name: str, label: str) -> None:
        super().__init__(graph, graph.source)
        self.op_name = self.op_type = op_name
        self.label = label


def options_of(c: OpContext, op: Entry, options: object) -> dict:
    """Validate an options dict: a dict, with only the names the spec defines for `op`, each of
    its WebIDL type (the registration's; None counts as absent, operands are resolved later)."""
    if options is None:
        return {}
    c.check(isinstance(options, dict), f"options must be a dictionary, got {type(options).__name__}")
    assert isinstance(options, dict)
    if op.options is not None:
        unknown = sorted(set(options) - op.options)
        c.check(not unknown, f"unknown option(s) {unknown}; {op.name} takes {sorted(op.options - {'label'})}")
        for name, value in options.items():
            type_ = op.types[name]
            c.check(value is None or type_ == idl.OPERAND or idl.conforms(value, type_),
                    f"option {name} must be {_described(type_)}, got {value!r}")
    return options


def _described(type_: str) -> str:
    """What a message asks for: an enumeration's values, another type by its name."""
    inner = idl.element(type_)
    if (inner or type_) not in idl.ENUMS:
        return f"of type {type_}"
    values = list(idl.ENUMS[inner or type_]) + list(idl.EARLIER.get(inner or type_, ()))
    return f"a list of values among {values}" if inner else f"one of {values}"
