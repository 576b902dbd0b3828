"""Lowering rules: activation functions (TOSA where it has the op, linalg.generic bodies otherwise)."""
import math

import numpy as np

from iree.compiler import ir
from iree.compiler.dialects import arith, tosa
from iree.compiler.dialects import math as mathd

from estuary.passes.lowering import common as C
from estuary.passes.lowering import lowering


def _generic(n, body, inputs=None):
    """Element-wise body; float16 data is computed in float32 and rounded once at the end."""
    out = C.storage(n.out)
    element = out.element_type
    if n.out.dtype == "float16":
        f32 = ir.F32Type.get()

        def wide(*xs, _body=body):
            return arith.truncf(element, _body(*[arith.extf(f32, x) for x in xs]))
        return C.elementwise(n.out.shape, element, inputs or [n.inputs[0]], wide)
    return C.elementwise(n.out.shape, element, inputs or [n.inputs[0]], body)


def _k(x, value):
    return C.scalar_const(x.type, value)


def _option(n, key):
    """A float option cast to the input's data type first, as the spec's steps do."""
    with np.errstate(over="ignore"):
        return float(np.dtype(n.out.dtype).type(n.attrs[key]))


def _expm1(x):
    """exp(x) - 1 without cancellation: a Taylor series for |x| < 0.25 (truncation < 2e-9 relative)."""
    series = _k(x, 1.0)
    for k in (7, 6, 5, 4, 3, 2):
        series = arith.addf(_k(x, 1.0), arith.mulf(arith.divf(x, _k(x, float(k))), series))
    small = arith.cmpf(arith.CmpFPredicate.OLT, mathd.absf(x), _k(x, 0.25))
    return arith.select(small, arith.mulf(x, series), arith.subf(mathd.exp(x), _k(x, 1.0)))


# Chebyshev fit of erfc (Numerical Recipes' erfcc, fractional error < 1.2e-7 for z >= 0)
_ERFC = (-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807, -1.13520398,
         1.48851587, -0.82215223, 0.17087277)


def _half_square(x):
    """0.5 * x * x as hi + lo, exactly (Dekker's product with a Veltkamp split; needs |x| <= 2^100)."""
    c = arith.mulf(x, _k(x, 4097.0))
    xh = arith.subf(c, arith.subf(c, x))
    xl = arith.subf(x, xh)
    p = arith.mulf(x, x)
    err = arith.addf(arith.subf(arith.mulf(xh, xh), p), arith.mulf(_k(x, 2.0), arith.mulf(xh, xl)))
    err = arith.addf(err, arith.mulf(xl, xl))
    return arith.mulf(p, _k(x, 0.5)), arith.mulf(err, _k(x, 0.5))


def _erfc_neg(x):
    """erfc(-x / sqrt 2) for x <= 0 without the cancellation of 1 - erf.

    exp(-z*z) turns the rounding of z*z into a relative error of ~z*z ULP, so z*z = x*x/2 is formed
    exactly (hi + lo) and exp(-hi) is taken of an exact operand."""
    x = arith.maximumf(x, _k(x, -20.0))  # erfc(14.1) underflows float32 already; keeps the split finite
    z = arith.mulf(x, _k(x, -1 / math.sqrt(2)))
    t = arith.divf(_k(z, 1.0), arith.addf(_k(z, 1.0), arith.mulf(_k(z, 0.5), z)))
    poly = _k(z, _ERFC[-1])
    for c in reversed(_ERFC[:-1]):
        poly = arith.addf(_k(z, c), arith.mulf(t, poly))
    hi, lo = _half_square(x)
    return arith.mulf(arith.mulf(t, mathd.exp(arith.subf(poly, lo))), mathd.exp(arith.negf(hi)))


@lowering("sigmoid")
def lower_sigmoid(n):
    # 1 / (1 + exp(-x)): TOSA's sigmoid approximation is tens of ULP off
    return _generic(n, lambda x: arith.divf(_k(x, 1.0), arith.addf(_k(x, 1.0), mathd.exp(arith.negf(x)))))


@lowering("tanh")
def lower_tanh(n):
    return tosa.tanh(C.storage(n.out), n.inputs[0])


@lowering("relu")
def lower_relu(n):
    if n.out.dtype.startswith("float"):
        return _generic(n, lambda x: arith.maximumf(x, _k(x, 0.0)))  # NaN stays NaN
    return _generic(n, lambda x: arith.maxsi(x, _k(x, 0)))


