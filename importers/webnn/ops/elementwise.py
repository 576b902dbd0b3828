"""WebNN mappings: element-wise binary/unary/logical ops, cast, clamp, where (§7.7.7-8, 12-14, 47),
and the current spec's notEqual, isNaN, isInfinite, roundEven, sign."""
import math

from estuary.importers.webnn.ops import OPS

_BINARY = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "max": "max", "min": "min",
           "pow": "pow", "equal": "equal", "notEqual": "not_equal", "greater": "greater", "greaterOrEqual": "greater_or_equal",
           "lesser": "lesser", "lesserOrEqual": "lesser_or_equal", "logicalAnd": "logical_and",
           "logicalOr": "logical_or", "logicalXor": "logical_xor"}

_UNARY = {"abs": "abs", "ceil": "ceil", "cos": "cos", "erf": "erf", "exp": "exp", "floor": "floor",
          "identity": "identity", "log": "log", "neg": "neg", "reciprocal": "reciprocal", "sin": "sin",
          "sqrt": "sqrt", "tan": "tan", "logicalNot": "logical_not", "isNaN": "is_nan", "isInfinite": "is_infinite",
          "roundEven": "round", "sign": "sign"}


def _binary(nn_name):
    def fn(c, a, b, options):
        return c.op(nn_name, [a, b])
    return fn


def _unary(nn_name, param):
    def fn(c, x, options):
        return c.op(nn_name, [x])
    return fn


for _js, _nn in _BINARY.items():
    OPS.op(_js, params={"a": "MLOperand", "b": "MLOperand"}, options={})(_binary(_nn))

for _js, _nn in _UNARY.items():
    _param = "a" if _js == "logicalNot" else "input"
    OPS.op(_js, params={_param: "MLOperand"}, options={})(_unary(_nn, _param))


@OPS.op("cast", params={"input": "MLOperand", "type": "MLOperandDataType"}, options={})
def cast(c, input, type, options):
    return c.op("cast", [input], to=type)


@OPS.op("clamp", params={"input": "MLOperand"}, options={"minValue": "MLNumber", "maxValue": "MLNumber"})
def clamp(c, input, options):
    lo = options.get("minValue", -math.inf)
    hi = options.get("maxValue", math.inf)
    return c.op("clamp", [input], min_value=lo, max_value=hi)


@OPS.op("where", params={"condition": "MLOperand", "trueValue": "MLOperand", "falseValue": "MLOperand"}, options={})
def where(c, condition, true_value, false_value, options):
    return c.op("where", [condition, true_value, false_value])
