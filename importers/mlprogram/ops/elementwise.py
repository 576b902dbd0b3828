"""MIL element-wise ops: binary arithmetic and comparisons (numpy broadcasting), logical ops,
unary math (with the epsilon of inverse/log/rsqrt), clip/threshold and cast.

Results of constant operands are folded in numpy (shape arithmetic stays known at import), and
of operands known up to dynamic dimensions symbolically (symbolic.py) where the symbols decide
them; otherwise they are computed at run time.
Floats of every width compute as float32; cast to fp16/fp32 is therefore the identity on values
(docs/mlprogram.md "float16"); cast to an integer type truncates toward zero, to bool tests != 0.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from estuary.importers.mlprogram import symbolic
from estuary.importers.mlprogram.ops import OPS
from estuary.importers.mlprogram.symbolic import NotSymbolic, SymArray
from estuary.importers.mlprogram.values import DTYPE_NAMES, nn_dtype, numpy_dtype

_MILOps = dict[str, tuple[str, np.ufunc]]  # MIL op -> (nn op, numpy function folding constants)
_BINARY: _MILOps = {"add": ("add", np.add), "sub": ("sub", np.subtract), "mul": ("mul", np.multiply),
                    "real_div": ("div", np.true_divide), "pow": ("pow", np.power), "maximum": ("max", np.maximum),
                    "minimum": ("min", np.minimum), "floor_div": ("floor_div", np.floor_divide),
                    "mod": ("mod", np.mod)}
_COMPARE: _MILOps = {"equal": ("equal", np.equal), "greater": ("greater", np.greater),
                     "greater_equal": ("greater_or_equal", np.greater_equal), "less": ("lesser", np.less),
                     "less_equal": ("lesser_or_equal", np.less_equal)}
_LOGICAL: _MILOps = {"logical_and": ("logical_and", np.logical_and), "logical_or": ("logical_or", np.logical_or),
                     "logical_xor": ("logical_xor", np.logical_xor)}


def both_const(a: Any, b: Any) -> bool:
    return isinstance(a, np.ndarray) and isinstance(b, np.ndarray)


def fold_symbolic(mil: str, a: Any, b: Any) -> Any:
    """MIL op `mil` of two values known at import, one a SymArray: the folded value, or None when
    the dynamic dimensions do not decide it (the op is then computed at run time)."""
    if not (symbolic.known(a) and symbolic.known(b)):
        return None
    try:
        if mil in symbolic.COMPARE:
            return symbolic.compare(mil, a, b)
        if mil in symbolic.ARITHMETIC:
            dtype = np.float32 if mil == "real_div" else np.result_type(a.dtype, b.dtype)
            return symbolic.elementwise(symbolic.ARITHMETIC[mil], [a, b], dtype)
    except NotSymbolic:
        pass
    return None


def _int_div(c: Any, nn_name: str, a: Any, b: Any) -> Any:
    """floor_div / mod of integers: computed in float32 (exact below 2^24) and cast back."""
    fa, fb = c.op("cast", [a], to="float32"), c.op("cast", [b], to="float32")
    return c.op("cast", [c.op(nn_name, [fa, fb])], to=c.spec(a).dtype)


def _binary(mil: str, nn_name: str, fn: np.ufunc) -> None:
    @OPS.op(mil)
    def convert(c: Any, op: Any) -> Any:
        a, b = c.arg(op, "x"), c.arg(op, "y")
        if both_const(a, b):
            with np.errstate(all="ignore"):
                r = fn(a, b)
            return r.astype(a.dtype) if a.dtype.kind in "iu" and mil != "real_div" else r
        folded = fold_symbolic(mil, a, b)
        if folded is not None:
            return folded
        a, b = c.value(a), c.value(b)
        c.check(c.spec(a).dtype == c.spec(b).dtype,
                f"x and y have different element types {c.spec(a).dtype} and {c.spec(b).dtype}")
        if nn_name in ("floor_div", "mod") and c.spec(a).dtype != "float32":
            return _int_div(c, nn_name, a, b)
        if nn_name == "div" and c.spec(a).dtype != "float32":
            return _int_div(c, "floor_div", a, b)
        return c.op(nn_name, [a, b])


def _predicate(mil: str, nn_name: str, fn: np.ufunc) -> None:
    """A comparison or logical op of x and y: folded with `fn` when both are constants."""
    @OPS.op(mil)
    def convert(c: Any, op: Any) -> Any:
        a, b = c.arg(op, "x"), c.arg(op, "y")
        if both_const(a, b):
            return fn(a, b)
        folded = fold_symbolic(mil, a, b)
        if folded is not None:
            return folded
        return c.op(nn_name, [c.value(a), c.value(b)])


for _mil, (_nn, _fn) in _BINARY.items():
    _binary(_mil, _nn, _fn)
for _mil, (_nn, _fn) in {**_COMPARE, **_LOGICAL}.items():
    _predicate(_mil, _nn, _fn)


@OPS.op("not_equal")
def convert_not_equal(c: Any, op: Any) -> Any:
    a, b = c.arg(op, "x"), c.arg(op, "y")
    if both_const(a, b):
        return np.not_equal(a, b)
    folded = fold_symbolic("not_equal", a, b)
    if folded is not None:
        return folded
    return c.op("logical_not", [c.op("equal", [c.value(a), c.value(b)])])


@OPS.op("logical_not")
def convert_logical_not(c: Any, op: Any) -> Any:
    a = c.arg(op, "x")
    return np.logical_not(a) if isinstance(a, np.ndarray) else c.op("logical_not", [a])


_UNARY = {"abs": "abs", "acos": "acos", "asin": "asin", "atan": "atan", "atanh": "atanh", "ceil": "ceil",
          "cos": "cos", "cosh": "cosh", "erf": "erf", "exp": "exp", "exp2": "exp2", "floor": "floor",
          "round": "round", "sign": "sign", "sin": "sin", "sinh": "sinh", "sqrt": "sqrt", "tan": "tan",
          "tanh": "tanh"}


def _unary(mil: str, nn_name: str) -> None:
    @OPS.op(mil)
    def convert(c: Any, op: Any) -> Any:
        x = c.x(op)
        if c.spec(x).dtype != "float32" and nn_name in ("abs", "sign"):
            return c.op(nn_name, [x])
        c.check(c.spec(x).dtype == "float32", f"x must be a float tensor, got {c.spec(x).dtype}")
        return c.op(nn_name, [x])


for _mil, _nn in _UNARY.items():
    _unary(_mil, _nn)


def _float_scalar(c: Any, value: float) -> Any:
    return c.const(np.asarray(value, dtype=np.float32))


@OPS.op("square")
def convert_square(c: Any, op: Any) -> Any:
    x = c.x(op)
    return c.op("mul", [x, x])


def _with_epsilon(c: Any, op: Any, default: float) -> Any:
    x = c.x(op)
    eps = float(c.scalar(op, "epsilon", default))
    return x if eps == 0 else c.op("add", [x, _float_scalar(c, eps)])


@OPS.op("inverse")
def convert_inverse(c: Any, op: Any) -> Any:
    """1 / (x + epsilon)"""
    return c.op("reciprocal", [_with_epsilon(c, op, 1e-4)])


@OPS.op("log")
def convert_log(c: Any, op: Any) -> Any:
    """log(x + epsilon)"""
    return c.op("log", [_with_epsilon(c, op, 1e-45)])


@OPS.op("rsqrt")
def convert_rsqrt(c: Any, op: Any) -> Any:
    """1 / sqrt(x + epsilon)"""
    return c.op("reciprocal", [c.op("sqrt", [_with_epsilon(c, op, 1e-12)])])


@OPS.op("clip")
def convert_clip(c: Any, op: Any) -> Any:
    """min(max(x, alpha), beta)"""
    x = c.x(op)
    lo, hi = float(c.scalar(op, "alpha")), float(c.scalar(op, "beta"))
    return c.op("min", [c.op("max", [x, _float_scalar(c, lo)]), _float_scalar(c, hi)])


@OPS.op("threshold")
def convert_threshold(c: Any, op: Any) -> Any:
    """max(x, alpha)"""
    return c.op("max", [c.x(op), _float_scalar(c, float(c.scalar(op, "alpha")))])


@OPS.op("cast")
def convert_cast(c: Any, op: Any) -> Any:
    dtype = str(c.val(op, "dtype"))
    c.check(dtype in DTYPE_NAMES, f"unknown cast dtype {dtype!r}")
    target = DTYPE_NAMES[dtype]
    x = c.arg(op, "x")
    if isinstance(x, SymArray):
        try:
            if target == "BOOL":
                return symbolic.compare("not_equal", x, np.zeros((), np.int32))
            return symbolic.make(symbolic.objects(x), numpy_dtype(target))
        except NotSymbolic:
            x = c.value(x)
    if isinstance(x, np.ndarray):
        if target == "BOOL":
            return x != 0
        if x.dtype.kind == "f" and target not in ("FLOAT16", "FLOAT32", "FLOAT64"):
            return np.trunc(x).astype(numpy_dtype(target))
        return x.astype(numpy_dtype(target))
    src = c.spec(x).dtype
    if target == "BOOL":
        zero = c.const(np.zeros((), dtype=np.dtype(src)))
        return c.op("logical_not", [c.op("equal", [x, zero])])
    to = nn_dtype(target)
    if to == src:
        return c.op("identity", [x])
    if src == "uint8" and to != "float32" and op.type == "cast":
        return c.op("cast", [x], to=to)
    return c.op("cast", [x], to=to)
