"""Further element-wise math ops (shared: append only)."""
import numpy as np


# --- Core ML sign, round, exp2, mod, floor_div: one compiled graph vs float64 numpy formulas
def test_coreml_sign_round_exp2_mod_floor_div():
    import estuary
    from estuary.dialects.core import TensorSpec
    from estuary.dialects.graph import Graph
    from helpers import assert_exact, assert_ulp

    x = np.array([-2.5, -1.5, -0.5, 0.0, 0.5, 1.5, 2.5, 3.7, -3.2, np.nan, -np.inf, 7.0], np.float32)
    a = np.array([[5.5, -5.5, 7.0, -7.0, 0.0, 3.0], [1e6 + 0.5, -2.25, 9.0, -9.0, 4.0, 6.0]], np.float32)
    b = np.array([[2.0, 2.0, -3.0, -3.0, 2.0, 0.0], [3.0, 1.5, 0.75, 4.0, -2.0, 0.0]], np.float32)
    g = Graph()
    xv, av, bv = g.input("x", TensorSpec(x.shape, "float32")), g.input("a", TensorSpec(a.shape, "float32")), \
        g.input("b", TensorSpec(b.shape, "float32"))
    outs = [(n, g.op(n, [xv])) for n in ("sign", "round", "exp2")]
    outs += [(n, g.op(n, [av, bv])) for n in ("mod", "floor_div")]
    got = estuary.load(estuary.compile(g.finish(outs))).run({"x": x, "a": a, "b": b})
    x64, a64, b64 = x.astype(np.float64), a.astype(np.float64), b.astype(np.float64)
    sign = np.where(x64 > 0, 1.0, np.where(x64 < 0, -1.0, x64))
    k = np.floor(x64)
    with np.errstate(all="ignore"):
        half_even = np.where(x64 - k == 0.5, np.where(k % 2 == 0, k, k + 1), np.floor(x64 + 0.5))
    half_even = np.where(np.isfinite(x64), half_even, x64)
    with np.errstate(all="ignore"):
        q = np.floor(a64 / b64)  # a / b exact enough in float64 for these operands
        mod = np.where(b64 == 0, np.nan, a64 - q * b64)
        fdiv = np.where(b64 == 0, a64 / b64, q)
        assert_exact(got["sign"], sign.astype(np.float32))
        assert_exact(got["round"], half_even.astype(np.float32))
        assert_ulp(got["exp2"], np.exp2(x64).astype(np.float32), 2)
    assert_exact(got["mod"], mod.astype(np.float32))
    assert_exact(got["floor_div"], fdiv.astype(np.float32))