@lowering("prelu")
def lower_prelu(n):
    x, slope = [C.expand_rank(v, n.out.rank) for v in n.inputs]
    if n.out.dtype.startswith("float"):
        def body(v, s):
            zero = _k(v, 0.0)
            return arith.addf(arith.maximumf(v, zero), arith.mulf(s, arith.minimumf(v, zero)))
    else:
        def body(v, s):
            zero = _k(v, 0)
            return arith.addi(arith.maxsi(v, zero), arith.muli(s, arith.minsi(v, zero)))
    return _generic(n, body, [x, slope])


@lowering("leaky_relu")
def lower_leaky_relu(n):
    alpha = _option(n, "alpha")

    def body(x):
        neg = arith.cmpf(arith.CmpFPredicate.OLT, x, _k(x, 0.0))
        return arith.select(neg, arith.mulf(x, _k(x, alpha)), x)
    return _generic(n, body)


@lowering("elu")
def lower_elu(n):
    alpha = _option(n, "alpha")

    def body(x):
        pos = arith.cmpf(arith.CmpFPredicate.OGT, x, _k(x, 0.0))
        return arith.select(pos, x, arith.mulf(_k(x, alpha), _expm1(x)))
    return _generic(n, body)


@lowering("gelu")
def lower_gelu(n):
    def body(x):  # 0.5 * x * (1 + erf(x / sqrt 2)); erfc form for x < 0 (no cancellation)
        z = arith.mulf(x, _k(x, 1 / math.sqrt(2)))
        pos = arith.addf(_k(x, 1.0), mathd.erf(z))
        neg = _erfc_neg(x)
        half_x = arith.mulf(x, _k(x, 0.5))
        return arith.mulf(half_x, arith.select(arith.cmpf(arith.CmpFPredicate.OGE, x, _k(x, 0.0)), pos, neg))
    return _generic(n, body)


def _clip(x, lo, hi):
    return arith.minimumf(arith.maximumf(x, _k(x, lo)), _k(x, hi))


@lowering("hard_sigmoid")
def lower_hard_sigmoid(n):
    a, b = _option(n, "alpha"), _option(n, "beta")
    return _generic(n, lambda x: _clip(arith.addf(arith.mulf(x, _k(x, a)), _k(x, b)), 0.0, 1.0))


@lowering("hard_swish")
def lower_hard_swish(n):
    def body(x):
        gate = _clip(arith.addf(x, _k(x, 3.0)), 0.0, 6.0)
        return arith.divf(arith.mulf(x, gate), _k(x, 6.0))
    return _generic(n, body)


@lowering("softplus")
def lower_softplus(n):
    def body(x):  # max(x, 0) + log1p(exp(-|x|)): no overflow for large |x|
        t = C.log1p(mathd.exp(arith.negf(mathd.absf(x))), n.options.gpu)
        return arith.addf(arith.maximumf(x, _k(x, 0.0)), t)
    return _generic(n, body)


@lowering("softsign")
def lower_softsign(n):
    return _generic(n, lambda x: arith.divf(x, arith.addf(_k(x, 1.0), mathd.absf(x))))


@lowering("linear")
def lower_linear(n):
    a, b = _option(n, "alpha"), _option(n, "beta")
    return _generic(n, lambda x: arith.addf(arith.mulf(x, _k(x, a)), _k(x, b)))


@lowering("softmax")
def lower_softmax(n):
    """exp(x - max) / sum(exp(x - max)) along the axis; float16 data is computed in float32."""
    axis = n.attrs["axis"]
    out = C.storage(n.out)
    t = C.tensor_type(n.out.shape, ir.F32Type.get())
    x = n.inputs[0] if n.out.dtype == "float32" else tosa.cast(t, n.inputs[0])
    keep = list(n.out.shape)
    keep[axis] = 1
    kt = C.tensor_type(keep, t.element_type)
    m = tosa.reduce_max(x, axis, results=[kt])
    e = tosa.exp(t, tosa.sub(t, x, m))
    s = tosa.reduce_sum(e, axis, results=[kt])
    y = C.elementwise(n.out.shape, t.element_type, [e, s], arith.divf)
    return y if n.out.dtype == "float32" else tosa.cast(out, y)
