"""Batch-1 float32 3x3 stride-1 convolutions as Winograd F(4x4, 3x3), for the llvm-cpu target
(`cpu-winograd`: `CompileOptions.winograd`).

Each 6x6 input tile (stride 4) is transformed to V = B^T d B, multiplied channel-wise with the
transformed filter U = G g G^T (one [tiles, C] x [C, F] product per tile position: a batched
matmul of 36, which IREE data-tiles onto its mmt4d kernel) and transformed back to 4x4 outputs,
Y = A^T M A: 36 multiply-adds per 16 outputs and channel instead of 144. B, G and A are the
F(4, 3) matrices of Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks" (2016).

The transforms are separable, so each is two parallel `linalg.generic`s (rows, then columns)
whose inputs are strided slices of the tile grid: with projected-permutation indexing maps IREE
vectorizes them over the channels (and `cpu-tiles` over all their transform rows at once:
`tile_rules.transform_tiles`); with `ty*4+k` maps it scalarized them. The
slices also keep IREE from fusing the two passes (fused, the row pass was recomputed six times
per output). `util.optimization_barrier` would do that too, but it splits the command buffer
into one submission per barrier, which cost more than the transform saved on two threads.
Measurements: docs/performance.md; off with `--disable-pass cpu-winograd`. A convolution
whose result is transposed afterwards (an NCHW model output) stays direct (forms.py). The
lowering's side result `winograd` counts the convolutions that took this form.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import arith, linalg, tensor, tosa

from estuary.passes.lowering import common as C

M = 4  # outputs per tile side
A = M + 2  # inputs per tile side
BT = np.array([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0],
               [0, -2, -1, 2, 1, 0], [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]], np.float64)
G = np.array([[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6],
              [1 / 24, 1 / 12, 1 / 6], [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]], np.float64)
AT = np.array([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]], np.float64)

MIN_OUTPUT = 14  # measured: 14x14 and larger outputs gain, 7x7 loses (docs/performance.md)
MIN_CHANNELS = 16  # fewer channels: not measured (a short reduction for the batched matmul)


def filter_transform(w_oihw: np.ndarray) -> np.ndarray:
    """OIHW 3x3 weights -> U [36, C, F] float32 (computed in float64)."""
    u = np.einsum("ak,fckl,bl->abcf", G, w_oihw.astype(np.float64), G)
    return np.ascontiguousarray(u.reshape(A * A, w_oihw.shape[1], w_oihw.shape[0]).astype(np.float32))


def applies(x: ir.Value, w_oihw: ir.Value, pad: Sequence[int], strides: Sequence[int],
            dilations: Sequence[int]) -> bool:
    """True for a batch-1 float32 3x3 stride-1 undilated convolution worth the transform."""
    n, h, w, c = C.shape_of(x)
    f, i, kh, kw = C.shape_of(w_oihw)
    out_hw = (h + pad[0] + pad[1] - 2, w + pad[2] + pad[3] - 2)
    return (n == 1 and kh == kw == 3 and i == c and list(strides) == [1, 1] and list(dilations) == [1, 1]
            and min(out_hw) >= MIN_OUTPUT and min(c, f) >= MIN_CHANNELS
            and C.element_of(x) == ir.F32Type.get() and all(p >= 0 for p in pad))


Term = tuple[ir.Value, Sequence[int], np.ndarray]  # an input, the loops its map reads, its coefficients


def _combine(terms: Sequence[Term], out_shape: list[int], coef_dim: int) -> ir.Value:
    """sum_k coef_k[d] * x_k over `out_shape`; terms are (x_k, x_map dims, coef column)."""
    f32 = ir.F32Type.get()
    rank = len(out_shape)
    d = [ir.AffineDimExpr.get(i) for i in range(rank)]
    ins: list[ir.Value] = []
    maps: list[ir.AffineMap] = []
    for x, dims, col in terms:
        ins += [x, C.const(col.astype(np.float32), "float32")]
        maps += [ir.AffineMap.get(rank, 0, [d[i] for i in dims]), ir.AffineMap.get(rank, 0, [d[coef_dim]])]
    maps.append(ir.AffineMap.get_identity(rank))
    op = linalg.GenericOp([C.tensor_type(out_shape, f32)], ins, [tensor.empty(out_shape, f32)],
                          ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]),
                          ir.ArrayAttr.get([ir.Attribute.parse(C.PARALLEL)] * rank))
    block = op.regions[0].blocks.append(*([f32] * (len(ins) + 1)))
    with ir.InsertionPoint(block):
        args = block.arguments
        acc = None
        for k in range(0, len(ins), 2):
            p = arith.mulf(args[k], args[k + 1])
            acc = p if acc is None else arith.addf(acc, p)
        linalg.YieldOp([acc])
    return op.result


def conv3x3(x: ir.Value, w_oihw: np.ndarray, bias: ir.Value, pad: Sequence[int]) -> ir.Value:
    """x [1, H, W, C] NHWC, constant OIHW weights (numpy), bias [F], pad (t, b, l, r)
    -> [1, OH, OW, F] float32."""
    _, h, w, c = C.shape_of(x)
    f = w_oihw.shape[0]
    pt, pb, pl, pr = (int(p) for p in pad)
    oh, ow = h + pt + pb - 2, w + pl + pr - 2
    th, tw = -(-oh // M), -(-ow // M)  # tiles
    hp, wp = th * M + 2, tw * M + 2  # padded input covering every tile (>= the requested padding)
    xp = C.pad_constant(x, [(0, 0), (pt, hp - h - pt), (pl, wp - w - pl), (0, 0)], 0, "float32")
    xp = C.reshape(xp, [hp, wp, c])
    # rows: R[u, ty, w, c] = sum_k BT[u, k] xp[4 ty + k, w, c]
    rows = [(C.strided_slice(xp, [k, 0, 0], [th, wp, c], [M, 1, 1]), (1, 2, 3), BT[:, k]) for k in range(A)]
    r = _combine(rows, [A, th, wp, c], 0)
    # columns: V[u, v, ty, tx, c] = sum_l BT[v, l] R[u, ty, 4 tx + l, c]
    cols = [(C.strided_slice(r, [0, 0, k, 0], [A, th, tw, c], [1, 1, M, 1]), (0, 2, 3, 4), BT[:, k]) for k in range(A)]
    v = C.reshape(_combine(cols, [A, A, th, tw, c], 1), [A * A, th * tw, c])
    u = C.const(filter_transform(w_oihw), "float32")
    zp = C.zero_point("float32")
    m = tosa.matmul(C.tensor_type([A * A, th * tw, f], ir.F32Type.get()), v, u, zp, zp)
    m = C.reshape(m, [A, A, th, tw, f])
    # output columns: Z[u, ty, tx, q, f] = sum_v AT[q, v] M[u, v, ty, tx, f]
    zc = [(C.reshape(C.slice_(m, [0, k, 0, 0, 0], [A, 1, th, tw, f]), [A, th, tw, f]), (0, 1, 2, 4), AT[:, k])
          for k in range(A)]
    z = _combine(zc, [A, th, tw, M, f], 3)
    # output rows: Y[ty, p, tx, q, f] = sum_u AT[p, u] Z[u, ty, tx, q, f]
    zr = [(C.reshape(C.slice_(z, [k, 0, 0, 0, 0], [1, th, tw, M, f]), [th, tw, M, f]), (0, 2, 3, 4), AT[:, k])
          for k in range(A)]
    y = C.reshape(_combine(zr, [th, M, tw, M, f], 1), [1, th * M, tw * M, f])
    if (th * M, tw * M) != (oh, ow):
        y = C.slice_(y, [0, 0, 0, 0], [1, oh, ow, f])
    return tosa.add(C.tensor_type([1, oh, ow, f], ir.F32Type.get()), y, C.reshape(bias, [1, 1, 1, f]))
