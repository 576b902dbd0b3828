"""Core ML random layers: shapes, dtypes, determinism for a fixed seed and distribution statistics.
Values cannot match Apple's generator (the spec does not define one): only distributions are tested."""
import numpy as np
import pytest

pytest.importorskip("coremltools")
from coremltools.models import datatypes  # noqa: E402
from coremltools.models.neural_network import NeuralNetworkBuilder  # noqa: E402

from tests.importers.coreml.util import run, save  # noqa: E402
from estuary.base.errors import EstuaryError  # noqa: E402


def builder(inputs, outputs):
    return NeuralNetworkBuilder([(n, datatypes.Array(*s)) for n, s in inputs], [(n, None) for n in outputs],
                                disable_rank5_shape_mapping=True)


def test_random_layers(tmp_path):
    like = np.zeros((50, 40), np.float32)
    logits = np.log(np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]], np.float32))
    probs = np.array([[0.6, 0.0, 0.4]], np.float32)
    outs = ["nl", "ns", "nd", "ul", "us", "ud", "bl", "bs", "bd", "cat", "catp", "nl_same", "ns_other"]
    b = builder([("like", like.shape), ("logits", logits.shape), ("probs", probs.shape)], outs)
    shape = np.array([40, 50], np.float32)
    b.add_load_constant_nd("shape", "shape", shape, shape.shape)
    b.add_random_normal_like("nl", "like", "nl", mean=1.0, stddev=2.0, seed=5)
    b.add_random_normal_like("nl_same", "like", "nl_same", mean=1.0, stddev=2.0, seed=5)
    b.add_random_normal_static("ns", "ns", output_shape=[2000], mean=-1.0, stddev=0.5, seed=7)
    b.add_random_normal_static("ns_other", "ns_other", output_shape=[2000], mean=-1.0, stddev=0.5, seed=8)
    b.add_random_normal_dynamic("nd", ["shape"], "nd", mean=0.0, stddev=1.0, seed=-1)
    b.add_random_uniform_like("ul", "like", "ul", minval=-1.0, maxval=3.0, seed=1)
    b.add_random_uniform_static("us", "us", output_shape=[4, 500], minval=0.0, maxval=1.0, seed=2)
    b.add_random_uniform_dynamic("ud", ["shape"], "ud", minval=5.0, maxval=6.0, seed=3)
    b.add_random_bernoulli_like("bl", "like", "bl", prob=0.3, seed=4)
    b.add_random_bernoulli_static("bs", "bs", output_shape=[2000], prob=0.9, seed=5)
    b.add_random_bernoulli_dynamic("bd", ["shape"], "bd", prob=0.5, seed=6)
    b.add_categorical_distribution("cat", "logits", "cat", num_samples=3000, is_logits=True, seed=9)
    b.add_categorical_distribution("catp", "probs", "catp", num_samples=2000, is_logits=False, seed=10)
    path = save(b, tmp_path)
    feeds = {"like": like, "logits": logits, "probs": probs}
    got, again = run(path, feeds), run(path, feeds)
    expect = {"nl": (50, 40), "ns": (2000,), "nd": (40, 50), "ul": (50, 40), "us": (4, 500), "ud": (40, 50),
              "bl": (50, 40), "bs": (2000,), "bd": (40, 50), "cat": (2, 3000), "catp": (1, 2000)}
    for k, s in expect.items():
        assert got[k].shape == s and got[k].dtype == np.float32, (k, got[k].shape, got[k].dtype)
        np.testing.assert_array_equal(got[k], again[k])  # fixed seeds: deterministic
    np.testing.assert_array_equal(got["nl"], got["nl_same"])  # same seed and shape, same values
    assert np.mean(got["ns"] == got["ns_other"]) < 0.01
    # normal: mean and standard deviation (2000 samples: standard errors ~0.011 / ~0.008 for ns)
    for k, m, sd in (("nl", 1.0, 2.0), ("ns", -1.0, 0.5), ("nd", 0.0, 1.0)):
        v = got[k].astype(np.float64)
        assert abs(v.mean() - m) < 5 * sd / np.sqrt(v.size) and abs(v.std() - sd) < 0.05 * sd, (k, v.mean(), v.std())
    for k, lo, hi in (("ul", -1.0, 3.0), ("us", 0.0, 1.0), ("ud", 5.0, 6.0)):
        v = got[k].astype(np.float64)
        assert v.min() >= lo and v.max() < hi
        assert abs(v.mean() - (lo + hi) / 2) < 5 * (hi - lo) / np.sqrt(12 * v.size)
        assert abs(v.var() - (hi - lo) ** 2 / 12) < 0.05 * (hi - lo) ** 2 / 12
    for k, p in (("bl", 0.3), ("bs", 0.9), ("bd", 0.5)):
        v = got[k]
        assert set(np.unique(v)) <= {0.0, 1.0}
        assert abs(v.mean() - p) < 5 * np.sqrt(p * (1 - p) / v.size), (k, v.mean())
    for row, p in zip(got["cat"], [[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]]):
        freq = np.bincount(row.astype(int), minlength=3) / row.size
        assert set(np.unique(row)) <= {0.0, 1.0, 2.0}
        assert np.all(np.abs(freq - p) < 5 * np.sqrt(np.array(p) * (1 - np.array(p)) / row.size)), freq
    freq = np.bincount(got["catp"][0].astype(int), minlength=3) / 2000
    assert freq[1] == 0 and abs(freq[0] - 0.6) < 0.06


def test_dynamic_shape_must_be_constant(tmp_path):
    b = builder([("shape", (2,))], ["r"])
    b.add_random_uniform_dynamic("draw", ["shape"], "r", seed=1)
    with pytest.raises(EstuaryError) as e:
        run(save(b, tmp_path), {"shape": np.array([2, 3], np.float32)})
    assert "draw" in str(e.value) and "compile-time constant" in str(e.value)
