"""Core ML ND layers: element-wise math, comparisons, logic, broadcastable arithmetic, reductions,
softmaxND, batchedMatmul, layerNormalization, clampedReLU.

Core ML computes in float: comparisons and logical layers give 1.0 / 0.0 in the input's data type,
logical inputs are true when != 0. `round` rounds halves to even (the spec only says "nearest
integer"; TF/ONNX/torch round, which converters map onto this layer, round halves to even).
"""
import math

import numpy as np

from estuary.importers.coreml.registry import coreml_layer


def _params(layer):
    return getattr(layer, layer.WhichOneof("layer"))


def scalar(c, value, like):
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
    return c.op("logical_not", [c.op("equal", [x, scalar(c, 0, x)])])


def _two(c, layer):
    """The operands of a binary layer: two inputs, or the input and the `alpha` scalar."""
    a = c.input(layer)
    if len(layer.input) >= 2:
        b = c.input(layer, 1)
        c.check(c.spec(a).dtype == c.spec(b).dtype,
                f"inputs have different data types {c.spec(a).dtype} and {c.spec(b).dtype}")
        return a, b
    return a, scalar(c, _params(layer).alpha, a)


# ------------------------------------------------------------------ unary element-wise

_UNARY = {"ceil": "ceil", "floor": "floor", "sign": "sign", "round": "round", "exp2": "exp2", "sin": "sin",
          "cos": "cos", "tan": "tan", "asin": "asin", "acos": "acos", "atan": "atan", "sinh": "sinh",
          "cosh": "cosh", "tanh": "tanh", "asinh": "asinh", "acosh": "acosh", "atanh": "atanh", "erf": "erf"}


def _unary(kind, nn_name):
    @coreml_layer(kind)
    def convert(c, layer):
        return c.op(nn_name, [c.input(layer)])
    convert.__name__ = f"convert_{kind}"
    return convert


for _kind, _nn in _UNARY.items():
    _unary(_kind, _nn)


@coreml_layer("clip")
def convert_clip(c, layer):
    p = layer.clip
    c.check(p.minVal <= p.maxVal, f"minVal {p.minVal} is greater than maxVal {p.maxVal}")
    return c.op("clamp", [c.input(layer)], min_value=float(p.minVal), max_value=float(p.maxVal))


@coreml_layer("clampedReLU")
def convert_clamped_relu(c, layer):
    """min(beta, x >= 0 ? x : alpha * x)."""
    p = layer.clampedReLU
    y = c.op("leaky_relu", [c.input(layer)], alpha=float(p.alpha))
    return c.op("min", [y, scalar(c, p.beta, y)])


@coreml_layer("gelu")
def convert_gelu(c, layer):
    x = c.input(layer)
    mode = layer.gelu.mode
    if mode == 0:  # EXACT: 0.5 x (1 + erf(x / sqrt 2))
        return c.op("gelu", [x])
    if mode == 1:  # TANH_APPROXIMATION: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        cube = c.op("mul", [c.op("mul", [x, x]), x])
        inner = c.op("add", [x, c.op("mul", [cube, scalar(c, 0.044715, x)])])
        t = c.op("tanh", [c.op("mul", [inner, scalar(c, math.sqrt(2 / math.pi), x)])])
        half_x = c.op("mul", [x, scalar(c, 0.5, x)])
        return c.op("mul", [half_x, c.op("add", [t, scalar(c, 1.0, x)])])
    if mode == 2:  # SIGMOID_APPROXIMATION: x sigmoid(1.702 x)
        return c.op("mul", [x, c.op("sigmoid", [c.op("mul", [x, scalar(c, 1.702, x)])])])
    c.fail(f"unknown gelu mode {mode}")


# ------------------------------------------------------------------ comparisons and logic

_COMPARE = {"equal": "equal", "lessThan": "lesser", "lessEqual": "lesser_or_equal", "greaterThan": "greater",
            "greaterEqual": "greater_or_equal"}


def _compare(kind, nn_name):
    @coreml_layer(kind)
    def convert(c, layer):
        a, b = _two(c, layer)
        return as_dtype(c, c.op(nn_name, [a, b]), a)
    convert.__name__ = f"convert_{kind}"
    return convert


for _kind, _nn in _COMPARE.items():
    _compare(_kind, _nn)


@coreml_layer("notEqual")
def convert_not_equal(c, layer):
    a, b = _two(c, layer)
    return as_dtype(c, c.op("logical_not", [c.op("equal", [a, b])]), a)


_LOGICAL = {"logicalAnd": "logical_and", "logicalOr": "logical_or", "logicalXor": "logical_xor"}


def _logical(kind, nn_name):
    @coreml_layer(kind)
    def convert(c, layer):
        c.check(len(layer.input) == 2, f"needs 2 inputs, got {len(layer.input)}")
        a, b = c.inputs(layer)
        return as_dtype(c, c.op(nn_name, [truth(c, a), truth(c, b)]), a)
    convert.__name__ = f"convert_{kind}"
    return convert


for _kind, _nn in _LOGICAL.items():
    _logical(_kind, _nn)


@coreml_layer("logicalNot")
def convert_logical_not(c, layer):
    x = c.input(layer)
    return as_dtype(c, c.op("equal", [x, scalar(c, 0, x)]), x)


# ------------------------------------------------------------------ broadcastable arithmetic

_BROADCASTABLE = {"addBroadcastable": "add", "subtractBroadcastable": "sub", "multiplyBroadcastable": "mul",
                  "divideBroadcastable": "div", "maxBroadcastable": "max", "minBroadcastable": "min",
                  "powBroadcastable": "pow", "modBroadcastable": "mod", "floorDivBroadcastable": "floor_div"}


