"""lower-nn-to-tosa and the passes beside it: replace every nn op by TOSA/linalg (rules in
passes/lowering/), decompose compound ops, and the SPIR-V workaround on the lowered module."""
from iree.compiler import ir

from estuary.passes import register
from estuary.passes.lowering import lower_module


@register("lower-nn-to-tosa")
def lower_nn_to_tosa(nn, options):
    """Lower all nn ops to TOSA + linalg/tensor/arith/math; error naming any op left over."""
    with nn.context, ir.Location.unknown():
        return lower_module(nn.module, nn.source, options)


@register("nn-decompose")
def nn_decompose(nn, options):
    """Rewrite compound nn ops (gru, lstm, ...) into simpler nn ops, as their specs decompose them."""
    from estuary.passes.lowering import decompose_module

    with nn.context, ir.Location.unknown():
        decompose_module(nn.module, nn.source)


@register("spirv-isolate-reductions")
def spirv_isolate_reductions(nn, options):
    """After lowering, for the SPIR-V targets: an outer-axis reduction's result behind an
    optimization barrier (backends/spirv.py)."""
    from estuary.backends import spirv

    with nn.context, ir.Location.unknown():
        return {"isolated_reductions": spirv.isolate_outer_reductions(nn.module)}


@register("cpu-fuse-int8-padding")
def cpu_fuse_int8_padding(nn, options):
    """After lowering, for llvm-cpu: when every padding is an int8 convolution's, drop the int8
    barriers and have IREE fuse the pads into the convolutions (backends/llvm_cpu/pad_fusion.py)."""
    from estuary.backends.llvm_cpu import pad_fusion

    with nn.context, ir.Location.unknown():
        return {"fuse_int8_padding": True} if pad_fusion.fuse_int8_padding(nn.module) else None
