"""nn ops: element-wise binary, unary, comparison and logical ops, where, cast, clamp.

Semantics follow WebNN §7.7.7 (cast), §7.7.8 (clamp), §7.7.12-14 and §7.7.47 (where).
Binary ops broadcast bidirectionally (numpy rules); comparisons return uint8 0/1.
"""
import math

import numpy as np

from estuary.base import dtypes
from estuary.dialects.core import (DType, Float, ReferenceFn, TensorSpec, broadcast_shapes, check,
                                   dtype_in, nn_op, same_dtype)

SIGNED_NUMERIC = ("float32", "float16", "int32", "int64", "int8")


def _int_div(a, b):
    """Integer division truncating toward zero; x/0 gives 0 (WebNN leaves it undefined)."""
    safe = np.where(b == 0, 1, b)
    q = np.trunc(a.astype(np.float64) / safe.astype(np.float64))
    return np.where(b == 0, 0, q).astype(a.dtype)


def _div(a, b):
    if a.dtype.kind == "f":
        with np.errstate(divide="ignore", invalid="ignore"):
            return a / b
    return _int_div(a, b)


def _pow(a, b):
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        if a.dtype.kind == "f":
            return np.power(a, b)
        return np.power(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)


BINARY: dict[str, ReferenceFn] = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": _div,
    "max": np.maximum,  # NaN-propagating, as the spec's NaN tests expect
    "min": np.minimum,
    "pow": _pow,
}


def _binary_rule(a, b):
    same_dtype(a, b, what="a and b")
    return TensorSpec(broadcast_shapes(a.shape, b.shape), a.dtype)


for _name, _fn in BINARY.items():
    nn_op(_name, ["a", "b"], reference=_fn, dynamic=True)(_binary_rule)


COMPARE = {
    "equal": np.equal,
    "not_equal": np.not_equal,
    "greater": np.greater,
    "greater_or_equal": np.greater_equal,
    "lesser": np.less,
    "lesser_or_equal": np.less_equal,
}


def _compare_rule(a, b):
    same_dtype(a, b, what="a and b")
    return TensorSpec(broadcast_shapes(a.shape, b.shape), "uint8")


for _name, _fn in COMPARE.items():
    nn_op(_name, ["a", "b"], reference=lambda a, b, _fn=_fn: _fn(a, b).astype(np.uint8), dynamic=True)(_compare_rule)


LOGICAL = {
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
    "logical_xor": np.logical_xor,
}


def _logical_rule(a, b):
    dtype_in(a, ["uint8"], "a")
    dtype_in(b, ["uint8"], "b")
    return TensorSpec(broadcast_shapes(a.shape, b.shape), "uint8")


for _name, _fn in LOGICAL.items():
    nn_op(_name, ["a", "b"], reference=lambda a, b, _fn=_fn: _fn(a != 0, b != 0).astype(np.uint8), dynamic=True)(_logical_rule)


@nn_op("logical_not", ["a"], reference=lambda a: (a == 0).astype(np.uint8), dynamic=True)
def logical_not(a):
    """1 where a is zero, else 0 (uint8 in, uint8 out)."""
    dtype_in(a, ["uint8"], "a")
    return a


_erf = np.vectorize(math.erf, otypes=[np.float64])

# name -> (allowed dtypes or None for any, numpy reference)
UNARY: dict[str, tuple[tuple[str, ...] | None, ReferenceFn]] = {
    "abs": (SIGNED_NUMERIC, np.abs),
    "ceil": (dtypes.FLOATS, np.ceil),
    "cos": (dtypes.FLOATS, np.cos),
    "erf": (dtypes.FLOATS, lambda x: _erf(x).astype(x.dtype)),
    "exp": (dtypes.FLOATS, np.exp),
    "floor": (dtypes.FLOATS, np.floor),
    "identity": (None, lambda x: x.copy()),
    "log": (dtypes.FLOATS, np.log),
    "neg": (SIGNED_NUMERIC, np.negative),
    "reciprocal": (dtypes.FLOATS, lambda x: (np.ones((), x.dtype) / x).astype(x.dtype)),
    "sin": (dtypes.FLOATS, np.sin),
    "sqrt": (dtypes.FLOATS, np.sqrt),
    "tan": (dtypes.FLOATS, np.tan),
}


def _unary_rule_for(allowed):
    def rule(input):
        if allowed is not None:
            dtype_in(input, allowed)
        return input

    return rule


for _name, (_allowed, _fn) in UNARY.items():
    def _ref(x, _fn=_fn):
        with np.errstate(all="ignore"):
            return np.asarray(_fn(x)).astype(x.dtype)

    nn_op(_name, ["input"], reference=_ref, dynamic=True)(_unary_rule_for(_allowed))


@nn_op("is_nan", ["input"], reference=lambda x: np.isnan(x).astype(np.uint8), dynamic=True)
def is_nan(input):
    """1 where the input is NaN, else 0 (float in, uint8 out; WebNN isNaN)."""
    dtype_in(input, dtypes.FLOATS)
    return input.with_dtype("uint8")


@nn_op("is_infinite", ["input"], reference=lambda x: np.isinf(x).astype(np.uint8), dynamic=True)
def is_infinite(input):
    """1 where the input is +inf or -inf, else 0 (float in, uint8 out; WebNN isInfinite)."""
    dtype_in(input, dtypes.FLOATS)
    return input.with_dtype("uint8")


def _cast_ref(x, to):
    """WebNN cast: float->int truncates toward zero and saturates; NaN -> 0; ints wrap."""
    target = dtypes.to_numpy(to)
    if x.dtype.kind == "f" and target.kind in "iu":
        info = np.iinfo(target)
        with np.errstate(invalid="ignore"):
            t = np.trunc(np.nan_to_num(x.astype(np.float64), nan=0.0))
            return np.clip(t, info.min, info.max).astype(target)
    with np.errstate(over="ignore"):  # a float narrowed past its range is +-inf, as the spec says
        return x.astype(target)


@nn_op("cast", ["input"], {"to": DType()}, reference=_cast_ref, dynamic=True)
def cast(input, to):
    """Convert to data type `to` (float->int truncates and saturates, int->int wraps)."""
    return input.with_dtype(to)


def _clamp_ref(x, min_value, max_value):
    lo = np.asarray(min_value).astype(x.dtype)
    hi = np.asarray(max_value).astype(x.dtype)
    return np.minimum(np.maximum(x, lo), hi)


@nn_op("clamp", ["input"], {"min_value": Float(-math.inf), "max_value": Float(math.inf)},
       reference=_clamp_ref, dynamic=True)
def clamp(input, min_value, max_value):
    """Clamp to [min_value, max_value]; NaN inputs stay NaN."""
    check(not (min_value > max_value), f"min_value {min_value} is greater than max_value {max_value}")
    return input


@nn_op("where", ["condition", "true_value", "false_value"],
       reference=lambda c, t, f: np.where(c != 0, t, f), dynamic=True)
def where(condition, true_value, false_value):
    """Select true_value where condition (uint8) is non-zero, else false_value; all broadcast."""
    dtype_in(condition, ["uint8"], "condition")
    same_dtype(true_value, false_value, what="true_value and false_value")
    shape = broadcast_shapes(broadcast_shapes(condition.shape, true_value.shape), false_value.shape)
    return TensorSpec(shape, true_value.dtype)
