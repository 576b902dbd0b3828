"""lower-nn-to-tosa and the passes beside it: replace every nn op by TOSA/linalg (rules in
passes/lowering/) and decompose compound ops. The targets' passes on the lowered module are
registered by their backends (backends/spirv.py, backends/llvm_cpu/pad_fusion.py)."""
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
