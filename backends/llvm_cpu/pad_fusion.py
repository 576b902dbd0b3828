"""Padding of int8 convolutions fused into them instead of materialized (llvm-cpu).

The quantized convolution lowering (passes/lowering/quantized.py) puts a padded int8 convolution's
input behind a tagged `util.optimization_barrier`, so that IREE does not write the producing int8
product straight into the padded buffer (which keeps that product off its VNNI matmul ukernel).
The barrier costs a submission and a copy per layer. IREE can instead fuse each pad into its
consumer (`--iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops`): the product
then writes a plain buffer and the convolution reads it with the padding in its own tiles, with
no barrier needed. That flag applies to the whole module, and it is a loss or a failure for other
padded ops (float convolutions lose their tile choices, ResNet-18 ran 3.6x slower; a padded int32
pool sum fails to compile), so it is used only when every padding in the module is an int8
convolution's (docs/design.md, "int8 products before padded convolutions").
"""
from __future__ import annotations

from typing import Any

from iree.compiler import ir

from estuary.base.options import CompileOptions
from estuary.passes import register

BARRIER_TAG = "estuary.int8_pad_barrier"  # set on the barriers this pass may remove
DEPTH_PAD_TAG = "estuary.int8_depth_pad"  # an int8 matrix-vector product's depth padding (harmless)
FLAG = "--iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops=true"
_CONVOLUTIONS = ("tosa.conv2d", "tosa.depthwise_conv2d")
_PADDED = _CONVOLUTIONS + ("tosa.conv3d", "tosa.transpose_conv2d", "tosa.avg_pool2d", "tosa.max_pool2d")


def _padded(op: ir.OpView) -> bool:
    for key in ("pad", "out_pad"):
        if key in op.attributes and any(ir.DenseI64ArrayAttr(op.attributes[key])):
            return True
    return False


def _blocks_fusion(op: ir.OpView) -> bool:
    """Whether `op` pads in a way the consumer fusion harms: any tensor.pad, an untagged tosa.pad,
    and a padded TOSA convolution or pooling other than an int8 2-D convolution."""
    name = op.name
    if name == "tensor.pad":
        return True
    if name == "tosa.pad":
        return DEPTH_PAD_TAG not in op.attributes
    if name in _PADDED and _padded(op):
        element = ir.RankedTensorType(op.operands[0].type).element_type
        return not (name in _CONVOLUTIONS and str(element) == "i8")
    return False


def fuse_int8_padding(module: ir.Module) -> bool:
    """Remove the tagged barriers and return True when every padding of `module` is an int8
    convolution's (the caller then adds FLAG); otherwise leave the module as it is."""
    barriers: list[ir.OpView] = []
    blocked = False

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal blocked
        view = op.opview
        if view.name == "util.optimization_barrier" and BARRIER_TAG in view.attributes:
            barriers.append(view)
        elif _blocks_fusion(view):
            blocked = True
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    if blocked or not barriers:
        return False
    for barrier in barriers:
        for result, source in zip(barrier.results, barrier.operands):
            result.replace_all_uses_with(source)
        barrier.operation.erase()
    return True


@register("cpu-fuse-int8-padding")
def cpu_fuse_int8_padding(nn: Any, options: CompileOptions) -> dict[str, Any] | None:
    """After lowering, for llvm-cpu: when every padding is an int8 convolution's, drop the int8
    barriers and have IREE fuse the pads into the convolutions."""
    with nn.context, ir.Location.unknown():
        return {"fuse_int8_padding": True} if fuse_int8_padding(nn.module) else None
