"""lower-nn-to-tosa: replace every nn op by TOSA/linalg (rules in passes/lowering/)."""
from estuary.passes import register
from estuary.passes.lowering import lower_module


@register("lower-nn-to-tosa")
def lower_nn_to_tosa(nn):
    """Lower all nn ops to TOSA + linalg/tensor/arith/math; error naming any op left over."""
    from iree.compiler import ir

    with nn.context, ir.Location.unknown():
        lower_module(nn.module, nn.source)


@register("nn-decompose")
def nn_decompose(nn):
    """Rewrite compound nn ops (gru, lstm, ...) into simpler nn ops, as their specs decompose them."""
    from iree.compiler import ir

    from estuary.passes.lowering import decompose_module

    with nn.context, ir.Location.unknown():
        decompose_module(nn.module, nn.source)


@register("spirv-isolate-reductions")
def spirv_isolate_reductions(nn):
    """After lowering, for the SPIR-V targets: an outer-axis reduction's result behind an
    optimization barrier (spirv_workarounds.py; compile_nn applies it for vulkan/metal-spirv)."""
    from iree.compiler import ir

    from estuary.passes.lowering import spirv_workarounds

    with nn.context, ir.Location.unknown():
        spirv_workarounds.isolate_outer_reductions(nn.module)
