"""nn ops: gemm and matmul (WebNN §7.7.19, §7.7.30)."""
import numpy as np

from estuary import dtypes
from estuary.dialects.core import (Bool, Float, TensorSpec, broadcast_shapes, check, dtype_in, nn_op, rank_is,
                                   same_dtype, unidirectional_broadcastable)


def _gemm_ref(a, b, c, alpha, beta, a_transpose, b_transpose):
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    y = alpha * ((a64.T if a_transpose else a64) @ (b64.T if b_transpose else b64))
    if c is not None:
        y = y + beta * c.astype(np.float64)
    return y


@nn_op("gemm", ["a", "b", "c?"], {"alpha": Float(1.0), "beta": Float(1.0), "a_transpose": Bool(False),
                                  "b_transpose": Bool(False)}, reference=_gemm_ref, family="matmul")
def gemm(a, b, c, alpha, beta, a_transpose, b_transpose):
    """alpha * A' B' + beta * C for 2-D A, B (optionally transposed) and C broadcastable to [M, N]."""
    dtype_in(a, dtypes.FLOATS, "a")
    same_dtype(a, b, c, what="a, b and c")
    rank_is(a, 2, "a")
    rank_is(b, 2, "b")
    m, k = a.shape[::-1] if a_transpose else a.shape
    k2, n = b.shape[::-1] if b_transpose else b.shape
    check(k == k2, f"inner dimensions differ: a gives {k}, b gives {k2}")
    if c is not None:
        check(c.rank <= 2 and unidirectional_broadcastable(c.shape, (m, n)),
              f"c of shape {list(c.shape)} is not broadcastable to [{m}, {n}]")
    return TensorSpec((m, n), a.dtype)


@nn_op("matmul", ["a", "b"], reference=lambda a, b: a.astype(np.float64) @ b.astype(np.float64), family="matmul")
def matmul(a, b):
    """Batched matrix product of the last two dimensions; batch dimensions broadcast."""
    dtype_in(a, dtypes.FLOATS, "a")
    same_dtype(a, b, what="a and b")
    check(a.rank >= 2 and b.rank >= 2, f"a and b must have rank >= 2, got {list(a.shape)} and {list(b.shape)}")
    check(a.shape[-1] == b.shape[-2], f"a's columns ({a.shape[-1]}) must equal b's rows ({b.shape[-2]})")
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return TensorSpec(batch + (a.shape[-2], b.shape[-1]), a.dtype)
