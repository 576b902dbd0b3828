"""Lowering rules: element-wise binary/unary/comparison/logical ops, where, cast, clamp.

TOSA covers signed/float arithmetic; where TOSA has no op, no unsigned variant or a different
rounding, a linalg.generic with arith/math bodies (`C.elementwise`) does the work.
"""
import math

import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import arith, tosa
from iree.compiler.dialects import math as mathd

from estuary.base import dtypes
from estuary.passes.lowering import common as C
from estuary.passes.lowering import lowering
from estuary.passes.lowering.pointwise import constant_array


def _is_float(spec):
    return spec.dtype in dtypes.FLOATS


def _unsigned(spec):
    return spec.dtype in dtypes.UNSIGNED


def _broadcast_operands(n):
    rank = n.out.rank
    return [C.expand_rank(v, rank) for v in n.inputs]


_INT_ARITH = {"add": arith.addi, "sub": arith.subi, "mul": arith.muli}


@lowering("add", "sub", "mul")
def lower_add_sub_mul(n):
    a, b = _broadcast_operands(n)
    out = C.storage(n.out)
    if not _is_float(n.out):
        # TOSA profiles allow only i32 here (IREE enforces them); a generic body keeps every
        # integer width and wraps like WebNN's integer arithmetic.
        return C.elementwise(n.out.shape, out.element_type, [a, b], _INT_ARITH[n.name])
    if n.name == "add":
        return tosa.add(out, a, b)
    if n.name == "sub":
        return tosa.sub(out, a, b)
    return C.mul(a, b, out)


def _int_div_body(unsigned, element):
    """Truncating division with 0 for division by zero and wrap for MIN / -1 (no traps)."""

    def body(x, y):
        zero = C.scalar_const(element, 0)
        one = C.scalar_const(element, 1)
        is_zero = arith.cmpi(arith.CmpIPredicate.eq, y, zero)
        safe = arith.select(is_zero, one, y)
        if unsigned:
            q = arith.divui(x, safe)
        else:
            minus_one = C.scalar_const(element, -1)
            is_m1 = arith.cmpi(arith.CmpIPredicate.eq, safe, minus_one)
            q = arith.select(is_m1, arith.subi(zero, x), arith.divsi(x, arith.select(is_m1, one, safe)))
        return arith.select(is_zero, zero, q)

    return body


@lowering("div")
def lower_div(n):
    a, b = _broadcast_operands(n)
    element = C.storage(n.out).element_type
    if _is_float(n.out):
        body = arith.divf
    else:
        body = _int_div_body(_unsigned(n.out), element)
    return C.elementwise(n.out.shape, element, [a, b], body)


@lowering("max", "min")
def lower_max_min(n):
    a, b = _broadcast_operands(n)
    element = C.storage(n.out).element_type
    big = n.name == "max"
    if _is_float(n.out):
        body = arith.maximumf if big else arith.minimumf  # NaN-propagating
    elif _unsigned(n.out):
        body = arith.maxui if big else arith.minui
    else:
        body = arith.maxsi if big else arith.minsi
    return C.elementwise(n.out.shape, element, [a, b], body)


@lowering("pow")
def lower_pow(n):
    a, b = _broadcast_operands(n)
    element = C.storage(n.out).element_type
    if _is_float(n.out):
        e = _splat_exponent(n.inputs[1])
        if e is not None:  # one exponent for every element: specialised
            if not n.options.gpu and e == int(e) and abs(e) > 2:
                n.run.results["keep_f64"] = True  # the products run in float64 (IREE demotes it otherwise)
            return C.elementwise(n.out.shape, element, [a], lambda x: _constant_power(x, e, n.options.gpu))
        return C.elementwise(n.out.shape, element, [a, b], _float_power)
    return C.elementwise(n.out.shape, element, [a, b], _integer_power(not _unsigned(n.out)))


