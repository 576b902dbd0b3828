"""Lowering rules: gemm and matmul as one rank-3 tosa.matmul [N,M,K]x[N,K,N'] -> float32.

tosa.matmul takes float16 operands with a float32 result, so float16 products accumulate in
float32; the scaling and the addition of c happen in float32 too, and the result is rounded to
the output type once at the end.
"""
import math

import numpy as np

from iree.compiler import ir
from iree.compiler.dialects import arith, tosa

from estuary.backends.llvm_cpu.tile_rules import unit_width
from estuary.dialects.ops.matmul import as_dtype
from estuary.passes.lowering import common as C
from estuary.passes.lowering import lowering
from estuary.passes.lowering.matvec import (BLOCK, MAX_WEIGHTS, UNIT_PARTS, is_constant, row_products, unit_products,
                                             vector_form)
from estuary.passes.lowering.pointwise import constant_array


def _f32():
    return ir.F32Type.get()


def _to_f32(v):
    return v if C.element_of(v) == _f32() else tosa.cast(C.tensor_type(C.shape_of(v), _f32()), v)


def _narrow(y, spec):
    """Round the float32 result to the op's output type."""
    out = C.storage(spec)
    return y if out.element_type == _f32() else tosa.cast(C.tensor_type(C.shape_of(y), out.element_type), y)


def _zero_point(v):
    return C.zero_point("float16" if C.element_of(v) == ir.F16Type.get() else "float32")


def batched_matmul(ctx, a, b, batch):
    """[..., M, K] x [..., K, N] with the batch dims broadcast to `batch`; float32 result (`ctx`: the
    rule's context, for the target's forms).

    When b is a single matrix, a's batch folds into its rows (one [1, B*M, K] product, no tiling);
    a single row times a small constant matrix is a tagged generic instead (matvec.py), except on
    GPU targets, which have no use for its CPU tiles: on Vulkan, IREE fused a float16 input's
    widening into it and computed wrong values."""
    sa, sb = C.shape_of(a), C.shape_of(b)
    m, k, n = sa[-2], sa[-1], sb[-1]
    nb = math.prod(batch)
    one_row = math.prod(sb[:-2]) == 1 and nb * m == 1
    if one_row and is_constant(b) and not ctx.options.gpu:
        y = _column_form(ctx, C.reshape(a, [k]), C.reshape(b, [k, n]))
        if y is None and vector_form(k, n):
            y = _row_times_matrix(C.reshape(a, [k]), C.reshape(b, [k, n]))
        if y is not None:
            return C.reshape(y, list(batch) + [m, n])
    if math.prod(sb[:-2]) == 1:
        a3, b3 = C.reshape(a, [1, nb * m, k]), C.reshape(b, [1, k, n])
    else:
        a3 = C.reshape(C.broadcast_to(a, list(batch) + [m, k]), [nb, m, k])
        b3 = C.reshape(C.broadcast_to(b, list(batch) + [k, n]), [nb, k, n])
    y = tosa.matmul(C.tensor_type(C.shape_of(a3)[:2] + [n], _f32()), a3, b3, _zero_point(a3), _zero_point(b3))
    return C.reshape(y, list(batch) + [m, n])


def _column_form(ctx, v, b):
    """v [K] x constant b [K, N] -> [1, N] in the column-vector form (matvec.unit_products) on an
    x86 CPU (`ctx.options.cpu_lanes`), at least BLOCK columns, else None: the columns in UNIT_PARTS
    (at least two) equal results, N padded with zero columns to whole vector steps. The results
    are joined along the last axis of the result's shape, so that slices of whole parts (an
    LSTM's gates) fold to the parts and their consumers fuse into the product's dispatch."""
    k, n = C.shape_of(b)
    width = unit_width(ctx.options.cpu_lanes)
    if not width or n < BLOCK or k * n > MAX_WEIGHTS:
        return None
    w = constant_array(b)
    if w is None:
        return None
    parts = min(UNIT_PARTS, max(2, -(-n // BLOCK)))
    size = -(-n // (parts * width)) * width
    w = np.pad(w.astype(np.float32), [(0, 0), (0, parts * size - n)])
    results = unit_products(_to_f32(v), [w[:, i * size:(i + 1) * size] for i in range(parts)], width,
                            ctx.run.cache)
    y = C.concat([C.reshape(r, [1, size]) for r in results], 1)
    return y if parts * size == n else C.slice_(y, [0, 0], [1, n])


def _row_times_matrix(v, b):
    """v [K] x constant b [K, N] -> [1, N]: one tagged generic with a result per block of at most
    BLOCK columns (at least two, so IREE sees no contraction). A generic's results share one
    iteration space, so the blocks are equal: N is padded with zero columns when needed."""
    k, n = C.shape_of(b)
    parts = max(2, -(-n // BLOCK))
    size = -(-n // parts)
    bt = C.transpose(_to_f32(b), [1, 0])
    if parts * size != n:
        bt = C.pad_constant(bt, [(0, parts * size - n), (0, 0)], 0, "float32")
    ws = [C.slice_(bt, [i * size, 0], [size, k]) for i in range(parts)]
    y = C.concat(row_products(_to_f32(v), ws), 0)
    return C.reshape(y if parts * size == n else C.slice_(y, [0], [n]), [1, n])


@lowering("matmul")
def lower_matmul(n):
    batch = n.out.shape[:-2]
    return _narrow(batched_matmul(n, *n.inputs, batch), n.out)


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
def lower_gemm(n):
    """alpha * (A' B') [+ beta * C], C broadcast by tosa.add (rank 0..2 expanded to rank 2)."""
    a, b, c = n.inputs
    at = n.attrs
    dtype = n.out.dtype
    if at["a_transpose"]:
        a = C.transpose(a, [1, 0])
    if at["b_transpose"]:
        b = C.transpose(b, [1, 0])
    y = _scaled(batched_matmul(n, a, b, []), as_dtype(at["alpha"], dtype))
    if c is not None:  # even beta == 0 adds beta * c, so NaN/inf in c propagate as the spec computes
        cc = _scaled(C.expand_rank(_to_f32(c), 2), as_dtype(at["beta"], dtype))
        y = tosa.add(y.type, y, cc)
    return _narrow(y, n.out)
