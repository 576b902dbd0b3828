"""Lowering rules: gemm and matmul as rank-3 tosa.matmul (float16 accumulates in float32)."""
import math

from iree.compiler import ir
from iree.compiler.dialects import tosa

from estuary.passes.lowering import common as C
from estuary.passes.lowering import lower


def _f32(v):
    if C.element_of(v) == ir.F32Type.get():
        return v
    return tosa.cast(C.tensor_type(C.shape_of(v), ir.F32Type.get()), v)


def batched_matmul(a, b):
    """[..., M, K] x [..., K, N] with broadcast batch dims, in float32."""
    a, b = _f32(a), _f32(b)
    sa, sb = C.shape_of(a), C.shape_of(b)
    batch = [max(x, y) for x, y in zip([1] * (len(sb) - len(sa)) + sa[:-2], [1] * (len(sa) - len(sb)) + sb[:-2])]
    m, k, n = sa[-2], sa[-1], sb[-1]
    a = C.broadcast_to(a, batch + [m, k])
    b = C.broadcast_to(b, batch + [k, n])
    nb = math.prod(batch)
    a3, b3 = C.reshape(a, [nb, m, k]), C.reshape(b, [nb, k, n])
    zp = C.zero_point("float32")
    y = tosa.matmul(C.tensor_type([nb, m, n], ir.F32Type.get()), a3, b3, zp, C.zero_point("float32"))
    return C.reshape(y, batch + [m, n])


def _narrow(y, spec):
    out = C.storage(spec)
    return y if out.element_type == ir.F32Type.get() else tosa.cast(C.tensor_type(C.shape_of(y), out.element_type), y)


@lower("matmul")
def lower_matmul(n):
    return _narrow(batched_matmul(*n.inputs), n.out)


@lower("gemm")
def lower_gemm(n):
    a, b, c = n.inputs
    at = n.attrs
    if at["a_transpose"]:
        a = C.transpose(a, [1, 0])
    if at["b_transpose"]:
        b = C.transpose(b, [1, 0])
    y = batched_matmul(a, b)
    t = y.type
    if at["alpha"] != 1.0:
        y = C.mul(y, C.const([[at["alpha"]]], "float32"), t)
    if c is not None and at["beta"] != 0.0:
        cc = C.expand_rank(_f32(c), 2)
        if at["beta"] != 1.0:
            cc = C.mul(cc, C.const([[at["beta"]]], "float32"), cc.type)
        y = tosa.add(t, y, cc)
    return _narrow(y, n.out)
