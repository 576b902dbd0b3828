"""WebNN operations: one registration per MLGraphBuilder method, mapping it onto `nn` ops.

A mapping function receives an `OpContext` (the graph plus the operator's label) and the
method's arguments in the spec's positional order, operands already resolved to MLIR values,
and returns the output value(s). The same functions serve the JSON importer and the Python
MLGraphBuilder, so both validate exactly alike.
"""
from dataclasses import dataclass, field

from estuary.dialects.graph import spec_of
from estuary.errors import VerificationError, where

OPS = {}


@dataclass
class WebNNOp:
    name: str  # camelCase method name, as in the spec and the JSON
    fn: object
    params: list  # positional parameter names, in order (the last is usually "options")
    operands: set  # parameters that are operands (or lists of operands)
    option_operands: set  # options that are operands
    options: set  # allowed option names (None: the op takes no options dict)
    defaults: dict = field(default_factory=dict)  # default values of trailing parameters


def webnn_op(name, params, operands=(), options=None, option_operands=(), defaults=None):
    """Register the decorated function as WebNN method `name`."""

    def wrap(fn):
        if name in OPS:
            raise ValueError(f"WebNN op {name} registered twice")
        opts = None if options is None else set(options) | set(option_operands) | {"label"}
        OPS[name] = WebNNOp(name, fn, list(params), set(operands), set(option_operands), opts,
                            dict(defaults or {}))
        return fn

    return wrap


class OpContext:
    """What a mapping function builds with: `c.op(...)`, `c.spec(v)`, `c.fail(msg)`."""

    def __init__(self, graph, op_name, label):
        self.graph = graph
        self.op_name = op_name
        self.label = label

    def op(self, nn_name, operands, **attrs):
        return self.graph.op(nn_name, operands, {k: v for k, v in attrs.items() if v is not None},
                             name=self.label)

    def constant(self, array, dtype):
        from estuary.dialects.core import TensorSpec
        import numpy as np

        array = np.asarray(array)
        return self.graph.constant(array, TensorSpec(array.shape, dtype), name=self.label)

    def spec(self, value):
        return spec_of(value)

    def fail(self, message):
        raise VerificationError(f"{where(self.graph.source, self.label, self.op_name)}: {message}")

    def check(self, cond, message):
        if not cond:
            self.fail(message)


def options_of(c, op, options):
    """Validate an options dict: a dict, with only the names the spec defines for `op`."""
    if options is None:
        return {}
    c.check(isinstance(options, dict), f"options must be a dictionary, got {type(options).__name__}")
    if op.options is not None:
        unknown = sorted(set(options) - op.options)
        c.check(not unknown, f"unknown option(s) {unknown}; {op.name} takes {sorted(op.options - {'label'})}")
    return options
