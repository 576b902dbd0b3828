"""Random ops: shapes, dtypes, determinism for a fixed seed, distribution statistics, and the
uniform bits against the documented generator (hash32 of the counter) computed in numpy."""
import numpy as np

import estuary
from estuary.dialects.graph import Graph
from estuary.dialects.ops.random import bits


def _hash_ref(x):
    """lowbias32, written out again with Python ints (independent of the op's numpy reference)."""
    out = []
    for v in x:
        v = int(v)
        v ^= v >> 16
        v = (v * 0x7FEB352D) & 0xFFFFFFFF
        v ^= v >> 15
        v = (v * 0x846CA68B) & 0xFFFFFFFF
        out.append(v ^ (v >> 16))
    return np.array(out, np.uint64)


def test_random_uniform_normal():
    g = Graph()
    outs = [("u", g.op("random_uniform", [], {"shape": [200, 100], "low": -2.0, "high": 3.0, "seed": 42})),
            ("u2", g.op("random_uniform", [], {"shape": [200, 100], "low": -2.0, "high": 3.0, "seed": 43})),
            ("h", g.op("random_uniform", [], {"shape": [7, 3], "seed": -1, "data_type": "float16"})),
            ("n", g.op("random_normal", [], {"shape": [100, 200], "mean": 1.5, "stddev": 2.0, "seed": 42}))]
    model = estuary.load(estuary.compile(g.finish(outs)))
    got, again = model.run({}), model.run({})
    assert got["u"].shape == (200, 100) and got["u"].dtype == np.float32
    assert got["h"].shape == (7, 3) and got["h"].dtype == np.float16
    assert got["n"].shape == (100, 200) and got["n"].dtype == np.float32
    for k in got:
        np.testing.assert_array_equal(got[k], again[k])  # a fixed seed is deterministic
    assert np.mean(got["u"] == got["u2"]) < 0.001  # another seed, another stream
    u, z = got["u"].astype(np.float64), got["n"].astype(np.float64)
    assert u.min() >= -2.0 and u.max() < 3.0
    # uniform on [-2, 3): mean 0.5, variance 25/12; 20000 samples -> standard errors ~0.01 / ~0.01
    assert abs(u.mean() - 0.5) < 0.05 and abs(u.var() - 25 / 12) < 0.08
    counts = np.histogram(u, bins=10, range=(-2, 3))[0]
    assert (np.abs(counts - 2000) < 250).all(), counts
    # normal(1.5, 2): mean, std, and the 68/95 rule
    assert abs(z.mean() - 1.5) < 0.06 and abs(z.std() - 2.0) < 0.06
    inside1 = np.mean(np.abs(z - 1.5) < 2.0)
    inside2 = np.mean(np.abs(z - 1.5) < 4.0)
    assert abs(inside1 - 0.6827) < 0.015 and abs(inside2 - 0.9545) < 0.01
    # the device generator is the documented one: hash32(hash32(i ^ k1) + k2), top 24 bits
    from estuary.dialects.ops.random import seed_words
    k1, k2 = seed_words(42)
    i = np.arange(50)
    ref = _hash_ref((_hash_ref(i ^ k1) + k2) & 0xFFFFFFFF)
    np.testing.assert_array_equal(ref, bits(42, i).astype(np.uint64))
    expect = (np.float32(-2.0) + ((ref >> 8).astype(np.float32) * np.float32(2.0 ** -24)) * np.float32(5.0))
    # low + u * (high - low): the compiler may contract it into one fused multiply-add (1 ulp)
    np.testing.assert_allclose(got["u"].reshape(-1)[:50], expect.astype(np.float32), rtol=0, atol=5e-7)
