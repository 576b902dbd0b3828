"""Narrow batch-1 float32 convolutions on AVX2 as im2col and one data-tiled matmul.

On an AVX2 target (`CompileOptions.tile_lanes` 8), IREE's direct convolution code for outputs at
most 7 pixels wide stays slow whatever register tiles `cpu-tiles` gives it. Here the input's
windows are copied into a [OH*OW, KH*KW*C] matrix by one `linalg.generic` (strides and
dilations in its indexing map), which IREE fuses into the packing of the matmul's left operand;
the weights are a constant [KH*KW*C, F] matrix, and the product runs on IREE's mmt4d ukernel
(measurements: docs/performance.md).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import linalg

from estuary.backends.llvm_cpu.lowering.pointwise import NARROW, matmul_bias
from estuary.passes.lowering import common as C
from estuary.passes.lowering.matvec import zeros
from estuary.passes.lowering.pointwise import constant_array


def weights(x: ir.Value, w_oihw: ir.Value, strides: Sequence[int], dilations: Sequence[int],
            lanes: int | None) -> np.ndarray | None:
    """The constant OIHW weights of a convolution this form applies to, else None: AVX2, batch 1,
    float32, a window larger than 1x1 (`conv` checks that the output is at most NARROW wide)."""
    n, h, wd, c = C.shape_of(x)
    f, i, kh, kw = C.shape_of(w_oihw)
    if lanes != 8 or n != 1 or i != c or kh * kw == 1:
        return None
    if C.element_of(x) != ir.F32Type.get() or C.element_of(w_oihw) != ir.F32Type.get():
        return None
    return constant_array(w_oihw)


def conv(x: ir.Value, w_oihw: np.ndarray, bias: ir.Value, pad: Sequence[int], strides: Sequence[int],
         dilations: Sequence[int]) -> ir.Value | None:
    """x [1, H, W, C] NHWC, constant w_oihw (numpy), bias [F] -> [1, OH, OW, F], or None when
    the output is wider than NARROW."""
    _, h, wd, c = C.shape_of(x)
    f, _, kh, kw = w_oihw.shape
    pt, pb, pl, pr = (int(p) for p in pad)
    sh, sw = (int(s) for s in strides)
    dh, dw = (int(d) for d in dilations)
    oh = (h + pt + pb - ((kh - 1) * dh + 1)) // sh + 1
    ow = (wd + pl + pr - ((kw - 1) * dw + 1)) // sw + 1
    if ow > NARROW or oh < 1 or ow < 1:
        return None
    # the rows and columns the windows read: the end padding may be partly unused
    rows, cols = (oh - 1) * sh + (kh - 1) * dh + 1, (ow - 1) * sw + (kw - 1) * dw + 1
    xp = C.pad_constant(x, [(0, 0), (pt, max(0, rows - pt - h)), (pl, max(0, cols - pl - wd)), (0, 0)],
                        0.0, "float32")
    hp, wp = C.shape_of(xp)[1:3]
    f32 = ir.F32Type.get()
    d = [ir.AffineDimExpr.get(k) for k in range(5)]  # oh, ow, kh, kw, c
    maps = [ir.AffineMap.get(5, 0, [d[0] * sh + d[2] * dh, d[1] * sw + d[3] * dw, d[4]]),
            ir.AffineMap.get(5, 0, d)]
    patches = linalg.GenericOp([C.tensor_type([oh, ow, kh, kw, c], f32)], [C.reshape(xp, [hp, wp, c])],
                               [zeros([oh, ow, kh, kw, c])],
                               ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]),
                               ir.ArrayAttr.get([ir.Attribute.parse(C.PARALLEL)] * 5))
    block = patches.regions[0].blocks.append(f32, f32)
    with ir.InsertionPoint(block):
        linalg.YieldOp([block.arguments[0]])
    w_kf = np.ascontiguousarray(np.transpose(w_oihw, (2, 3, 1, 0)).reshape(kh * kw * c, f))
    return matmul_bias(C.reshape(patches.result, [oh * ow, kh * kw * c]), C.const(w_kf, "float32"), bias, oh, ow)