def _broadcastable(kind, nn_name):
    @coreml_layer(kind)
    def convert(c, layer):
        c.check(len(layer.input) == 2, f"needs 2 inputs, got {len(layer.input)}")
        a, b = c.inputs(layer)
        return c.op(nn_name, [a, b])
    convert.__name__ = f"convert_{kind}"
    return convert


for _kind, _nn in _BROADCASTABLE.items():
    _broadcastable(_kind, _nn)


# ------------------------------------------------------------------ reductions

_REDUCE = {"reduceSum": "reduce_sum", "reduceMean": "reduce_mean", "reduceMax": "reduce_max",
           "reduceMin": "reduce_min", "reduceProd": "reduce_product", "reduceL1": "reduce_l1",
           "reduceL2": "reduce_l2", "reduceLogSum": "reduce_log_sum", "reduceSumSquare": "reduce_sum_square",
           "reduceLogSumExp": "reduce_log_sum_exp"}


def at_least_1d(c, y):
    """Core ML tensors have rank >= 1: a rank-0 result becomes shape (1,)."""
    return c.op("reshape", [y], new_shape=[1]) if len(c.spec(y).shape) == 0 else y


def _reduce(kind, nn_name):
    @coreml_layer(kind)
    def convert(c, layer):
        """Reduce over `axes` (negative from the end), or every axis when reduceAll or axes is empty."""
        p = _params(layer)
        x = c.input(layer)
        rank = len(c.spec(x).shape)
        if p.reduceAll or len(p.axes) == 0:
            axes = list(range(rank))
        else:
            axes = sorted({axis_of(c, a, rank, "reduction axis") for a in p.axes})
            c.check(len(axes) == len(p.axes), f"axes {list(p.axes)} name an axis twice")
        y = c.op(nn_name, [x], axes=axes, keep_dimensions=bool(p.keepDims))
        return at_least_1d(c, y)
    convert.__name__ = f"convert_{kind}"
    return convert


for _kind, _nn in _REDUCE.items():
    _reduce(_kind, _nn)


@coreml_layer("softmaxND")
def convert_softmax_nd(c, layer):
    x = c.input(layer)
    return c.op("softmax", [x], axis=axis_of(c, layer.softmaxND.axis, len(c.spec(x).shape)))


# ------------------------------------------------------------------ batchedMatmul, layerNormalization

def _swap_last(c, x):
    rank = len(c.spec(x).shape)
    perm = list(range(rank))
    perm[-2:] = perm[-1], perm[-2]
    return c.op("transpose", [x], permutation=perm)


@coreml_layer("batchedMatmul")
def convert_batched_matmul(c, layer):
    """numpy matmul of two inputs (1-D operands promoted and the added dimension dropped), or of one
    input with the weight matrix (X1, X2) plus an optional bias. int8DynamicQuantize is an
    execution hint: the product is computed in float."""
    p = layer.batchedMatmul
    a = c.input(layer)
    if len(layer.input) >= 2:
        b = c.input(layer, 1)
        ra, rb = len(c.spec(a).shape), len(c.spec(b).shape)
        if ra == 1:
            a = c.op("reshape", [a], new_shape=[1, c.spec(a).shape[0]])
        if rb == 1:
            b = c.op("reshape", [b], new_shape=[c.spec(b).shape[0], 1])
        if p.transposeA and ra > 1:
            a = _swap_last(c, a)
        if p.transposeB and rb > 1:
            b = _swap_last(c, b)
        y = c.op("matmul", [a, b])
        shape = list(c.spec(y).shape)
        if ra == 1:
            del shape[-2]
        if rb == 1:
            del shape[-1]
        if ra == 1 or rb == 1:
            y = c.op("reshape", [y], new_shape=shape or [1])
        return y
    x1, x2 = int(p.weightMatrixFirstDimension), int(p.weightMatrixSecondDimension)
    c.check(x1 > 0 and x2 > 0, f"weight matrix dimensions {x1} x {x2} must be positive")
    c.check(not p.transposeB, "transposeB is not defined for a weight matrix parameter")
    w = c.weights(p.weights, (x2, x1)).T  # stored as (X2, X1): the transpose of the (X1, X2) matrix
    shape = c.spec(a).shape
    if p.transposeA:
        c.check(len(shape) >= 2, "transposeA needs an input of rank >= 2")
        a = _swap_last(c, a)
        shape = c.spec(a).shape
    c.check(shape[-1] == x1, f"input's last dimension {shape[-1]} must equal weightMatrixFirstDimension {x1}")
    rows = math.prod(shape[:-1])
    flat = c.op("reshape", [a], new_shape=[rows, x1])
    bias = c.const(c.weights(p.bias, (x2,), what="bias")) if p.hasBias else None
    y = c.op("gemm", [flat, c.const(np.ascontiguousarray(w))] + ([bias] if bias is not None else []))
    return c.op("reshape", [y], new_shape=list(shape[:-1]) + [x2])


@coreml_layer("layerNormalization")
def convert_layer_normalization(c, layer):
    """gamma * (x - mean) / sqrt(var + eps) + beta over the last len(normalizedShape) dimensions."""
    p = layer.layerNormalization
    x = c.input(layer)
    shape = tuple(c.spec(x).shape)
    norm = tuple(int(d) for d in p.normalizedShape)
    c.check(0 < len(norm) <= len(shape) and shape[len(shape) - len(norm):] == norm,
            f"normalizedShape {list(norm)} must be the trailing dimensions of the input shape {list(shape)}")
    axes = list(range(len(shape) - len(norm), len(shape)))
    gamma = c.const(c.weights(p.gamma, norm, what="gamma"))
    beta = c.const(c.weights(p.beta, norm, what="beta"))
    return c.op("layer_normalization", [x, gamma, beta], axes=axes, epsilon=float(p.eps))