def _float_power(x, e):
    """C's pow: |x| ** e, negated when x is negative (or -0) and e an odd integer, NaN when x is
    finite and negative and e not an integer, 1 for x ** 0 and (+-1) ** e. math.powf alone is
    exp(e * log(x)) in IREE: NaN for every x < 0. Its float32 error grows with |e * log x| (a few
    ULP at moderate powers, within WebNN's 32-ULP budget; float64 would cost several times more)."""
    t = x.type
    pred = arith.CmpFPredicate
    k = lambda v: C.scalar_const(t, v)  # noqa: E731
    ax = mathd.absf(x)
    r = mathd.powf(ax, e)
    unit = arith.ori(arith.cmpf(pred.OEQ, e, k(0.0)), arith.cmpf(pred.OEQ, ax, k(1.0)))
    r = arith.select(unit, k(1.0), r)
    negative = arith.cmpf(pred.OLT, mathd.copysign(k(1.0), x), k(0.0))
    integral = arith.cmpf(pred.OEQ, mathd.floor(e), e)
    half = arith.mulf(e, k(0.5))
    odd = arith.andi(integral, arith.cmpf(pred.ONE, mathd.floor(half), half))
    signed = arith.select(odd, arith.negf(r), r)
    fraction = arith.select(arith.cmpf(pred.OEQ, x, k(-math.inf)), r, k(math.nan))  # (-inf) ** 0.5 is inf
    return arith.select(negative, arith.select(integral, signed, fraction), r)


def _splat_exponent(value):
    """The exponent when `value` is a constant of one finite value that is not an integer of 2**31
    or more in magnitude (those keep the general form), else None."""
    array = constant_array(value)
    if array is None or not array.size:
        return None
    e = float(array.reshape(-1)[0])
    if not np.all(array == e) or not math.isfinite(e) or (e == int(e) and abs(e) >= 2 ** 31):
        return None
    return e


def _constant_power(x, e, gpu):
    """x ** e for a compile-time exponent (C's pow): an integer exponent multiplies out by squaring
    (beyond e = +-2 in float64 on the CPU, one rounding), the sign restored for odd e; otherwise
    |x| ** e, NaN for a finite negative x."""
    t = x.type
    k = lambda v: C.scalar_const(t, v)  # noqa: E731
    if e == int(e):
        n = abs(int(e))
        gpu = gpu or n <= 2  # one product (e = 2) is already correctly rounded in the input's type
        wide = ir.F64Type.get() if not gpu else t
        base = arith.extf(wide, mathd.absf(x)) if not gpu else mathd.absf(x)
        result = None
        while n:
            if n & 1:
                result = base if result is None else arith.mulf(result, base)
            n >>= 1
            if n:
                base = arith.mulf(base, base)
        if result is None:
            return k(1.0)  # x ** 0 is 1, NaN included
        if e < 0:
            result = arith.divf(C.scalar_const(wide, 1.0), result)
        if not gpu:
            result = arith.truncf(t, result)
        return mathd.copysign(result, x) if int(e) % 2 else result
    r = mathd.powf(mathd.absf(x), k(e))
    pred = arith.CmpFPredicate  # C's pow: NaN for a finite negative x; (-inf) ** e is inf or 0
    finite_negative = arith.andi(arith.cmpf(pred.OLT, x, k(0.0)), arith.cmpf(pred.ONE, x, k(-math.inf)))
    return arith.select(finite_negative, k(math.nan), r)


def _integer_power(signed):
    """x ** e in the integer type, by squaring over every bit of e (IREE cannot lower math.ipowi).

    Wraps on overflow like the type's multiplication. A negative exponent gives what the float
    power truncates to: 1 for x = 1, +-1 for x = -1, 0 otherwise (the reference's value for 0 ** -k
    is undefined)."""
    def body(x, e):
        t = x.type
        one, zero = C.scalar_const(t, 1), C.scalar_const(t, 0)
        ne, eq = arith.CmpIPredicate.ne, arith.CmpIPredicate.eq
        result, base = one, x
        width = ir.IntegerType(t).width
        for i in range(width):
            bit = arith.andi(arith.shrui(e, C.scalar_const(t, i)), one)
            result = arith.select(arith.cmpi(ne, bit, zero), arith.muli(result, base), result)
            if i + 1 < width:
                base = arith.muli(base, base)
        if not signed:
            return result
        minus_one = C.scalar_const(t, -1)
        odd = arith.cmpi(ne, arith.andi(e, one), zero)
        negative = arith.select(arith.cmpi(eq, x, one), one,
                                arith.select(arith.cmpi(eq, x, minus_one), arith.select(odd, minus_one, one), zero))
        return arith.select(arith.cmpi(arith.CmpIPredicate.slt, e, zero), negative, result)

    return body


