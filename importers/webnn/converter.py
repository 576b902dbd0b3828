"""The WebNN conversion context `OpContext` (`c` in importers/webnn/ops/) and options checking."""
from estuary.dialects.graph import Graph
from estuary.importers.context import ConversionContext
from estuary.importers.registry import Entry


class OpContext(ConversionContext):
    """One WebNN operator being mapped: the graph, the method name and the operator's label."""

    def __init__(self, graph: Graph, op_name: str, label: str) -> None:
        super().__init__(graph, graph.source)
        self.op_name = self.op_type = op_name
        self.label = label


def options_of(c: OpContext, op: Entry, options: object) -> dict:
    """Validate an options dict: a dict, with only the names the spec defines for `op`."""
    if options is None:
        return {}
    c.check(isinstance(options, dict), f"options must be a dictionary, got {type(options).__name__}")
    assert isinstance(options, dict)
    if op.options is not None:
        unknown = sorted(set(options) - op.options)
        c.check(not unknown, f"unknown option(s) {unknown}; {op.name} takes {sorted(op.options - {'label'})}")
    return options
