"""Declarations: Table lookups and hashing: LSH projection (NNAPI LSH_PROJECTION).

`fingerprint64` spells farmhash's Fingerprint64 (farmhashna::Hash64) once, over an arithmetic
"backend" (wrapping uint64 add/mul/xor/shifts and little-endian fetches of the key), so the numpy
reference runs it on Python ints and the lowering emits the same steps as i64 arith ops with the key
length known at compile time. Android's reference implementation hashes (seed float32 bytes ++
input row bytes) per row and sums the signed hashes (times the optional weights) in double.
"""
import numpy as np

from estuary.base import dtypes
from estuary.dialects.core import Str, TensorSpec, check, nn_op, rank_is

K0, K1, K2 = 0xC3A5C85C97CB3127, 0xB492B66FBE98F273, 0x9AE16A3B2F90404F
MASK = (1 << 64) - 1
LSH_TYPES = ("sparse", "dense")


class IntBackend:
    """uint64 arithmetic on Python ints over a bytes key (the reference backend)."""

    def __init__(self, key):
        self.key = bytes(key)

    def k(self, v):
        return v & MASK

    def add(self, a, b):
        return (a + b) & MASK

    def mul(self, a, b):
        return (a * b) & MASK

    def xor(self, a, b):
        return a ^ b

    def shr(self, a, n):
        return a >> n

    def shl(self, a, n):
        return (a << n) & MASK

    def or_(self, a, b):
        return a | b

    def and_(self, a, b):
        return a & b

    def fetch(self, p, n):
        return int.from_bytes(self.key[p:p + n], "little")


