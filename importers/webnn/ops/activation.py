"""WebNN mappings: activation functions."""
from estuary.importers.webnn.ops import OPS

# WebNN method -> (nn op, {option name: nn attribute})
_UNARY = {
    "relu": ("relu", {}),
    "sigmoid": ("sigmoid", {}),
    "tanh": ("tanh", {}),
    "gelu": ("gelu", {}),
    "hardSwish": ("hard_swish", {}),
    "softplus": ("softplus", {}),
    "softsign": ("softsign", {}),
    "leakyRelu": ("leaky_relu", {"alpha": "alpha"}),
    "elu": ("elu", {"alpha": "alpha"}),
    "hardSigmoid": ("hard_sigmoid", {"alpha": "alpha", "beta": "beta"}),
    "linear": ("linear", {"alpha": "alpha", "beta": "beta"}),
}


def _unary(nn_name, option_map):
    def fn(c, input, options):
        return c.op(nn_name, [input], **{attr: options.get(opt) for opt, attr in option_map.items()})
    return fn


for _js, (_nn, _opts) in _UNARY.items():
    OPS.op(_js, params=["input", "options"], operands=["input"], options=list(_opts))(_unary(_nn, _opts))


@OPS.op("prelu", params=["input", "slope", "options"], operands=["input", "slope"], options=[])
def prelu(c, input, slope, options):
    return c.op("prelu", [input, slope])


@OPS.op("softmax", params=["input", "axis", "options"], operands=["input"], options=[])
def softmax(c, input, axis, options):
    c.check(isinstance(axis, int) and not isinstance(axis, bool), f"axis must be an integer, got {axis!r}")
    return c.op("softmax", [input], axis=axis)
