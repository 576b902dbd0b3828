"""The llvm-cpu lowering rules: the generic rules of the ops whose forms differ on llvm-cpu, run
with the CPU's forms (forms.py). Every other op takes its generic rule."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from estuary.backends.llvm_cpu.lowering.forms import CPU
from estuary.passes.lowering import RuleContext, convolution, lowering, matmul, quantized, recurrent
from estuary.passes.lowering.forms import Forms

GENERIC_RULES: dict[str, Callable[[RuleContext, Forms], Any]] = {
    "conv2d": convolution.lower_conv2d, "conv_transpose2d": convolution.lower_conv_transpose2d,
    "matmul": matmul.lower_matmul, "gemm": matmul.lower_gemm,
    "gru": recurrent.lower_gru, "gru_cell": recurrent.lower_gru_cell,
    "lstm": recurrent.lower_lstm, "lstm_cell": recurrent.lower_lstm_cell,
    "quantized_conv2d": quantized.lower_quantized_conv2d, "quantized_matmul": quantized.lower_quantized_matmul,
}


@lowering(*GENERIC_RULES, target="llvm-cpu")
def lower_with_cpu_forms(n: RuleContext) -> Any:
    """The op's generic rule with the CPU's forms."""
    return GENERIC_RULES[n.name](n, CPU)
