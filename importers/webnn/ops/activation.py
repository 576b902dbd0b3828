"""WebNN mappings: activation functions."""
from estuary.importers.webnn.ops import OPS

# WebNN method -> (nn op, its options: {name: WebIDL member}, each the nn attribute of its name)
_UNARY = {
    "relu": ("relu", {}),
    "sigmoid": ("sigmoid", {}),
    "tanh": ("tanh", {}),
    "gelu": ("gelu", {}),
    "hardSwish": ("hard_swish", {}),
    "softplus": ("softplus", {}),
    "softsign": ("softsign", {}),
    "leakyRelu": ("leaky_relu", {"alpha": "double = 0.01"}),
    "elu": ("elu", {"alpha": "double = 1"}),
    "hardSigmoid": ("hard_sigmoid", {"alpha": "double = 0.2", "beta": "double = 0.5"}),
    "linear": ("linear", {"alpha": "double = 1", "beta": "double = 0"}),
}


def _unary(nn_name, option_names):
    def fn(c, input, options):
        return c.op(nn_name, [input], **{name: options.get(name) for name in option_names})
    return fn


for _js, (_nn, _opts) in _UNARY.items():
    OPS.op(_js, params={"input": "MLOperand"}, options=_opts)(_unary(_nn, list(_opts)))


@OPS.op("prelu", params={"input": "MLOperand", "slope": "MLOperand"}, options={})
def prelu(c, input, slope, options):
    return c.op("prelu", [input, slope])


@OPS.op("softmax", params={"input": "MLOperand", "axis": "unsigned long"}, options={})
def softmax(c, input, axis, options):
    c.check(isinstance(axis, int) and not isinstance(axis, bool), f"axis must be an integer, got {axis!r}")
    return c.op("softmax", [input], axis=axis)