def fingerprint64(b, length):
    """farmhash Fingerprint64 of a `length`-byte key (length >= 4) through backend `b`."""
    k0, k1, k2 = b.k(K0), b.k(K1), b.k(K2)

    def f64(p):
        return b.fetch(p, 8)

    def rot(v, s):
        return v if s == 0 else b.or_(b.shr(v, s), b.shl(v, 64 - s))

    def shift_mix(v):
        return b.xor(v, b.shr(v, 47))

    def len16(u, v, mul):
        a = shift_mix(b.mul(b.xor(u, v), mul))
        c = shift_mix(b.mul(b.xor(v, a), mul))
        return b.mul(c, mul)

    def weak32(w, x, y, z, a, c):
        a = b.add(a, w)
        c = rot(b.add(b.add(c, a), z), 21)
        t = a
        a = b.add(b.add(a, x), y)
        c = b.add(c, rot(a, 44))
        return b.add(a, z), b.add(c, t)

    def weak32_at(p, a, c):
        return weak32(f64(p), f64(p + 8), f64(p + 16), f64(p + 24), a, c)

    n = length
    check(n >= 4, "fingerprint64 keys have at least 4 bytes")
    mul = b.k(K2 + 2 * n)
    if n <= 16:
        if n >= 8:
            a = b.add(f64(0), k2)
            c = f64(n - 8)
            cc = b.add(b.mul(rot(c, 37), mul), a)
            d = b.mul(b.add(rot(a, 25), c), mul)
            return len16(cc, d, mul)
        a = b.fetch(0, 4)
        return len16(b.add(b.k(n), b.shl(a, 3)), b.fetch(n - 4, 4), mul)
    if n <= 32:
        a = b.mul(f64(0), k1)
        c0 = f64(8)
        c = b.mul(f64(n - 8), mul)
        d = b.mul(f64(n - 16), k2)
        return len16(b.add(b.add(rot(b.add(a, c0), 43), rot(c, 30)), d),
                     b.add(b.add(a, rot(b.add(c0, k2), 18)), c), mul)
    if n <= 64:
        a = b.mul(f64(0), k2)
        c0 = f64(8)
        c = b.mul(f64(n - 8), mul)
        d = b.mul(f64(n - 16), k2)
        y = b.add(b.add(rot(b.add(a, c0), 43), rot(c, 30)), d)
        z = len16(y, b.add(b.add(a, rot(b.add(c0, k2), 18)), c), mul)
        e = b.mul(f64(16), mul)
        f = f64(24)
        g = b.mul(b.add(y, f64(n - 32)), mul)
        h = b.mul(b.add(z, f64(n - 24)), mul)
        return len16(b.add(b.add(rot(b.add(e, f), 43), rot(g, 30)), h),
                     b.add(b.add(e, rot(b.add(f, a), 18)), g), mul)
    seed = 81
    x = b.k(seed)
    y = b.k(seed * K1 + 113)
    z = b.mul(shift_mix(b.add(b.mul(y, k2), b.k(113))), k2)
    v = (b.k(0), b.k(0))
    w = (b.k(0), b.k(0))
    x = b.add(b.mul(x, k2), f64(0))
    end = ((n - 1) // 64) * 64
    last64 = end + ((n - 1) & 63) - 63
    for s in range(0, end, 64):
        x = b.mul(rot(b.add(b.add(b.add(x, y), v[0]), f64(s + 8)), 37), k1)
        y = b.mul(rot(b.add(b.add(y, v[1]), f64(s + 48)), 42), k1)
        x = b.xor(x, w[1])
        y = b.add(y, b.add(v[0], f64(s + 40)))
        z = b.mul(rot(b.add(z, w[0]), 33), k1)
        v = weak32_at(s, b.mul(v[1], k1), b.add(x, w[0]))
        w = weak32_at(s + 32, b.add(z, w[1]), b.add(y, f64(s + 16)))
        z, x = x, z
    mul = b.add(k1, b.shl(b.and_(z, b.k(0xFF)), 1))
    s = last64
    w = (b.add(w[0], b.k((n - 1) & 63)), w[1])
    v = (b.add(v[0], w[0]), v[1])
    w = (b.add(w[0], v[0]), w[1])
    x = b.mul(rot(b.add(b.add(b.add(x, y), v[0]), f64(s + 8)), 37), mul)
    y = b.mul(rot(b.add(b.add(y, v[1]), f64(s + 48)), 42), mul)
    x = b.xor(x, b.mul(w[1], b.k(9)))
    y = b.add(y, b.add(b.mul(v[0], b.k(9)), f64(s + 40)))
    z = b.mul(rot(b.add(z, w[0]), 33), mul)
    v = weak32_at(s, b.mul(v[1], mul), b.add(x, w[0]))
    w = weak32_at(s + 32, b.add(z, w[1]), b.add(y, f64(s + 16)))
    z, x = x, z
    return len16(b.add(b.add(len16(v[0], w[0], mul), b.mul(shift_mix(y), k0)), z),
                 b.add(len16(v[1], w[1], mul), x), mul)


def _signed(h):
    return h - (1 << 64) if h >> 63 else h


def _lsh_ref(hash, input, weight, type):
    num_hash, num_bits = hash.shape
    rows = np.ascontiguousarray(input).reshape(input.shape[0], -1)
    bits = np.zeros((num_hash, num_bits), np.int32)
    for i in range(num_hash):
        for j in range(num_bits):
            seed = np.float32(hash[i, j]).tobytes()
            score = 0.0
            for r in range(rows.shape[0]):
                key = seed + rows[r].tobytes()
                value = float(_signed(fingerprint64(IntBackend(key), len(key))))
                score += value if weight is None else float(weight[r]) * value
            bits[i, j] = 1 if score > 0 else 0
    if type == "dense":
        return bits.reshape(-1)
    return np.array([int("".join(map(str, row)), 2) for row in bits], np.int32)


@nn_op("lsh_projection", ["hash", "input", "weight?"], {"type": Str("sparse", LSH_TYPES)},
       reference=_lsh_ref)
def lsh_projection(hash, input, weight, type):
    """Locality-sensitive hashing (NNAPI LSH_PROJECTION, API 27): bit (i, j) is 1 when the sum over
    input rows r of weight[r] * int64(Fingerprint64(float32 hash[i, j] ++ row r bytes)), in double,
    is positive. sparse: num_hash int32 codes of num_bits bits (first bit most significant);
    dense: all num_hash * num_bits bits."""
    dtype_in = (dtypes.FLOATS + ("int32", "uint8", "int8"))
    check(hash.dtype == "float32", f"hash must be float32, got {hash.dtype}")
    rank_is(hash, 2, "hash")
    check(hash.shape[1] >= 1, "hash.shape[1] (bits per hash) must be >= 1")
    check(type == "dense" or hash.shape[1] <= 32,
          f"sparse hashes have at most 32 bits (hash.shape[1]), got {hash.shape[1]}")
    check(input.rank >= 1, "input must have rank >= 1")
    check(input.dtype in dtype_in, f"input data type {input.dtype} is not one of {list(dtype_in)}")
    if weight is not None:
        check(weight.dtype == "float32", f"weight must be float32, got {weight.dtype}")
        check(weight.shape == (input.shape[0],),
              f"weight must have shape [{input.shape[0]}] (input.shape[0]), got {list(weight.shape)}")
    if type == "dense":
        return TensorSpec([hash.shape[0] * hash.shape[1]], "int32")
    return TensorSpec([hash.shape[0]], "int32")
