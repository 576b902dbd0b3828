"""Lowering rules: gemm and matmul as one rank-3 tosa.matmul [N,M,K]x[N,K,N'] -> float32.

tosa.matmul takes float16 operands with a float32 result, so float16 products accumulate in
float32; the scaling and the addition of c happen in float32 too, and the result is rounded to
the output type once at the end. A target may build a single row times a constant matrix its
own way (`Forms.one_row_product`: llvm-cpu's column-vector and row forms).
"""
from __future__ import annotations

from collections.abc import Sequence
import math

from iree.compiler import ir
from iree.compiler.dialects import arith, tosa

from estuary.base import dims
from estuary.dialects.ops.matmul import as_dtype
from estuary.passes.lowering import RuleContext, lowering
from estuary.passes.lowering import common as C
from estuary.passes.lowering.forms import GENERIC, Forms
from estuary.passes.lowering.matvec import is_constant


def _f32():
    return ir.F32Type.get()


def to_f32(v: ir.Value) -> ir.Value:
    """`v` as float32 (cast when it is not)."""
    return v if C.element_of(v) == _f32() else tosa.cast(C.tensor_type(C.shape_of(v), _f32()), v)


def _narrow(y, spec):
    """Round the float32 result to the op's output type."""
    out = C.storage(spec)
    return y if out.element_type == _f32() else tosa.cast(C.tensor_type(C.shape_of(y), out.element_type), y)


def _zero_point(v):
    return C.zero_point("float16" if C.element_of(v) == ir.F16Type.get() else "float32")


def batched_matmul(ctx: RuleContext, a: ir.Value, b: ir.Value, batch: Sequence[dims.Value],
                   forms: Forms = GENERIC) -> ir.Value:
    """[..., M, K] x [..., K, N] with the batch dims broadcast to `batch`; float32 result (`ctx`: the
    rule's context, `forms`: the target's forms).

    When b is a single matrix, a's batch folds into its rows (one [1, B*M, K] product, no tiling);
    a single row times a constant matrix may take the target's own form (`Forms.one_row_product`)."""
    sa, sb = C.shape_of(a), C.shape_of(b)
    m, k, n = sa[-2], sa[-1], sb[-1]
    nb = math.prod(batch)
    one_row = math.prod(sb[:-2]) == 1 and nb * m == 1
    if one_row and is_constant(b):
        y = forms.one_row_product(ctx, a, b)
        if y is not None:
            return C.reshape(y, list(batch) + [m, n])
    if math.prod(sb[:-2]) == 1:
        a3, b3 = C.reshape(a, [1, nb * m, k]), C.reshape(b, [1, k, n])
    else:
        a3 = C.reshape(C.broadcast_to(a, list(batch) + [m, k]), [nb, m, k])
        b3 = C.reshape(C.broadcast_to(b, list(batch) + [k, n]), [nb, k, n])
    y = tosa.matmul(C.tensor_type(C.shape_of(a3)[:2] + [n], _f32()), a3, b3, _zero_point(a3), _zero_point(b3))
    return C.reshape(y, list(batch) + [m, n])


@lowering("matmul")
def lower_matmul(n: RuleContext, forms: Forms = GENERIC) -> ir.Value:
    a, b = n.inputs
    return _narrow(batched_matmul(n, a, b, n.out.shape[:-2], forms), n.out)


def _scaled(v, factor):
    """v * factor for a rank-2 float32 v, skipped when the factor is 1.

    A zero factor multiplies in linalg: tosa.mul's folder rewrites x * 0 to 0, losing the NaN
    that the spec's mul gives for infinite or NaN x."""
    if factor == 1.0:
        return v
    if factor == 0.0:
        return C.elementwise(C.shape_of(v), _f32(), [v], lambda x: arith.mulf(x, C.scalar_const(_f32(), 0.0)))
    return C.mul(v, C.const([[factor]], "float32"), v.type)


@lowering("gemm")
def lower_gemm(n: RuleContext, forms: Forms = GENERIC) -> ir.Value:
    """alpha * (A' B') [+ beta * C], C broadcast by tosa.add (rank 0..2 expanded to rank 2)."""
    a, b, c = n.inputs
    at = n.attrs
    dtype = n.out.dtype
    if at["a_transpose"]:
        a = C.transpose(a, [1, 0])
    if at["b_transpose"]:
        b = C.transpose(b, [1, 0])
    y = _scaled(batched_matmul(n, a, b, [], forms), as_dtype(at["alpha"], dtype))
    if c is not None:  # even beta == 0 adds beta * c, so NaN/inf in c propagate as the spec computes
        cc = _scaled(C.expand_rank(to_f32(c), 2), as_dtype(at["beta"], dtype))
        y = tosa.add(y.type, y, cc)
    return _narrow(y, n.out)
