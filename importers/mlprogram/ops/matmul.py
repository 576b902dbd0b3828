"""MIL linear, matmul (numpy broadcasting, rank-1 operands, transposes), einsum (two operands,
by transposes, reshapes and one batched matmul) and iOS18 scaled_dot_product_attention."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from estuary.base import dims
from estuary.importers.mlprogram.ops import OPS
from estuary.importers.mlprogram.ops.shape import is_const, shape_of, transpose


def swap_last(c: Any, x: Any) -> Any:
    r = len(shape_of(c, x))
    return transpose(c, x, list(range(r - 2)) + [r - 1, r - 2])


def matmul(c: Any, a: Any, b: Any) -> Any:
    """numpy.matmul semantics: rank-1 operands gain and lose an axis, batch axes broadcast."""
    sa, sb = shape_of(c, a), shape_of(c, b)
    c.check(sa and sb, "matmul operands must have rank >= 1")
    a1, b1 = len(sa) == 1, len(sb) == 1
    a = c.reshape(c.value(a), [1] + sa) if a1 else c.value(a)
    b = c.reshape(c.value(b), sb + [1]) if b1 else c.value(b)
    sa, sb = shape_of(c, a), shape_of(c, b)
    c.check(sa[-1] == sb[-2], f"matmul inner dimensions differ: {sa} x {sb}")
    rank = max(len(sa), len(sb))
    a = c.reshape(a, [1] * (rank - len(sa)) + sa)
    b = c.reshape(b, [1] * (rank - len(sb)) + sb)
    y = c.op("matmul", [a, b])
    out = shape_of(c, y)
    if a1:
        out = out[:-2] + out[-1:]
    if b1:
        out = out[:-1]
    return c.reshape(y, out)


@OPS.op("matmul")
def convert_matmul(c: Any, op: Any) -> Any:
    a, b = c.arg(op, "x"), c.arg(op, "y")
    if bool(c.scalar(op, "transpose_x", False)):
        a = swap_last(c, a)
    if bool(c.scalar(op, "transpose_y", False)):
        b = swap_last(c, b)
    return matmul(c, a, b)


@OPS.op("linear")
def convert_linear(c: Any, op: Any) -> Any:
    """x @ weight^T + bias (weight [D_out, D_in])"""
    x, w = c.x(op), c.arg(op, "weight")
    c.check(len(shape_of(c, w)) == 2, f"weight must have rank 2, got {shape_of(c, w)}")
    y = matmul(c, x, swap_last(c, w))
    if c.has(op, "bias"):
        bias = c.arg(op, "bias")
        if not (is_const(bias) and not np.any(bias)):
            y = c.op("add", [y, c.value(bias)])
    return y


@OPS.op("einsum")
def convert_einsum(c: Any, op: Any) -> Any:
    """Two-operand equations without repeated labels in one operand: labels in both operands and
    the output are batch axes, in both but not the output are summed by the matmul, in one only
    are kept (or summed first when absent from the output)."""
    eq = str(c.val(op, "equation")).replace(" ", "")
    xs = [c.value(c._resolve(b)) for b in op.bindings("values")]
    c.check("->" in eq and "." not in eq, f"einsum equation {eq!r} needs an explicit output and no ellipsis")
    ins, out = eq.split("->")
    terms = ins.split(",")
    c.check(len(terms) == 2 and len(xs) == 2, f"einsum {eq!r}: only two-operand equations are supported")
    for t, x in zip(terms, xs):
        c.check(len(set(t)) == len(t) == len(shape_of(c, x)), f"einsum term {t!r} does not fit shape {shape_of(c, x)}")
    ta, tb = terms
    a, b = xs

    def reduce_own(x: Any, t: str, other: str) -> tuple[Any, str]:
        drop = [i for i, ch in enumerate(t) if ch not in other and ch not in out]
        if drop:
            x = c.op("reduce_sum", [x], axes=drop, keep_dimensions=False)
            t = "".join(ch for ch in t if ch not in [t[i] for i in drop])
        return x, t

    a, ta = reduce_own(a, ta, tb)
    b, tb = reduce_own(b, tb, ta)
    size = {ch: d for t, x in ((ta, a), (tb, b)) for ch, d in zip(t, shape_of(c, x))}
    batch = [ch for ch in out if ch in ta and ch in tb]
    contract = [ch for ch in ta if ch in tb and ch not in out]
    left = [ch for ch in ta if ch not in tb]
    right = [ch for ch in tb if ch not in ta]
    c.check(set(out) == set(batch + left + right), f"einsum {eq!r}: output labels must come from the operands")
    a = transpose(c, a, [ta.index(ch) for ch in batch + left + contract])
    b = transpose(c, b, [tb.index(ch) for ch in batch + contract + right])
    n = lambda labels: int(dims.prod(size[ch] for ch in labels))  # noqa: E731
    a = c.reshape(a, [n(batch), n(left), n(contract)])
    b = c.reshape(b, [n(batch), n(contract), n(right)])
    y = c.reshape(c.op("matmul", [a, b]), [size[ch] for ch in batch + left + right])
    order = batch + left + right
    return transpose(c, y, [order.index(ch) for ch in out])


@OPS.op("scaled_dot_product_attention", since=18)
def convert_sdpa(c: Any, op: Any) -> Any:
    """softmax(Q K^T / sqrt(E) + mask) V; a bool mask keeps the positions it sets."""
    q, k, v = c.x(op, "query"), c.x(op, "key"), c.x(op, "value")
    e = shape_of(c, q)[-1]
    scores = matmul(c, q, swap_last(c, k))
    scores = c.op("mul", [scores, c.const(np.asarray(1 / math.sqrt(e), dtype=np.float32))])
    if c.has(op, "attn_mask"):
        mask = c.arg(op, "attn_mask")
        if (is_const(mask) and mask.dtype == np.bool_) or (not is_const(mask) and c.spec(mask).dtype == "uint8"):
            m = c.value(mask)
            scores = c.op("where", [m, scores, c.const(np.full((), -np.inf, np.float32))])
        else:
            scores = c.op("add", [scores, c.value(mask)])
    probs = c.op("softmax", [scores], axis=len(shape_of(c, scores)) - 1)
    return matmul(c, probs, v)
