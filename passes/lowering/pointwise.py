"""Float32 1x1 convolutions as one `linalg.generic` with [C, F] weights.

TOSA's conv2d with a 1x1 filter reaches IREE as a matmul-like op whose weights are [F, C], the
reduction innermost in both operands. When the next op pads its input (a depthwise 3x3
convolution in MobileNet), IREE writes the product straight into the padded buffer and does not
data-tile it, and its own vector tiles for that form (7 pixels x 16 channels x 16 reduction
lanes) are slow. Built here with [C, F] weights, the product has the broadcast-and-FMA shape of
IREE's direct convolutions, and llvm-cpu's `cpu-tiles` gives it the same register tiles as those
(7-8 pixels x 32-64 channels; it recognizes the op by its indexing maps).

Without a padding consumer IREE still data-tiles the product (mmt4d), as it did the TOSA form.
A strided 1x1 convolution reads a strided `tensor.extract_slice` of its input, which IREE folds
into the product's dispatch as a strided view. (With the stride in the input's indexing map
instead, IREE 3.13 recognized the product as a contraction only in some graphs: in ResNet-50's
downsampling blocks, whose input also feeds an unstrided 1x1 convolution, it became a far
slower generic reduction.) A global pooling of such a product (MobileNet's last layer,
7x7x1024x1024) reads it through one extra zero row (`pad_for_pooling`), so that there too IREE
writes the product into a padded buffer instead of data-tiling it, and stops fusing the
packing of the product's input into the depthwise convolution before it.

This is the form on every target. llvm-cpu's own forms of the product (a plain matmul on AVX2,
weights in blocks of output channels) are in backends/llvm_cpu/lowering/pointwise.py and build
on the pieces here. Measurements of each form: docs/performance.md.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import arith, linalg, tosa

from estuary.dialects.graph import constant_value
from estuary.passes.lowering import LoweringRun
from estuary.passes.lowering import common as C
from estuary.passes.lowering.matvec import zeros

_PRODUCTS = "pointwise products"  # LoweringRun.cache: the product ops built here, for pad_for_pooling
_PASS_THROUGH = ("tosa.add", "tosa.clamp", "tosa.reshape", "tosa.mul", "tosa.maximum", "tosa.minimum")


def constant_array(value: ir.Value) -> np.ndarray | None:
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


def weights(x: ir.Value, w_oihw: ir.Value, pad: Sequence[int], dilations: Sequence[int],
            strides: Sequence[int] = (1, 1)) -> np.ndarray | None:
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


def output_size(x: ir.Value, strides: Sequence[int]) -> tuple[int, int, int]:
    """(N, OH, OW) of a 1x1 convolution of NHWC `x` with `strides`."""
    n, h, wd, _ = C.shape_of(x)
    sh, sw = (int(s) for s in strides)
    return n, (h - 1) // sh + 1, (wd - 1) // sw + 1


def pixels(x: ir.Value, strides: Sequence[int]) -> ir.Value:
    """NHWC `x` as the [N * OH, OW, C] pixels a 1x1 convolution reads: a batch (unstrided) is one
    image N times as high, a stride a strided slice (batch 1 when strided: `weights`)."""
    n, h, wd, c = C.shape_of(x)
    _, oh, ow = output_size(x, strides)
    image = C.reshape(x, [n * h, wd, c])
    if any(int(s) > 1 for s in strides):
        image = C.strided_slice(image, [0, 0, 0], [oh, ow, c], [int(strides[0]), int(strides[1]), 1])
    return image


def conv1x1(run: LoweringRun, x: ir.Value, w_cf: np.ndarray, bias: ir.Value, strides: Sequence[int]) -> ir.Value:
    """x [N, H, W, C] NHWC, w_cf [C, F] (from `weights`), bias [F] -> [N, OH, OW, F] float32: one
    product over the loops (oh, ow, f, c) with [C, F] weights (`run`: the lowering run)."""
    n, oh, ow = output_size(x, strides)
    f = w_cf.shape[1]
    image = pixels(x, strides)
    d = [ir.AffineDimExpr.get(i) for i in range(4)]
    maps = [[d[0], d[1], d[3]], [d[3], d[2]], [d[0], d[1], d[2]]]
    return with_bias(product(run, image, C.const(w_cf, "float32"), [n * oh, ow, f], maps), bias, [n, oh, ow, f])


def product(run: LoweringRun, x: ir.Value, weights: ir.Value, out_shape: list[int],
            maps: list[list[ir.AffineExpr]]) -> ir.Value:
    """The multiply-accumulate generic over len(out_shape) parallel loops and one reduction loop,
    the last (`maps`: the input's, the weights' and the output's results), recorded in `run` for
    `pad_for_pooling`."""
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
    run.cache.setdefault(_PRODUCTS, set()).add(op.operation)
    return op.result


def with_bias(product: ir.Value, bias: ir.Value, shape: list[int]) -> ir.Value:
    """A product of a 1x1 convolution as its NHWC result `shape` [N, OH, OW, F], plus bias [F]."""
    f32 = ir.F32Type.get()
    return tosa.add(C.tensor_type(shape, f32), C.reshape(product, shape), C.reshape(bias, [1, 1, 1, shape[3]]))


def pad_for_pooling(run: LoweringRun, x: ir.Value) -> bool:
    """True when NHWC `x` is a 1x1 convolution's product built in this lowering `run` (through
    its bias, activation or reshapes), so a global pooling of it should read it through an extra
    zero row."""
    built = run.cache.get(_PRODUCTS, set())
    return produced_by(x, lambda op: op in built)


def produced_by(x: ir.Value, match: Callable[[ir.Operation], bool]) -> bool:
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