_FCMP = {"equal": "OEQ", "not_equal": "UNE", "greater": "OGT", "greater_or_equal": "OGE", "lesser": "OLT", "lesser_or_equal": "OLE"}
_ICMP = {"equal": "eq", "not_equal": "ne", "greater": "gt", "greater_or_equal": "ge", "lesser": "lt", "lesser_or_equal": "le"}


def _to_u8(flag):
    return arith.extui(ir.IntegerType.get_signless(8), flag)


@lowering("equal", "not_equal", "greater", "greater_or_equal", "lesser", "lesser_or_equal")
def lower_compare(n):
    a, b = _broadcast_operands(n)
    spec = n.in_specs[0]
    if _is_float(spec):
        pred = getattr(arith.CmpFPredicate, _FCMP[n.name])
        body = lambda x, y: _to_u8(arith.cmpf(pred, x, y))  # noqa: E731
    else:
        key = _ICMP[n.name]
        if key not in ("eq", "ne"):
            key = ("u" if _unsigned(spec) else "s") + key
        pred = getattr(arith.CmpIPredicate, key)
        body = lambda x, y: _to_u8(arith.cmpi(pred, x, y))  # noqa: E731
    return C.elementwise(n.out.shape, ir.IntegerType.get_signless(8), [a, b], body)


def _nonzero(x):
    return arith.cmpi(arith.CmpIPredicate.ne, x, C.scalar_const(x.type, 0))


_LOGIC = {"logical_and": arith.andi, "logical_or": arith.ori, "logical_xor": arith.xori}


@lowering("logical_and", "logical_or", "logical_xor")
def lower_logical(n):
    a, b = _broadcast_operands(n)
    op = _LOGIC[n.name]
    body = lambda x, y: _to_u8(op(_nonzero(x), _nonzero(y)))  # noqa: E731
    return C.elementwise(n.out.shape, ir.IntegerType.get_signless(8), [a, b], body)


@lowering("logical_not")
def lower_logical_not(n):
    (a,) = n.inputs
    body = lambda x: _to_u8(arith.cmpi(arith.CmpIPredicate.eq, x, C.scalar_const(x.type, 0)))  # noqa: E731
    return C.elementwise(n.out.shape, ir.IntegerType.get_signless(8), [a], body)


_TOSA_UNARY = {"ceil": tosa.ceil, "cos": tosa.cos, "exp": tosa.exp, "floor": tosa.floor,
               "log": tosa.log, "reciprocal": tosa.reciprocal, "sin": tosa.sin}
_MATH_UNARY = {"sqrt": mathd.sqrt, "tan": mathd.tan}


@lowering(*_TOSA_UNARY)
def lower_tosa_unary(n):
    return _TOSA_UNARY[n.name](C.storage(n.out), n.inputs[0])


@lowering(*_MATH_UNARY)
def lower_math_unary(n):
    element = C.storage(n.out).element_type
    return C.elementwise(n.out.shape, element, [n.inputs[0]], _MATH_UNARY[n.name])


@lowering("is_nan", "is_infinite")
def lower_float_class(n):
    element = C.element_of(n.inputs[0])

    def body(x):
        if n.name == "is_nan":
            return _to_u8(arith.cmpf(arith.CmpFPredicate.UNO, x, x))
        return _to_u8(arith.cmpf(arith.CmpFPredicate.OEQ, mathd.absf(x), C.scalar_const(element, math.inf)))

    return C.elementwise(n.out.shape, ir.IntegerType.get_signless(8), [n.inputs[0]], body)


@lowering("erf")
def lower_erf(n):
    return tosa.erf(C.storage(n.out), n.inputs[0])


@lowering("abs")
def lower_abs(n):
    if _is_float(n.out) or n.out.dtype == "int32":
        return tosa.abs(C.storage(n.out), n.inputs[0])
    element = C.storage(n.out).element_type
    return C.elementwise(n.out.shape, element, [n.inputs[0]], mathd.absi)


