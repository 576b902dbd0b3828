"""Float32 1x1 convolutions as one `linalg.generic` with [C, F] weights, for `cpu-tiles`.

TOSA's conv2d with a 1x1 filter reaches IREE as a matmul-like op whose weights are [F, C], the
reduction innermost in both operands. When the next op pads its input (a depthwise 3x3
convolution in MobileNet), IREE writes the product straight into the padded buffer and does not
data-tile it, and its own vector tiles for that form (7 pixels x 16 channels x 16 reduction
lanes) are slow. Built here with [C, F] weights, the product has the broadcast-and-FMA shape of
IREE's direct convolutions, and `cpu-tiles` gives it the same register tiles as those (7-8
pixels x 32-64 channels; it recognizes the op by its indexing maps).

Without a padding consumer IREE still data-tiles the product (mmt4d), as it did the TOSA form.
A strided 1x1 convolution reads a strided `tensor.extract_slice` of its input, which IREE folds
into the product's dispatch as a strided view. (With the stride in the input's indexing map
instead, IREE 3.13 recognized the product as a contraction only in some graphs: in ResNet-50's
downsampling blocks, whose input also feeds an unstrided 1x1 convolution, it became a far
slower generic reduction.) A global pooling of such a product (MobileNet's last layer,
7x7x1024x1024) reads it through one extra zero row (`pad_for_pooling`), so that there too IREE
writes the product into a padded buffer instead of data-tiling it, and stops fusing the
packing of the product's input into the depthwise convolution before it.

On AVX2 (8-lane registers: `CompileOptions.cpu_lanes`), an unstrided product at most NARROW
pixels wide (49 rows) is a plain `linalg.matmul`, which IREE data-tiles onto its mmt4d ukernel
even when the next op pads: faster there than the generic with the best AVX2 tiles.

Products with many output channels take their weights in blocks of B output channels,
[F / B, C, B], one loop more (f // B, f % B); `tile_rules.pointwise_block` picks B. With [C, F]
weights each reduction step of a 32-channel register tile reads 128 bytes at a stride of F
floats; with F a power of two those rows fall into a few cache sets and evict each other. In
blocks the tile reads one contiguous run. Blocked: AVX2 from 128 channels at even widths
(B = 32), AVX-512 from 512 channels (B = 32, or 64 at width <= 7). Narrower AVX-512 products
gained nothing, and a blocked product followed by a padding consumer costs a copy into the
padded buffer (IREE does not write through the reshape of the blocked result).
Measurements of each form: docs/performance.md.
"""
import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import arith, linalg, tosa

from estuary.backends.llvm_cpu.tile_rules import pointwise_block
from estuary.dialects.graph import constant_value
from estuary.passes.lowering import common as C
from estuary.passes.lowering.matvec import zeros

NARROW = 7  # on AVX2, unstrided products at most this wide are a plain matmul (data-tiled)
TAG = "estuary.pointwise"  # on the product generic, read by pad_for_pooling while lowering
_PASS_THROUGH = ("tosa.add", "tosa.clamp", "tosa.reshape", "tosa.mul", "tosa.maximum", "tosa.minimum")


def constant_array(value):
    """The numpy value of a constant built from tosa.const by reshapes and transposes, else None.
    (IREE folds a transpose of a constant into its consumer's indexing map, so the [C, F]
    weights are built as a constant of their own.)"""
    owner = value.owner
    if not isinstance(owner, ir.OpView):
        return None
    op = owner.operation
    if op.name == "tosa.const":
        return constant_value(op.attributes["values"] if "values" in op.attributes else op.attributes["value"])
    inner = constant_array(op.operands[0]) if op.name in ("tosa.reshape", "tosa.transpose") else None
    if inner is None:
        return None
    if op.name == "tosa.reshape":
        return inner.reshape(C.shape_of(op.results[0]))
    return np.transpose(inner, list(ir.DenseI32ArrayAttr(op.attributes["perms"])))


def weights(x, w_oihw, pad, dilations, strides=(1, 1)):
    """The [C, F] weights of a float32 1x1 convolution with constant weights and no padding or
    dilation, batch 1 or unstrided, else None (the convolution stays TOSA's)."""
    n, _, _, c = C.shape_of(x)
    f, i, kh, kw = C.shape_of(w_oihw)
    if not ((n == 1 or list(strides) == [1, 1]) and kh == kw == 1 and i == c and not any(pad)
            and list(dilations) == [1, 1]
            and C.element_of(x) == ir.F32Type.get() and C.element_of(w_oihw) == ir.F32Type.get()):
        return None
    w = constant_array(w_oihw)
    return None if w is None else np.ascontiguousarray(w.reshape(f, c).T)


