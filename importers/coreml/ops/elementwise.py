"""Core ML element-wise layers: add, multiply, average, max, min, scale, bias (classic) and
unary functions, comparisons, logic and broadcastable arithmetic (ND).

Core ML computes in float: comparisons and logical layers give 1.0 / 0.0 in the input's data type,
logical inputs are true when != 0. `round` rounds halves to even (the spec only says "nearest
integer"; TF/ONNX/torch round, which converters map onto this layer, round halves to even).
"""
from estuary.importers.coreml.classic import scalar
from estuary.importers.coreml.converter import params
from estuary.importers.coreml.nd import as_dtype, scalar_like, truth, two_operands
from estuary.importers.coreml.ops import OPS


def _fold(c, layer, nn_name):
    xs = c.inputs(layer)
    if len(xs) == 1:
        return c.op(nn_name, [xs[0], scalar(c, params(layer).alpha)])
    y = xs[0]
    for v in xs[1:]:
        y = c.op(nn_name, [y, v])
    return y


@OPS.op("add")
def add(c, layer):
    return _fold(c, layer, "add")


@OPS.op("multiply")
def multiply(c, layer):
    return _fold(c, layer, "mul")


@OPS.op("max")
def maximum(c, layer):
    xs = c.inputs(layer)
    c.check(len(xs) >= 2, "expects at least 2 inputs")
    return _fold(c, layer, "max")


@OPS.op("min")
def minimum(c, layer):
    xs = c.inputs(layer)
    c.check(len(xs) >= 2, "expects at least 2 inputs")
    return _fold(c, layer, "min")


@OPS.op("average")
def average(c, layer):
    xs = c.inputs(layer)
    y = xs[0]
    for v in xs[1:]:
        y = c.op("add", [y, v])
    return c.op("div", [y, scalar(c, len(xs))])


def _param_blob(c, wp, shape, x, what):
    """scale/bias parameters of shape [1], [C], [1,H,W] or [C,H,W] broadcasting against x's [C,H,W]."""
    shape = [int(d) for d in shape] or [1]
    c.check(len(shape) in (1, 3), f"{what} shape {shape} must be [1], [C], [1,H,W] or [C,H,W]")
    v = c.weights(wp, shape, what)
    if len(shape) == 1:
        v = v.reshape(-1, 1, 1)
    rank = c.spec(x).rank
    return c.const(v.reshape([1] * max(rank - 3, 0) + list(v.shape)))


@OPS.op("scale")
def scale(c, layer):
    p = layer.scale
    x = c.input(layer)
    y = c.op("mul", [x, _param_blob(c, p.scale, p.shapeScale, x, "scale")])
    if p.hasBias:
        y = c.op("add", [y, _param_blob(c, p.bias, p.shapeBias, x, "bias")])
    return y


@OPS.op("bias")
def bias(c, layer):
    p = layer.bias
    x = c.input(layer)
    return c.op("add", [x, _param_blob(c, p.bias, p.shape, x, "bias")])


_UNARY = {"ceil": "ceil", "floor": "floor", "sign": "sign", "round": "round", "exp2": "exp2", "sin": "sin",
          "cos": "cos", "tan": "tan", "asin": "asin", "acos": "acos", "atan": "atan", "sinh": "sinh",
          "cosh": "cosh", "tanh": "tanh", "asinh": "asinh", "acosh": "acosh", "atanh": "atanh", "erf": "erf"}


def _unary(kind, nn_name):
    @OPS.op(kind)
    def convert(c, layer):
        return c.op(nn_name, [c.input(layer)])
    convert.__name__ = f"convert_{kind}"
    return convert


for _kind, _nn in _UNARY.items():
    _unary(_kind, _nn)


_COMPARE = {"equal": "equal", "lessThan": "lesser", "lessEqual": "lesser_or_equal", "greaterThan": "greater",
            "greaterEqual": "greater_or_equal"}


def _compare(kind, nn_name):
    @OPS.op(kind)
    def convert(c, layer):
        a, b = two_operands(c, layer)
        return as_dtype(c, c.op(nn_name, [a, b]), a)
    convert.__name__ = f"convert_{kind}"
    return convert


for _kind, _nn in _COMPARE.items():
    _compare(_kind, _nn)


@OPS.op("notEqual")
def convert_not_equal(c, layer):
    a, b = two_operands(c, layer)
    return as_dtype(c, c.op("logical_not", [c.op("equal", [a, b])]), a)


_LOGICAL = {"logicalAnd": "logical_and", "logicalOr": "logical_or", "logicalXor": "logical_xor"}


def _logical(kind, nn_name):
    @OPS.op(kind)
    def convert(c, layer):
        c.check(len(layer.input) == 2, f"needs 2 inputs, got {len(layer.input)}")
        a, b = c.inputs(layer)
        return as_dtype(c, c.op(nn_name, [truth(c, a), truth(c, b)]), a)
    convert.__name__ = f"convert_{kind}"
    return convert


for _kind, _nn in _LOGICAL.items():
    _logical(_kind, _nn)


@OPS.op("logicalNot")
def convert_logical_not(c, layer):
    x = c.input(layer)
    return as_dtype(c, c.op("equal", [x, scalar_like(c, 0, x)]), x)


_BROADCASTABLE = {"addBroadcastable": "add", "subtractBroadcastable": "sub", "multiplyBroadcastable": "mul",
                  "divideBroadcastable": "div", "maxBroadcastable": "max", "minBroadcastable": "min",
                  "powBroadcastable": "pow", "modBroadcastable": "mod", "floorDivBroadcastable": "floor_div"}


def _broadcastable(kind, nn_name):
    @OPS.op(kind)
    def convert(c, layer):
        c.check(len(layer.input) == 2, f"needs 2 inputs, got {len(layer.input)}")
        a, b = c.inputs(layer)
        return c.op(nn_name, [a, b])
    convert.__name__ = f"convert_{kind}"
    return convert


for _kind, _nn in _BROADCASTABLE.items():
    _broadcastable(_kind, _nn)