@lowering("neg")
def lower_neg(n):
    element = C.storage(n.out).element_type
    if _is_float(n.out):
        return C.elementwise(n.out.shape, element, [n.inputs[0]], arith.negf)
    return C.elementwise(n.out.shape, element, [n.inputs[0]],
                         lambda x: arith.subi(C.scalar_const(element, 0), x))


@lowering("identity")
def lower_identity(n):
    return n.inputs[0]


def _float_to_int_body(src_element, dst_element, dst_dtype):
    """Truncate toward zero, saturate to the target range, NaN -> 0 (WebNN cast)."""
    info = np.iinfo(dtypes.to_numpy(dst_dtype))
    unsigned = dst_dtype in dtypes.UNSIGNED

    def body(x):
        f64 = ir.F64Type.get()
        wide = arith.extf(f64, x) if not isinstance(src_element, ir.F64Type) else x
        lo = C.scalar_const(f64, float(info.min))
        hi_value = float(info.max)
        hi = C.scalar_const(f64, hi_value)
        clipped = arith.minimumf(arith.maximumf(wide, lo), hi)
        is_nan = arith.cmpf(arith.CmpFPredicate.UNO, wide, wide)
        clipped = arith.select(is_nan, C.scalar_const(f64, 0.0), clipped)
        # 2^63 / 2^64 are not representable: saturate explicitly at the top.
        at_top = arith.cmpf(arith.CmpFPredicate.OGE, clipped, hi)
        conv = arith.fptoui(dst_element, clipped) if unsigned else arith.fptosi(dst_element, clipped)
        return arith.select(at_top, C.scalar_const(dst_element, int(info.max)), conv)

    return body


@lowering("cast")
def lower_cast(n):
    src, dst = n.in_specs[0], n.out
    (x,) = n.inputs
    if src.dtype == dst.dtype:
        return x
    src_el = C.element_of(x)
    dst_el = C.storage(dst).element_type
    if _is_float(src) and _is_float(dst):
        body = (lambda v: arith.extf(dst_el, v)) if dtypes.bits(dst.dtype) > dtypes.bits(src.dtype) \
            else (lambda v: arith.truncf(dst_el, v))
    elif _is_float(src):
        body = _float_to_int_body(src_el, dst_el, dst.dtype)
    elif _is_float(dst):
        body = (lambda v: arith.uitofp(dst_el, v)) if _unsigned(src) else (lambda v: arith.sitofp(dst_el, v))
    else:
        sw, dw = dtypes.bits(src.dtype), dtypes.bits(dst.dtype)
        if dw == sw:
            body = None
        elif dw < sw:
            body = lambda v: arith.trunci(dst_el, v)  # noqa: E731
        else:
            body = (lambda v: arith.extui(dst_el, v)) if _unsigned(src) else (lambda v: arith.extsi(dst_el, v))
        if body is None:
            return x  # same width: only the interpretation of the bits changes
    return C.elementwise(dst.shape, dst_el, [x], body)


@lowering("clamp")
def lower_clamp(n):
    (x,) = n.inputs
    lo, hi = n.attrs["min_value"], n.attrs["max_value"]
    element = C.element_of(x)
    if _is_float(n.out):
        # max/min via maximumf/minimumf keep NaN inputs NaN.
        def body(v):
            r = v
            if lo != -math.inf:
                r = arith.maximumf(r, C.scalar_const(element, lo))
            if hi != math.inf:
                r = arith.minimumf(r, C.scalar_const(element, hi))
            return r
    else:
        info = np.iinfo(dtypes.to_numpy(n.out.dtype))
        lo_i = int(max(lo, info.min)) if lo != -math.inf else int(info.min)
        hi_i = int(min(hi, info.max)) if hi != math.inf else int(info.max)
        mx, mn = (arith.maxui, arith.minui) if _unsigned(n.out) else (arith.maxsi, arith.minsi)
        body = lambda v: mn(mx(v, C.scalar_const(element, lo_i)), C.scalar_const(element, hi_i))  # noqa: E731
    return C.elementwise(n.out.shape, element, [x], body)


@lowering("where")
def lower_where(n):
    rank = n.out.rank
    c, t, f = [C.expand_rank(v, rank) for v in n.inputs]

    def body(cv, tv, fv):
        return arith.select(_nonzero(cv), tv, fv)

    return C.elementwise(n.out.shape, C.storage(n.out).element_type, [c, t, f], body)
