"""nn ops: gemm and matmul (WebNN §7.7.19, §7.7.30)."""
import numpy as np

from estuary.base import dtypes
from estuary.dialects.core import (Bool, Float, TensorSpec, VerificationError, broadcast_shapes, check, dtype_in,
                                   nn_op, rank_is, same_dim, same_dtype, unidirectional_broadcastable)


def as_dtype(value, dtype):
    """A float option cast to the operand's data type, as the spec's steps do ("Set options.alpha to
    the result of casting options.alpha to a's dataType")."""
    return float(np.asarray(value, dtype=dtypes.to_numpy(dtype)))


def _gemm_ref(a, b, c, alpha, beta, a_transpose, b_transpose):
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    alpha, beta = as_dtype(alpha, str(a.dtype)), as_dtype(beta, str(a.dtype))
    y = alpha * ((a64.T if a_transpose else a64) @ (b64.T if b_transpose else b64))
    if c is not None:
        y = y + beta * c.astype(np.float64)
    return y


@nn_op("gemm", ["a", "b", "c?"], {"alpha": Float(1.0), "beta": Float(1.0), "a_transpose": Bool(False),
                                  "b_transpose": Bool(False)}, reference=_gemm_ref, dynamic=True)
def gemm(a, b, c, alpha, beta, a_transpose, b_transpose):
    """alpha * A' B' + beta * C for 2-D A, B (optionally transposed) and C unidirectionally
    broadcastable to [M, N] (rank 0 to 2); without C, alpha * A' B'."""
    dtype_in(a, dtypes.FLOATS, "a")
    same_dtype(a, b, what="a and b")
    rank_is(a, 2, "a")
    rank_is(b, 2, "b")
    m, k = a.shape[::-1] if a_transpose else a.shape
    k2, n = b.shape[::-1] if b_transpose else b.shape
    same_dim(k, k2, f"inner dimensions differ: a gives {k}, b gives {k2} "
                    f"(a_transpose={a_transpose}, b_transpose={b_transpose})")
    if c is not None:
        check(unidirectional_broadcastable(c.shape, (m, n)),
              f"c of shape {list(c.shape)} is not broadcastable to [{m}, {n}]")
        same_dtype(a, c, what="a and c")
    return TensorSpec((m, n), a.dtype)


def _matmul_ref(a, b):
    return a.astype(np.float64) @ b.astype(np.float64)


@nn_op("matmul", ["a", "b"], reference=_matmul_ref, dynamic=True)
def matmul(a, b):
    """Matrix product of the last two dimensions; the batch dimensions (all but the last two)
    broadcast bidirectionally. Both operands have rank >= 2 (WebNN has no rank-1 promotion)."""
    dtype_in(a, dtypes.FLOATS, "a")
    same_dtype(a, b, what="a and b")
    check(a.rank >= 2 and b.rank >= 2, f"a and b must have rank >= 2, got {list(a.shape)} and {list(b.shape)}")
    # The spec's "calculate matmul output sizes" steps omit this check, but the product is
    # undefined without it (and every implementation rejects it).
    same_dim(a.shape[-1], b.shape[-2], f"a's columns ({a.shape[-1]}) must equal b's rows ({b.shape[-2]})")
    try:
        batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except VerificationError:
        raise VerificationError(f"batch dimensions {list(a.shape[:-2])} and {list(b.shape[:-2])} "
                          f"are not broadcastable") from None
    return TensorSpec(batch + (a.shape[-2], b.shape[-1]), a.dtype)
