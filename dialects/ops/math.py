"""Declarations: Further element-wise math ops (shared: append only, one declaration per op)."""


# --- NNEF (§4.2.1 unary extensions): inverse trigonometric and hyperbolic functions (float only)
import numpy as _np  # noqa: E402

from estuary.base import dtypes as _dtypes  # noqa: E402
from estuary.dialects.core import dtype_in as _dtype_in, nn_op as _nn_op  # noqa: E402


def _float_unary(input):
    _dtype_in(input, _dtypes.FLOATS)
    return input


for _name, _fn in {"sinh": _np.sinh, "cosh": _np.cosh, "asin": _np.arcsin, "acos": _np.arccos,
                   "atan": _np.arctan, "asinh": _np.arcsinh, "acosh": _np.arccosh, "atanh": _np.arctanh}.items():
    def _ref(x, _fn=_fn):
        with _np.errstate(all="ignore"):
            return _fn(x).astype(x.dtype)

    _nn_op(_name, ["input"], reference=_ref, dynamic=True)(_float_unary)


# --- Core ML (sign, round, exp2, modBroadcastable, floorDivBroadcastable): float element-wise ops
from estuary.dialects.core import TensorSpec as _TensorSpec, broadcast_shapes as _broadcast_shapes  # noqa: E402
from estuary.dialects.core import ReferenceFn as _ReferenceFn, same_dtype as _same_dtype  # noqa: E402


def _round_half_even(x):
    return _np.round(x)  # numpy rounds halves to even


def _ref64(fn):
    def ref(*xs):
        with _np.errstate(all="ignore"):
            return _np.asarray(fn(*[x.astype(_np.float64) for x in xs])).astype(xs[0].dtype)
    return ref


def _floor_mod(a, b):
    """a - floor(a / b) * b computed exactly (fmod, then shifted into b's sign); b == 0 gives NaN."""
    r = _np.fmod(a, b)
    return _np.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)


_IN_FLOAT64: dict[str, _ReferenceFn] = {"round": _round_half_even, "exp2": _np.exp2}
for _name, _rfn in _IN_FLOAT64.items():
    _nn_op(_name, ["input"], reference=_ref64(_rfn), dynamic=True)(_float_unary)


@_nn_op("sign", ["input"], reference=lambda x: _np.sign(x).astype(x.dtype), dynamic=True)
def _sign(input):
    """-1, 0 or 1 by the input's sign; NaN and signed zeros pass through (floats and signed ints: WebNN sign)."""
    _dtype_in(input, ("float32", "float16", "int32", "int64", "int8"))
    return input


def _float_binary(a, b):
    """Float operands of one data type, broadcast bidirectionally."""
    _dtype_in(a, _dtypes.FLOATS, "a")
    _same_dtype(a, b, what="a and b")
    return _TensorSpec(_broadcast_shapes(a.shape, b.shape), a.dtype)


def _mod_ref(a, b):
    with _np.errstate(all="ignore"):
        return _floor_mod(a, b).astype(a.dtype)  # in the operands' own precision, like the lowering


def _floor_div_ref(a, b):
    with _np.errstate(all="ignore"):
        return _np.floor_divide(a, b).astype(a.dtype)


_nn_op("mod", ["a", "b"], reference=_mod_ref, dynamic=True)(_float_binary)  # Python-style, sign of b
_nn_op("floor_div", ["a", "b"], reference=_floor_div_ref, dynamic=True)(_float_binary)  # floor(a / b)
