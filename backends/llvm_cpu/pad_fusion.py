"""Padding of int8 convolutions fused into them instead of materialized (llvm-cpu).

llvm-cpu's quantized convolution lowering (passes/lowering/quantized.py with the CPU's forms,
lowering/forms.py) puts a padded int8 convolution's input behind a `util.optimization_barrier`
marked INT8_PAD_BARRIER (contract.py), so that IREE does not write the producing int8 product
straight into the padded buffer (which keeps that product off its VNNI matmul ukernel).
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

from estuary.backends.llvm_cpu import contract
from estuary.base.options import CompileOptions
from estuary.passes import register

FLAG = "--iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops=true"
_CONVOLUTIONS = ("tosa.conv2d", "tosa.depthwise_conv2d")
_PADDED = _CONVOLUTIONS + ("tosa.conv3d", "tosa.transpose_conv2d", "tosa.avg_pool2d", "tosa.max_pool2d")


def _padded(op: ir.OpView) -> bool:
    for key in ("pad", "out_pad"):
        if key in op.attributes and any(ir.DenseI64ArrayAttr(op.attributes[key])):
            return True
    return False


def _blocks_fusion(op: ir.OpView) -> bool:
    """Whether `op` pads in a way the consumer fusion harms: any tensor.pad, a tosa.pad other than
    an int8 matrix-vector product's depth padding (INT8_DEPTH_PAD), and a padded TOSA convolution
    or pooling other than an int8 2-D convolution."""
    name = op.name
    if name == "tensor.pad":
        return True
    if name == "tosa.pad":
        return not contract.marked(op, contract.INT8_DEPTH_PAD)
    if name in _PADDED and _padded(op):
        element = ir.RankedTensorType(op.operands[0].type).element_type
        return not (name in _CONVOLUTIONS and str(element) == "i8")
    return False


def fuse_int8_padding(module: ir.Module) -> bool:
    """Remove the INT8_PAD_BARRIER barriers and return True when every padding of `module` is an
    int8 convolution's (the caller then adds FLAG); otherwise leave the module as it is."""
    barriers: list[ir.OpView] = []
    blocked = False

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal blocked
        view = op.opview
        if view.name == "util.optimization_barrier" and contract.marked(view, contract.INT8_PAD_BARRIER):
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
