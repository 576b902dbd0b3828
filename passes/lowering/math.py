"""Lowering rules: Further element-wise math ops (shared: append only, one declaration per op)."""


# --- NNEF (§4.2.1 unary extensions): math-dialect functions applied element by element
from iree.compiler.dialects import math as _mathd  # noqa: E402

from estuary.passes.lowering import common as _C, lowering as _lowering  # noqa: E402

from iree.compiler.dialects import arith as _ar  # noqa: E402


def _k(x, v):
    return _C.scalar_const(x.type, v)


def _lt(a, b):
    return _ar.cmpf(_ar.CmpFPredicate.OLT, a, b)


# IREE's own expansions of sinh/asinh/atanh/acosh lose all relative accuracy near 0 (or 1) and
# overflow for large arguments; these forms stay within a few ULP over the whole float range.
def _sinh(x, gpu):  # |x| < 1: e = expm1(x), sinh = (e + e / (e + 1)) / 2
    e = _mathd.expm1(x)
    small = _ar.mulf(_ar.addf(e, _ar.divf(e, _ar.addf(e, _k(x, 1.0)))), _k(x, 0.5))
    return _ar.select(_lt(_mathd.absf(x), _k(x, 1.0)), small, _mathd.sinh(x))


def _asinh(x, gpu):  # |x| < 1: log1p(|x| + x^2 / (1 + sqrt(1 + x^2))); else log|x| + log1p(sqrt(1 + 1/x^2))
    ax, x2, one = _mathd.absf(x), _ar.mulf(x, x), _k(x, 1.0)
    small = _C.log1p(_ar.addf(ax, _ar.divf(x2, _ar.addf(_mathd.sqrt(_ar.addf(x2, one)), one))), gpu)
    big = _ar.addf(_mathd.log(ax), _C.log1p(_mathd.sqrt(_ar.addf(_ar.divf(one, x2), one)), gpu))
    return _mathd.copysign(_ar.select(_lt(ax, one), small, big), x)


def _atanh(x, gpu):  # copysign(log1p(2|x| / (1 - |x|)) / 2, x)
    ax = _mathd.absf(x)
    q = _ar.divf(_ar.mulf(ax, _k(x, 2.0)), _ar.subf(_k(x, 1.0), ax))
    return _mathd.copysign(_ar.mulf(_C.log1p(q, gpu), _k(x, 0.5)), x)


def _acosh(x, gpu):  # x < 2: log1p(t + sqrt(t (t + 2))), t = x - 1; else log x + log1p(sqrt(1 - 1/x^2))
    one = _k(x, 1.0)
    t = _ar.subf(x, one)
    small = _C.log1p(_ar.addf(t, _mathd.sqrt(_ar.mulf(t, _ar.addf(t, _k(x, 2.0))))), gpu)
    big = _ar.addf(_mathd.log(x), _C.log1p(_mathd.sqrt(_ar.subf(one, _ar.divf(one, _ar.mulf(x, x)))), gpu))
    return _ar.select(_lt(x, _k(x, 2.0)), small, big)


# each form takes (x, gpu): the GPU targets get a log1p of their own (common.log1p)
_NNEF_UNARY = {"sinh": _sinh, "cosh": lambda x, gpu: _mathd.cosh(x), "asin": lambda x, gpu: _mathd.asin(x),
               "acos": lambda x, gpu: _mathd.acos(x), "atan": lambda x, gpu: _mathd.atan(x), "asinh": _asinh,
               "acosh": _acosh, "atanh": _atanh}


@_lowering(*_NNEF_UNARY)
def lower_nnef_unary(n):
    return _C.elementwise(n.out.shape, _C.storage(n.out).element_type, [n.inputs[0]],
                        lambda x: _NNEF_UNARY[n.name](x, n.options.gpu))


# --- Core ML sign, round (half to even), exp2, mod (sign of the divisor), floor_div
from iree.compiler import ir as _ir  # noqa: E402
from iree.compiler.dialects import arith as _arith  # noqa: E402


def _sign_body(x):
    if isinstance(x.type, _ir.IntegerType):  # signed integers: WebNN sign
        zero, one, minus_one = (_C.scalar_const(x.type, v) for v in (0, 1, -1))
        neg = _arith.select(_arith.cmpi(_arith.CmpIPredicate.slt, x, zero), minus_one, x)
        return _arith.select(_arith.cmpi(_arith.CmpIPredicate.sgt, x, zero), one, neg)
    zero = _arith.constant(x.type, 0.0)
    one = _arith.constant(x.type, 1.0)
    neg = _arith.select(_arith.cmpf(_arith.CmpFPredicate.OLT, x, zero), _arith.constant(x.type, -1.0), x)
    return _arith.select(_arith.cmpf(_arith.CmpFPredicate.OGT, x, zero), one, neg)  # 0 and NaN pass through


_COREML_UNARY = {"sign": _sign_body, "round": _mathd.roundeven, "exp2": _mathd.exp2}


@_lowering(*_COREML_UNARY)
def lower_coreml_unary(n):
    return _C.elementwise(n.out.shape, _C.storage(n.out).element_type, [n.inputs[0]], _COREML_UNARY[n.name])


def _fix_mod(r, b):
    """Shift a non-zero fmod remainder whose sign differs from b's by b; returns (mod, shifted?)."""
    zero = _arith.constant(r.type, 0.0)
    nonzero = _arith.cmpf(_arith.CmpFPredicate.UNE, r, zero)
    differ = _arith.xori(_arith.cmpf(_arith.CmpFPredicate.OLT, r, zero), _arith.cmpf(_arith.CmpFPredicate.OLT, b, zero))
    shift = _arith.andi(nonzero, differ)
    return _arith.select(shift, _arith.addf(r, b), r), shift


def _mod_body(a, b):
    return _fix_mod(_arith.remf(a, b), b)[0]


def _floor_div_body(a, b):
    """numpy's floor_divide: ((a - fmod(a, b)) / b), minus one when the remainder was shifted,
    snapped to the nearest integer; b == 0 gives a / b (inf or NaN)."""
    r = _arith.remf(a, b)
    _, shift = _fix_mod(r, b)
    div = _arith.divf(_arith.subf(a, r), b)
    div = _arith.select(shift, _arith.subf(div, _arith.constant(a.type, 1.0)), div)
    q = _mathd.roundeven(div)
    zero = _arith.constant(a.type, 0.0)
    return _arith.select(_arith.cmpf(_arith.CmpFPredicate.OEQ, b, zero), _arith.divf(a, b), q)


_COREML_BINARY = {"mod": _mod_body, "floor_div": _floor_div_body}


@_lowering(*_COREML_BINARY)
def lower_coreml_binary(n):
    return _C.elementwise(n.out.shape, _C.storage(n.out).element_type, list(n.inputs), _COREML_BINARY[n.name])
