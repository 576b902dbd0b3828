"""Shape arithmetic on dynamic dimensions (importers/mlprogram/symbolic.py): values known up to
the symbols fold exactly where the symbols' bounds decide them, and say NotSymbolic elsewhere."""
import numpy as np
import pytest

from estuary.base.dims import Dim, Unifier, unifying
from estuary.importers.mlprogram import symbolic
from estuary.importers.mlprogram.symbolic import NotSymbolic, SymArray

SEQ, B = Dim.symbol("seq", 1, 512), Dim.symbol("b", 1, 8)


def test_values_with_dims_are_symarrays_and_cancel_back_to_numpy():
    shape = symbolic.make([1, SEQ, 64], np.int32)
    assert isinstance(shape, SymArray) and shape.shape == (3,) and shape.symbols() == "seq=1..512"
    ratio = symbolic.elementwise(symbolic.exact_div, [shape, shape], np.float32)  # torch's expand: target / shape
    assert isinstance(ratio, np.ndarray) and ratio.dtype == np.float32 and ratio.tolist() == [1, 1, 1]
    assert symbolic.as_dims(shape.map(lambda v: v[1:]), "x") == [SEQ, 64]


def test_exact_division_resolves_reshape_placeholders():
    assert symbolic.exact_div(8 * SEQ, SEQ) == 8
    assert symbolic.exact_div(64 * SEQ * B, SEQ * B) == 64
    assert symbolic.exact_div(6 * SEQ + 12, 3) == 2 * SEQ + 4
    for a, b in ((SEQ, 2), (SEQ + 1, SEQ), (8, SEQ), (SEQ, 0)):
        with pytest.raises(NotSymbolic):
            symbolic.exact_div(a, b)
    assert symbolic.floor_div(SEQ + 1, 2) == (SEQ + 1) // 2


def test_comparisons_are_decided_by_bounds():
    assert symbolic.decide("equal", SEQ, -1) is False  # the torch frontend's "-1 means keep" test
    assert symbolic.decide("less_equal", SEQ, 512) is True
    assert symbolic.decide("greater", SEQ + B, 0) is True
    assert symbolic.decide("equal", SEQ - SEQ + 3, 3) is True
    with pytest.raises(NotSymbolic, match="depends on the dynamic dimensions"):
        symbolic.decide("equal", SEQ, 8)
    with pytest.raises(NotSymbolic):
        symbolic.add(SEQ, 0.5)  # a dimension plus a fraction is no dimension
    cond = symbolic.compare("equal", symbolic.make([1, SEQ, -1], np.int32), np.full(3, -1, np.int32))
    assert cond.tolist() == [False, False, True]


def test_unified_symbols_compare_equal():
    mask = Dim.symbol("mask", 1, 512)
    with unifying(Unifier({"mask": SEQ})):
        assert symbolic.decide("equal", mask, SEQ) is True
        assert symbolic.exact_div(mask * 4, SEQ) == 4


def test_slice_windows_clamp_as_python_where_the_bounds_decide():
    end = Dim.symbol("end", 1, 64)
    assert symbolic.slice_window(64, 0, end, 1, False, False) == (0, end)  # cache[:end]
    assert symbolic.slice_window(SEQ, 1, -1, 1, False, False) == (1, SEQ - 2)
    assert symbolic.slice_window(SEQ, 0, 0, 2, True, True) == (0, SEQ)
    assert symbolic.element_at(SEQ, -1) == SEQ - 1
    with pytest.raises(NotSymbolic):
        symbolic.slice_window(SEQ, 0, 8, 1, False, False)  # min(8, seq): the bounds do not decide it
    with pytest.raises(NotSymbolic):
        symbolic.element_at(SEQ, 3)  # seq may be 1
    assert symbolic.sized_window(SEQ, 0, -1) == (0, SEQ)
