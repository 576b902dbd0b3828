"""Symbolic dimensions (estuary.base.dims): arithmetic agrees with Python's integers for every
symbol value, the text form round-trips, bounds hold, and unification binds what it should."""
import random

import pytest

from estuary.base import dims as D

SEQ = D.Dim.symbol("seq", 1, 512)
PAST = D.Dim.symbol("past", 1, 448)
BOUNDS = {"seq": SEQ.sym, "past": PAST.sym}


def _random_expr(rng, depth=3):
    """(Dim-or-int expression, the same as a Python function of (seq, past))."""
    if depth == 0 or rng.random() < 0.3:
        choice = rng.randrange(3)
        if choice == 0:
            return SEQ, lambda s, p: s
        if choice == 1:
            return PAST, lambda s, p: p
        k = rng.randint(-5, 9)
        return k, lambda s, p, k=k: k
    a, fa = _random_expr(rng, depth - 1)
    op = rng.choice(["+", "-", "*", "//", "%"])
    if op in ("//", "%"):
        k = rng.randint(1, 7)
        if not isinstance(a, D.Dim):
            return a, fa
        if op == "//":
            return a // k, lambda s, p: fa(s, p) // k
        return a % k, lambda s, p: fa(s, p) % k
    b, fb = _random_expr(rng, depth - 1)
    if op == "+":
        return a + b, lambda s, p: fa(s, p) + fb(s, p)
    if op == "-":
        return a - b, lambda s, p: fa(s, p) - fb(s, p)
    return a * b, lambda s, p: fa(s, p) * fb(s, p)


@pytest.mark.parametrize("seed", range(40))
def test_arithmetic_matches_python_integers(seed):
    rng = random.Random(seed)
    expr, fn = _random_expr(rng)
    text = str(expr)
    again = D.parse(text, BOUNDS) if isinstance(expr, D.Dim) else int(text)
    assert again == expr, text
    values = [D.evaluate(expr, {"seq": s, "past": p}) for s in (1, 2, 3, 7, 64, 512) for p in (1, 5, 448)]
    assert values == [fn(s, p) for s in (1, 2, 3, 7, 64, 512) for p in (1, 5, 448)], text
    if isinstance(expr, D.Dim):
        assert expr.lower() <= min(values) and max(values) <= expr.upper(), text


def test_canonical_forms_compare_equal():
    assert SEQ + 1 - 1 == SEQ and hash(SEQ + 0) == hash(SEQ)
    assert (8 * SEQ) // 8 == SEQ
    assert (SEQ * 8) // 2 == 4 * SEQ
    assert SEQ + PAST == PAST + SEQ
    assert 2 * SEQ - SEQ - SEQ == 0 and isinstance(2 * SEQ - SEQ - SEQ, int)
    assert (SEQ - 1) // 2 + 1 == (SEQ + 1) // 2


def test_shape_text_round_trip():
    shape = [1, SEQ, (SEQ - 3) // 2 + 1, SEQ + PAST, 64]
    text = D.shape_text(shape)
    assert text == "1, seq, (seq + 1)//2 - 1, past + seq, 64; past=1..448, seq=1..512"
    assert D.parse_shape(text) == shape


def test_no_order_or_int_for_a_dynamic_dimension():
    with pytest.raises(D.DimError):
        int(SEQ)
    with pytest.raises(D.DimError):
        SEQ < 3  # noqa: B015
    with pytest.raises(D.DimError):
        SEQ // SEQ
    with pytest.raises(D.DimError):
        D.Dim.symbol("not a name")
    with pytest.raises(D.DimError):
        D.Dim.symbol("n", 5, 4)


def test_unify_binds_the_second_symbol_to_the_first():
    u = D.Unifier()
    mask = D.Dim.symbol("mask_1", 1, 64)
    assert u.unify(SEQ, mask) == SEQ
    assert u.resolve(mask + 1) == SEQ + 1
    assert D.Unifier.from_text(u.text()).bindings == u.bindings
    assert u.unify(SEQ, 4) == 4 and u.resolve(mask) == 4
    assert u.unify(SEQ, 5) is None  # already 4


def test_unify_refuses_ranges_that_do_not_meet():
    u = D.Unifier()
    assert u.unify(D.Dim.symbol("a", 1, 8), D.Dim.symbol("b", 9, 16)) is None
    assert u.unify(D.Dim.symbol("a", 1, 8), 9) is None


def test_same_needs_a_unifier_for_different_symbols():
    assert D.same(SEQ, SEQ) == SEQ
    assert D.same(SEQ, PAST) is None
    with D.unifying(D.Unifier()) as u:
        assert D.same(SEQ, PAST) == SEQ and "past" in u.bindings
