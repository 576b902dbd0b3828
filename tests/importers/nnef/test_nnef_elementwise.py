"""NNEF element-wise operations (§4.2) against float64 numpy implementations of the spec's formulas.

All operations share one compiled graph per group (IREE compiles cost ~1 s each)."""
import numpy as np
import pytest

from helpers import assert_exact, assert_ulp
from tests.importers.nnef.util import graph_text, run, write_model

rng = np.random.default_rng(5)
A = rng.uniform(-0.9, 0.9, (4, 16)).astype(np.float32)  # signed, inside (-1, 1)
P = rng.uniform(0.5, 3.0, (4, 16)).astype(np.float32)  # positive
H = (np.arange(64, dtype=np.float32).reshape(4, 16) - 32) / 4  # quarter grid: exact halves for round
H[0, :8] = [-0.0, 0.0, -2.0, 0.49999997, -0.50000006, 8388609.0, -8388609.0, 16777215.0]
B = rng.uniform(0.5, 2.0, (4, 1)).astype(np.float32)  # broadcast over trailing axis (NNEF style)
_mag = np.geomspace(1e-6, 1.0, 32)
G = (np.concatenate([_mag, -_mag]) * 0.95).astype(np.float32).reshape(4, 16)  # tiny to ~1, both signs
W_ = (np.concatenate([np.geomspace(1e-6, 80, 32), -np.geomspace(1e-6, 80, 32)])).astype(np.float32).reshape(4, 16)
U = (1 + np.geomspace(1e-6, 1e4, 64)).astype(np.float32).reshape(4, 16)  # acosh: from just above 1

f64 = {k: v.astype(np.float64) for k, v in dict(a=A, p=P, h=H, b=B, g=G, w=W_, u=U).items()}
a, p, h, b, g, w, u = (f64[k] for k in "aphbgwu")

# name -> (NNEF expression, float64 oracle, allowed ULP)
UNARY = {
    "neg": ("neg(a)", -a, 0), "rcp": ("rcp(p)", 1 / p, 1), "exp": ("exp(a)", np.exp(a), 2),
    "log": ("log(p)", np.log(p), 2), "cos": ("cos(a)", np.cos(a), 2),
    "tanh": ("tanh(a)", np.tanh(a), 4), "abs": ("abs(h)", np.abs(h), 0),
    "floor": ("floor(h)", np.floor(h), 0), "ceil": ("ceil(h)", np.ceil(h), 0),
    "round": ("round(h)", np.floor(h + 0.5), 0), "sign": ("sign(h)", np.sign(h), 0),
    "copy": ("copy(a)", a, 0), "sqr": ("sqr(a)", a ** 2, 1), "sqrt": ("sqrt(p)", np.sqrt(p), 1),
    "rsqr": ("rsqr(p)", p ** -2.0, 2), "rsqrt": ("rsqrt(p)", p ** -0.5, 2),
    "log2": ("log2(p)", np.log(p) / np.log(2.0), 4),
    "add": ("add(a, b)", a + b, 0), "sub": ("sub(a, 0.25)", a - 0.25, 0), "mul": ("mul(a, b)", a * b, 0),
    "div": ("div(a, b)", a / b, 1), "pow": ("pow(p, a)", p ** a, 4),
    "min": ("min(a, h)", np.minimum(a, h), 0), "max": ("max(a, 0.0)", np.maximum(a, 0.0), 0),
    "clamp": ("clamp(h, -1.0, b)", np.maximum(np.minimum(h, b), -1.0), 0),
    "select": ("select(a > 0.0, p, h)", np.where(a > 0, p, h), 0),
}
# Hyperbolic and inverse trigonometric functions over tiny to large magnitudes (nn lowerings in
# passes/lowering/math.py), within a few ULP of float64.
HYPERBOLIC = {
    "sinh": ("sinh(w)", np.sinh(w), 4), "cosh": ("cosh(w)", np.cosh(w), 4), "asinh": ("asinh(w)", np.arcsinh(w), 4),
    "acosh": ("acosh(u)", np.arccosh(u), 4), "atanh": ("atanh(g)", np.arctanh(g), 4),
    "asin": ("asin(g)", np.arcsin(g), 4), "acos": ("acos(g)", np.arccos(g), 4),
}
# IREE's expansions of these (tosa.sin, math.tan, math.atan) are polynomial approximations that are
# tens of ULP off for small results: bounded by relative 4e-6 (about 32 ULP) or absolute 2e-7.
TRANSCENDENTAL = {
    "sin": ("sin(a)", np.sin(a)), "tan": ("tan(a)", np.tan(a)), "atan": ("atan(w)", np.arctan(w)),
}
LOGICAL = {
    "lt": ("lt(a, h)", a < h), "gt": ("gt(a, b)", a > b), "le": ("le(h, 0.5)", h <= 0.5),
    "ge": ("ge(h, a)", h >= a), "eq": ("eq(h, 1.0)", h == 1.0), "ne": ("ne(h, 1.0)", h != 1.0),
    "and": ("and(lt(a, 0.0), gt(h, -3.0))", (a < 0) & (h > -3)),
    "or": ("or(lt(a, 0.0), gt(h, 3.0))", (a < 0) | (h > 3)),
    "not": ("not(lt(a, 0.0))", ~(a < 0)),
}
INPUTS = {"a": [4, 16], "p": [4, 16], "h": [4, 16], "b": [4, 1], "g": [4, 16], "w": [4, 16], "u": [4, 16]}
FEEDS = {"a": A, "p": P, "h": H, "b": B, "g": G, "w": W_, "u": U}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    exprs = {**{k: v[0] for k, v in UNARY.items()}, **{k: v[0] for k, v in TRANSCENDENTAL.items()},
             **{k: v[0] for k, v in HYPERBOLIC.items()},
             **{k: v[0] for k, v in LOGICAL.items()}}
    names = [f"{k}_" for k in exprs]
    body = "\n".join(f"{k}_ = {e};" for k, e in exprs.items())
    path = write_model(tmp_path_factory.mktemp("ew"), graph_text(INPUTS, names, body))
    return run(path, FEEDS)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_arithmetic(results, name):
    _, expected, ulp = UNARY[name]
    got = results[f"{name}_"]
    assert got.dtype == np.float32
    if ulp == 0:
        assert_exact(got, expected.astype(np.float32))
    else:
        assert_ulp(got, expected, ulp)


@pytest.mark.parametrize("name", sorted(HYPERBOLIC))
def test_hyperbolic_and_inverse(results, name):
    _, expected, ulp = HYPERBOLIC[name]
    assert_ulp(results[f"{name}_"], expected, ulp)


@pytest.mark.parametrize("name", sorted(TRANSCENDENTAL))
def test_transcendental(results, name):
    expected = TRANSCENDENTAL[name][1]
    got = results[f"{name}_"].astype(np.float64)
    np.testing.assert_allclose(got, expected, rtol=4e-6, atol=2e-7)


@pytest.mark.parametrize("name", sorted(LOGICAL))
def test_logical(results, name):
    got = results[f"{name}_"]
    assert got.dtype == np.bool_  # a logical tensor is a numpy bool at the model boundary
    assert_exact(got, LOGICAL[name][1].astype(np.bool_))
