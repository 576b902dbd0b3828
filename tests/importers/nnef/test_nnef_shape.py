"""NNEF tensor shape operations (§4.5) against numpy indexing; one compiled graph."""
import numpy as np
import pytest

from helpers import assert_exact
from tests.importers.nnef.util import graph_text, run, write_model

X = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5) / 7
Y = -np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
V = np.array([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0]], np.float32)


def _border(v, i, z, mode):
    """The spec's extended input (§4.3 Border Modes) for one index."""
    if 0 <= i < z:
        return v[i]
    if mode == "replicate":
        return v[0] if i < 0 else v[z - 1]
    if mode == "reflect":
        return v[-i] if i < 0 else v[z - 1 - (i - z + 1)]
    return v[-i - 1] if i < 0 else v[z - 1 - (i - z)]  # reflect-even


def _pad_formula(a, padding, mode):
    out = a
    for axis, (p, q) in enumerate(padding):
        z = out.shape[axis]
        idx = [_border(np.arange(z), i, z, mode) for i in range(-p, z + q)]
        out = np.take(out, idx, axis=axis)
    return out


CASES = {
    "r0": ("reshape(x, shape = [0, -1])", X.reshape(2, -1)),
    "r1": ("reshape(x, shape = [12], axis_start = 1, axis_count = 2)", X.reshape(2, 12, 5)),
    "r2": ("reshape(x, shape = [-1, 0, 5])", X.reshape(-1, 3, 5)),
    "sq": ("squeeze(reshape(x, shape = [2, 1, 60, 1]), axes = [1, 3])", X.reshape(2, 60)),
    "usq": ("unsqueeze(x, axes = [0, 3])", X.reshape(1, 2, 3, 1, 4, 5)),
    "tr": ("transpose(x, axes = [2, 0, 1])", X.transpose(2, 0, 1, 3)),
    "tr4": ("transpose(x, axes = [3, 1, 0, 2])", X.transpose(3, 1, 0, 2)),
    "cat": ("concat([x, y, x], axis = 3)", np.concatenate([X, Y, X], axis=3)),
    "stk": ("stack([x, y], axis = 2)", np.stack([X, Y], axis=2)),
    "sl0": ("slice(x, axes = [1, 3], begin = [1, -3], end = [0, -1])", X[:, 1:, :, -3:-1]),
    "sl1": ("slice(x, axes = [2], begin = [-4], end = [3])", X[:, :, 0:3]),
    "sl2": ("slice(x, axes = [3, 2], begin = [0, 3], end = [5, 0], stride = [2, -1])", X[:, :, 3:0:-1, 0:5:2]),
    "padc": ("pad(v, padding = [(1, 2), (0, 1)], value = 2.5)", np.pad(V, [(1, 2), (0, 1)], constant_values=2.5)),
    "padr": ("pad(v, padding = [(2, 2), (3, 1)], border = 'replicate')",
             _pad_formula(V, [(2, 2), (3, 1)], "replicate")),
    "padf": ("pad(v, padding = [(2, 1), (3, 2)], border = 'reflect')", _pad_formula(V, [(2, 1), (3, 2)], "reflect")),
    "pade": ("pad(v, padding = [(3, 1), (2, 4)], border = 'reflect-even')",
             _pad_formula(V, [(3, 1), (2, 4)], "reflect-even")),
    "padn": ("pad(v, padding = [(-1, 1), (2, -1)])", np.pad(V[1:, :-1], [(0, 1), (2, 0)])),
    "tile": ("tile(v, repeats = [2, 3])", np.tile(V, (2, 3))),
}
MULTI = {  # results of array-typed operations
    "[s0, s1, s2] = split(x, axis = 3, ratios = [2, 1, 2]);": {"s0": X[..., :2], "s1": X[..., 2:3], "s2": X[..., 3:]},
    "[u0, u1, u2] = unstack(x, axis = 1);": {f"u{i}": X[:, i] for i in range(3)},
    "[h0] = split(v, axis = 0, ratios = [1]);": {"h0": V},
}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    names = list(CASES) + [n for m in MULTI.values() for n in m]
    body = "\n".join(f"{k} = {e};" for k, (e, _) in CASES.items()) + "\n" + "\n".join(MULTI)
    text = graph_text({"x": list(X.shape), "y": list(Y.shape), "v": list(V.shape)}, names, body)
    return run(write_model(tmp_path_factory.mktemp("shape"), text), {"x": X, "y": Y, "v": V})


@pytest.mark.parametrize("name", sorted(CASES))
def test_shape_op(results, name):
    assert_exact(results[name], CASES[name][1])


def test_array_results(results):
    for expected in MULTI.values():
        for name, value in expected.items():
            assert_exact(results[name], value)


def test_pad_formula_matches_numpy_modes():
    """The oracle's border formula agrees with numpy's edge/reflect/symmetric (sanity of the oracle)."""
    for mode, np_mode in (("replicate", "edge"), ("reflect", "reflect"), ("reflect-even", "symmetric")):
        np.testing.assert_array_equal(_pad_formula(V, [(2, 1), (3, 2)], mode), np.pad(V, [(2, 1), (3, 2)], np_mode))
