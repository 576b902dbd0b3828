"""llvm-cpu's forms of a float32 1x1 convolution, built on the generic product
(passes/lowering/pointwise.py), for `cpu-tiles` (`CompileOptions.tile_lanes`).

On AVX2 (8 lanes) an unstrided product at most NARROW pixels wide (49 rows) is a plain
`linalg.matmul`, which IREE data-tiles onto its mmt4d ukernel even when the next op pads: faster
there than the generic with the best AVX2 tiles.

Products with many output channels take their weights in blocks of B output channels,
[F / B, C, B], one loop more (f // B, f % B); `tile_rules.pointwise_block` picks B. With [C, F]
weights each reduction step of a 32-channel register tile reads 128 bytes at a stride of F
floats; with F a power of two those rows fall into a few cache sets and evict each other. In
blocks the tile reads one contiguous run. Blocked: AVX2 from 128 channels at even widths
(B = 32), AVX-512 from 512 channels (B = 32, or 64 at width <= 7), and AVX-512 projections (a
product of a depthwise convolution's result that no padding follows). Narrower AVX-512 products
gained nothing, and a blocked product followed by a padding consumer costs a copy into the
padded buffer (IREE does not write through the reshape of the blocked result). A product whose
result is transposed later keeps [C, F] weights. Measurements: docs/performance.md.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import linalg, tosa

from estuary.backends.llvm_cpu.tile_rules import pointwise_block
from estuary.passes.lowering import RuleContext, pointwise
from estuary.passes.lowering import common as C
from estuary.passes.lowering.matvec import zeros

NARROW = 7  # on AVX2, unstrided products at most this wide are a plain matmul (data-tiled)


def conv1x1(n: RuleContext, x: ir.Value, w_cf: np.ndarray, bias: ir.Value, strides: Sequence[int], *,
            blocked: bool, padded: bool) -> ir.Value:
    """x [N, H, W, C] NHWC, w_cf [C, F] (pointwise.weights), bias [F] -> [N, OH, OW, F] float32 in
    the form for the target's lanes (`n.options.tile_lanes`): the plain matmul, blocked weights, or
    the generic [C, F] product. `blocked=False` keeps [C, F] weights (a result transposed later:
    IREE fuses the transpose into a blocked product, whose writes then go across the pixels);
    `padded`: the result is padded later (then not a `projection`)."""
    lanes = n.options.tile_lanes
    nb, h, wd, c = C.shape_of(x)
    f = w_cf.shape[1]
    _, oh, ow = pointwise.output_size(x, strides)
    strided = any(int(s) > 1 for s in strides)
    if lanes == 8 and not strided and ow <= NARROW:
        y = matmul_bias(C.reshape(x, [nb * h * wd, c]), C.const(w_cf, "float32"), bias, nb * oh, ow)
        return C.reshape(y, [nb, oh, ow, f])
    block = blocked and pointwise_block(nb * oh, ow, f, lanes, strided=strided,
                                        projection=not padded and projection(x))
    if not block:
        return pointwise.conv1x1(n.run, x, w_cf, bias, strides)
    # tile_rules.blocked_pointwise_tiles: loops oh, ow, f // block, f % block, c; weights [F // block, C, block]
    image = pointwise.pixels(x, strides)
    blocks = np.ascontiguousarray(w_cf.reshape(c, f // block, block).transpose(1, 0, 2))
    d = [ir.AffineDimExpr.get(i) for i in range(5)]
    maps = [[d[0], d[1], d[4]], [d[2], d[4], d[3]], [d[0], d[1], d[2], d[3]]]
    product = pointwise.product(n.run, image, C.const(blocks, "float32"), [nb * oh, ow, f // block, block], maps)
    return pointwise.with_bias(product, bias, [nb, oh, ow, f])


def matmul_bias(rows: ir.Value, w: ir.Value, bias: ir.Value, oh: int, ow: int) -> ir.Value:
    """rows [OH*OW, K] times the constant w [K, F], plus bias [F] -> [1, OH, OW, F] float32: a
    plain `linalg.matmul`, which IREE data-tiles (the AVX2 forms here and in im2col.py)."""
    f = C.shape_of(w)[1]
    product = linalg.matmul(rows, w, outs=[zeros([oh * ow, f])])
    return tosa.add(C.tensor_type([1, oh, ow, f], ir.F32Type.get()), C.reshape(product, [1, oh, ow, f]),
                    C.reshape(bias, [1, 1, 1, f]))


def projection(x: ir.Value) -> bool:
    """True when NHWC `x` is a depthwise convolution's result (through its bias, activation or
    reshapes): a product of it that no padding follows is a projection (MobileNetV2's linear
    bottlenecks), which takes blocked weights (`tile_rules.pointwise_block`)."""
    return pointwise.produced_by(x, lambda op: op.name == "tosa.depthwise_conv2d")
