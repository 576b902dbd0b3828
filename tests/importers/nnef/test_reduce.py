"""NNEF reduce operations (§4.4) against float64 numpy; one compiled graph."""
import numpy as np
import pytest

from helpers import assert_accumulated, assert_exact
from tests.importers.nnef.util import graph_text, run, write_model

rng = np.random.default_rng(7)
X = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
X[1, 2, 0, :2] = X[1, 2, 0, 3]  # ties: the first index wins
x = X.astype(np.float64)
L = X > 0.3


def _arg(fn, axes):
    """Flat index within the reduced sub-volume (axes in increasing order), singleton axes kept."""
    keep = [i for i in range(x.ndim) if i not in axes]
    moved = x.transpose(keep + axes).reshape([x.shape[i] for i in keep] + [-1])
    idx = fn(moved, axis=-1)
    return idx.reshape([1 if i in axes else x.shape[i] for i in range(x.ndim)])


CASES = {
    "sum1": ("sum_reduce(x, axes = [1])", x.sum(axis=1, keepdims=True), 3),
    "sum023": ("sum_reduce(x, axes = [0, 2, 3])", x.sum(axis=(0, 2, 3), keepdims=True), 40),
    "sumn": ("sum_reduce(x, axes = [2, 3], normalize = true)", x.mean(axis=(2, 3), keepdims=True), 20),
    "mean": ("mean_reduce(x, axes = [3])", x.mean(axis=3, keepdims=True), 5),
    "max": ("max_reduce(x, axes = [1, 3])", x.max(axis=(1, 3), keepdims=True), 0),
    "min": ("min_reduce(x, axes = [0])", x.min(axis=0, keepdims=True), 0),
    "none": ("sum_reduce(x, axes = [])", x, 0),
}
INDEX = {
    "amax3": ("argmax_reduce(x, axes = [3])", _arg(np.argmax, [3])),
    "amin1": ("argmin_reduce(x, axes = [1])", _arg(np.argmin, [1])),
    "amax13": ("argmax_reduce(x, axes = [1, 3])", _arg(np.argmax, [1, 3])),
    "amin23": ("argmin_reduce(x, axes = [2, 3])", _arg(np.argmin, [2, 3])),
}
LOGICAL = {
    "all": ("all_reduce(gt(x, 0.3), axes = [3])", L.all(axis=3, keepdims=True)),
    "any": ("any_reduce(gt(x, 0.3), axes = [1, 2])", L.any(axis=(1, 2), keepdims=True)),
}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    exprs = {k: v[0] for group in (CASES, INDEX, LOGICAL) for k, v in group.items()}
    text = graph_text({"x": list(X.shape)}, list(exprs), "\n".join(f"{k} = {e};" for k, e in exprs.items()))
    return run(write_model(tmp_path_factory.mktemp("red"), text), {"x": X})


@pytest.mark.parametrize("name", sorted(CASES))
def test_value_reduce(results, name):
    _, expected, n = CASES[name]
    if n == 0:
        assert_exact(results[name], expected.astype(np.float32))
    else:
        assert_accumulated(results[name], expected, n)


@pytest.mark.parametrize("name", sorted(INDEX))
def test_index_reduce(results, name):
    got = results[name]
    assert got.dtype == np.int32
    assert_exact(got, INDEX[name][1])


@pytest.mark.parametrize("name", sorted(LOGICAL))
def test_logical_reduce(results, name):
    assert results[name].dtype == np.bool_
    assert_exact(results[name], LOGICAL[name][1].astype(np.bool_))
