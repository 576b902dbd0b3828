"""nn.lsh_projection compiled against pyfarmhash (farmhash.fingerprint64, the hash Android's
reference implementation uses), for element widths 1, 2 and 4 bytes given at run time and keys on
both sides of Fingerprint64's 16 / 32 / 64-byte branches (including unaligned fetches)."""
import numpy as np
import pytest

import estuary
from estuary.dialects.core import TensorSpec
from estuary.dialects.graph import Graph
from helpers import assert_exact

farmhash = pytest.importorskip("farmhash")


def _oracle(hashes, x, weight, kind):
    rows = x.reshape(x.shape[0], -1)
    bits = np.zeros(hashes.shape, np.int64)
    for i, j in np.ndindex(hashes.shape):
        score = 0.0
        for r in range(rows.shape[0]):
            h = farmhash.fingerprint64(hashes[i, j].astype(np.float32).tobytes() + rows[r].tobytes())
            score += (h - (1 << 64) if h >> 63 else h) * (1.0 if weight is None else float(weight[r]))
        bits[i, j] = score > 0
    if kind == "dense":
        return bits.reshape(-1).astype(np.int32)
    codes = [sum(int(b) << (hashes.shape[1] - 1 - j) for j, b in enumerate(row)) for row in bits]
    return np.array(codes, np.uint64).astype(np.uint32).astype(np.int32)


def _near_cancellation(rng):
    """Input rows, seed and weights whose weighted hash sum is positive in double but rounds to zero
    or flips in float32: the score must be summed in f64, as the reference does."""
    for _ in range(10000):
        x = rng.standard_normal((2, 1)).astype(np.float32)
        seed = np.float32(rng.standard_normal())
        h = [farmhash.fingerprint64(seed.tobytes() + x[r].tobytes()) for r in range(2)]
        h = [v - (1 << 64) if v >> 63 else v for v in h]
        w1 = np.float32(-h[0] / h[1])
        double = float(h[0]) + float(w1) * float(h[1])
        single = np.float32(h[0]) + np.float32(w1) * np.float32(h[1])
        if (double > 0) != (single > 0):
            return x, np.array([[seed]], np.float32), np.array([1.0, w1], np.float32)
    raise AssertionError("no near-cancelling case found")


def test_lsh_projection(rng):
    g = Graph()
    cases, feeds, outs = [], {}, []
    x, hashes, weight = _near_cancellation(rng)
    outs.append(("near", g.op("lsh_projection", [g.constant(hashes), g.input("near", TensorSpec([2, 1], "float32")),
                                                 g.constant(weight)], {"type": "dense"})))
    feeds["near"] = x
    near = (hashes, x, weight, "dense")
    for k, (shape, dtype, hshape, weighted, kind) in enumerate([
            ((2, 70), "uint8", (3, 7), True, "sparse"),   # 74-byte key: the loop, unaligned words
            ((3, 13), "int8", (2, 4), False, "dense"),     # 17 bytes
            ((2, 15), "float16", (2, 5), True, "sparse"),  # 34 bytes
            ((1, 2, 3), "float32", (4, 3), False, "sparse")]):  # 28 bytes
        if dtype in ("uint8", "int8"):
            info = np.iinfo(dtype)
            x = rng.integers(info.min, info.max + 1, shape).astype(dtype)
        else:
            x = rng.standard_normal(shape).astype(dtype)
        hashes = rng.standard_normal(hshape).astype(np.float32)
        weight = rng.standard_normal(shape[0]).astype(np.float32) if weighted else None
        xv = g.input(f"x{k}", TensorSpec(shape, dtype))
        w = g.constant(weight) if weighted else None
        outs.append((f"y{k}", g.op("lsh_projection", [g.constant(hashes), xv, w], {"type": kind})))
        feeds[f"x{k}"] = x
        cases.append((hashes, x, weight, kind))
    got = estuary.load(estuary.compile(g.finish(outs))).run(feeds)
    from estuary.dialects.ops.lookup import _lsh_ref

    assert_exact(got["near"], _oracle(*near))

    for k, (hashes, x, weight, kind) in enumerate(cases):
        ref = _oracle(hashes, x, weight, kind)
        assert_exact(got[f"y{k}"], ref)
        assert_exact(_lsh_ref(hashes, x, weight, kind), ref)  # the op's numpy reference agrees