def conv1x1(x, w_cf, bias, strides, blocked=True, padded=False, lanes=None):
    """x [N, H, W, C] NHWC, w_cf [C, F] (from `weights`), bias [F] -> [N, OH, OW, F] float32.
    A batch (unstrided) is one image N times as high: a 1x1 convolution mixes no pixels.
    `blocked=False` keeps [C, F] weights (a result transposed later: IREE fuses the transpose
    into a blocked product, whose writes then go across the pixels); `padded`: the result is
    padded later (`projection`); `lanes`: the CPU target's float32 vector lanes, if known."""
    n, h, wd, c = C.shape_of(x)
    f = w_cf.shape[1]
    sh, sw = (int(s) for s in strides)
    oh, ow = (h - 1) // sh + 1, (wd - 1) // sw + 1
    rows = n * oh  # the batch's output rows (batch 1 when strided: `weights`)
    f32 = ir.F32Type.get()
    avx2 = lanes == 8
    if avx2 and sh == sw == 1 and ow <= NARROW:
        y = matmul_bias(C.reshape(x, [n * h * wd, c]), C.const(w_cf, "float32"), bias, rows, ow)
        return C.reshape(y, [n, oh, ow, f])
    d = [ir.AffineDimExpr.get(i) for i in range(5)]
    pixel = [d[0], d[1]]
    image = C.reshape(x, [n * h, wd, c])
    if sh > 1 or sw > 1:
        image = C.strided_slice(image, [0, 0, 0], [oh, ow, c], [sh, sw, 1])
    block = blocked and pointwise_block(rows, ow, f, lanes, strided=sh > 1 or sw > 1,
                                        projection=not padded and projection(x))
    if block:  # tile_rules.blocked_pointwise_tiles
        # loops oh, ow, f // block, f % block, c; weights [F // block, C, block]
        blocks = np.ascontiguousarray(w_cf.reshape(c, f // block, block).transpose(1, 0, 2))
        maps = [[*pixel, d[4]], [d[2], d[4], d[3]], [d[0], d[1], d[2], d[3]]]
        product = _product(image, C.const(blocks, "float32"), [rows, ow, f // block, block], maps)
    else:  # loops oh, ow, f, c; weights [C, F]
        maps = [[*pixel, d[3]], [d[3], d[2]], [d[0], d[1], d[2]]]
        product = _product(image, C.const(w_cf, "float32"), [rows, ow, f], maps)
    return tosa.add(C.tensor_type([n, oh, ow, f], f32), C.reshape(product, [n, oh, ow, f]),
                    C.reshape(bias, [1, 1, 1, f]))


def _product(x, weights, out_shape, maps):
    """The tagged multiply-accumulate generic over len(out_shape) parallel loops and one
    reduction loop, the last (`maps`: the input's, the weights' and the output's results)."""
    f32 = ir.F32Type.get()
    loops = len(out_shape) + 1
    iters = [ir.Attribute.parse(C.PARALLEL)] * (loops - 1) + [ir.Attribute.parse(C.REDUCTION)]
    op = linalg.GenericOp([C.tensor_type(out_shape, f32)], [x, weights], [zeros(out_shape)],
                          ir.ArrayAttr.get([ir.AffineMapAttr.get(ir.AffineMap.get(loops, 0, m)) for m in maps]),
                          ir.ArrayAttr.get(iters))
    block = op.regions[0].blocks.append(f32, f32, f32)
    with ir.InsertionPoint(block):
        a, b, acc = block.arguments
        linalg.YieldOp([arith.addf(acc, arith.mulf(a, b))])
    op.operation.attributes[TAG] = ir.UnitAttr.get()
    return op.result


def matmul_bias(rows, w, bias, oh, ow):
    """rows [OH*OW, K] times the constant w [K, F], plus bias [F] -> [1, OH, OW, F] float32: a
    plain `linalg.matmul`, which IREE data-tiles (the AVX2 forms here and in im2col.py)."""
    f = C.shape_of(w)[1]
    product = linalg.matmul(rows, w, outs=[zeros([oh * ow, f])])
    return tosa.add(C.tensor_type([1, oh, ow, f], ir.F32Type.get()), C.reshape(product, [1, oh, ow, f]),
                    C.reshape(bias, [1, 1, 1, f]))


def projection(x):
    """True when NHWC `x` is a depthwise convolution's result (through its bias, activation or
    reshapes): a product of it that no padding follows is a projection (MobileNetV2's linear
    bottlenecks), which takes blocked weights (`tile_rules.pointwise_block`)."""
    return _produced_by(x, lambda op: op.name == "tosa.depthwise_conv2d")


def pad_for_pooling(x):
    """True when NHWC `x` is a 1x1 convolution's product (through its bias, activation or
    reshapes), so a global pooling of it should read it through an extra zero row."""
    return _produced_by(x, lambda op: TAG in op.attributes)


def _produced_by(x, match):
    """True when `match` holds for the op computing `x` through bias, activation (a unary
    generic) or reshapes."""
    for _ in range(6):
        owner = x.owner
        if not isinstance(owner, ir.OpView):
            return False
        op = owner.operation
        if match(op):
            return True
        unary = op.name == "linalg.generic" and list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))[0] == 1
        if op.name not in _PASS_THROUGH and not unary:
            return False
        x = op.operands[0]
    return False
