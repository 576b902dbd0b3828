"""nn ops: activation functions (WebNN §7.7.15, 18, 22, 23, 26, 27, 33, 35, 38, 40-42, 44)."""
import math

import numpy as np

from estuary.base import dtypes
from estuary.dialects.core import Float, Int, TensorSpec, broadcast_shapes, check, dtype_in, nn_op, same_dtype

RELU_TYPES = ("float32", "float16", "int32", "int8")

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _f(fn):
    """Reference computed in float64 (options cast to the input's dtype first), returned in that dtype."""
    def ref(x, **attrs):
        with np.errstate(all="ignore"):
            attrs = {k: float(x.dtype.type(v)) for k, v in attrs.items()}
            return fn(x.astype(np.float64), **attrs).astype(x.dtype)
    return ref


def _float_rule(input, **_):
    dtype_in(input, dtypes.FLOATS)
    return input


def _softplus(x):
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


FLOAT_ACTIVATIONS = {
    # name: (attributes, reference)
    "sigmoid": ({}, _f(lambda x: 1 / (1 + np.exp(-x)))),
    "tanh": ({}, _f(np.tanh)),
    "leaky_relu": ({"alpha": Float(0.01)}, _f(lambda x, alpha: np.where(x >= 0, x, alpha * x))),
    "elu": ({"alpha": Float(1.0)}, _f(lambda x, alpha: np.where(x > 0, x, alpha * np.expm1(x)))),
    "gelu": ({}, _f(lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2))))),
    "hard_sigmoid": ({"alpha": Float(0.2), "beta": Float(0.5)},
                     _f(lambda x, alpha, beta: np.clip(alpha * x + beta, 0, 1))),
    "hard_swish": ({}, _f(lambda x: x * np.clip(x + 3, 0, 6) / 6)),
    "softplus": ({}, _f(_softplus)),
    "softsign": ({}, _f(lambda x: x / (1 + np.abs(x)))),
    "linear": ({"alpha": Float(1.0), "beta": Float(0.0)}, _f(lambda x, alpha, beta: alpha * x + beta)),
}

for _name, (_attrs, _ref) in FLOAT_ACTIVATIONS.items():
    nn_op(_name, ["input"], _attrs, reference=_ref, dynamic=True)(_float_rule)


@nn_op("relu", ["input"], reference=lambda x: np.maximum(x, np.zeros((), x.dtype)), dynamic=True)
def relu(input):
    """max(0, x)."""
    dtype_in(input, RELU_TYPES)
    return input


def _prelu_ref(x, slope):
    zero = np.zeros((), x.dtype)
    return (np.maximum(x, zero) + slope * np.minimum(x, zero)).astype(x.dtype)


@nn_op("prelu", ["input", "slope"], reference=_prelu_ref, dynamic=True)
def prelu(input, slope):
    """max(0, x) + slope * min(0, x); input and slope broadcast bidirectionally."""
    dtype_in(input, RELU_TYPES)
    same_dtype(input, slope, what="input and slope")
    return TensorSpec(broadcast_shapes(input.shape, slope.shape), input.dtype)


def _softmax_ref(x, axis):
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)).astype(x.dtype)


@nn_op("softmax", ["input"], {"axis": Int()}, reference=_softmax_ref, dynamic=True)
def softmax(input, axis):
    """exp(x - max) / sum(exp(x - max)) along `axis`."""
    dtype_in(input, dtypes.FLOATS)
    check(0 <= axis < input.rank, f"axis {axis} out of range for rank {input.rank}")
    return input
