"""`CpuForms`: llvm-cpu's answers to the generic rules' hooks (passes/lowering/forms.py).

Convolutions: a float32 1x1 convolution takes pointwise.py's forms; a 3x3 one Winograd
(winograd.py, with `cpu-winograd`); a narrow one on AVX2 im2col and a matmul (im2col.py).
Products of one row: matvec.py's marked row and column-vector forms. int8: a padded quantized
convolution reads its input through a marked `util.optimization_barrier`. Without it IREE writes
the producing int8 product (a 1x1 convolution before MobileNet's depthwise layers) straight into
the padded buffer, which keeps it from data-tiling the product onto its VNNI matmul ukernel: the
product then ran 10-20x slower than the ukernel. When every padding of the module is an int8
convolution's, pad_fusion.py removes the barriers again and has IREE fuse each pad into its
convolution; otherwise they stay, at the cost of one more submission per layer and a copy into
the padded buffer (measurements: docs/performance.md).

The forms that depend on the vector width take it from `CompileOptions.tile_lanes` (8: AVX2,
16: AVX-512, None: the measured forms are off), the same value the tile rules get.
"""
from __future__ import annotations

from iree.compiler import ir
from iree.compiler.dialects import util

from estuary.backends.llvm_cpu import contract
from estuary.backends.llvm_cpu.lowering import im2col, matvec, pointwise, winograd
from estuary.passes.lowering import RuleContext
from estuary.passes.lowering import pointwise as generic_pointwise
from estuary.passes.lowering.forms import Convolution, Forms, GateProducts

WINOGRAD = "winograd"  # the lowering's side result: how many convolutions took the Winograd form


class CpuForms(Forms):
    def convolution(self, n: RuleContext, conv: Convolution) -> ir.Value | None:
        x, w, pad, strides, dilations = conv.x, conv.w_oihw, conv.pad, conv.strides, conv.dilations
        w_cf = generic_pointwise.weights(x, w, pad, dilations, strides)
        if w_cf is not None:
            return pointwise.conv1x1(n, x, w_cf, conv.bias, strides, blocked=not conv.transposed, padded=conv.padded)
        if self._winograd(n, conv) and winograd.applies(x, w, pad, strides, dilations):
            w_const = generic_pointwise.constant_array(w)
            if w_const is not None:
                n.run.results[WINOGRAD] = n.run.results.get(WINOGRAD, 0) + 1
                return winograd.conv3x3(x, w_const, conv.bias, pad)
        w_const = im2col.weights(x, w, strides, dilations, n.options.tile_lanes)
        return im2col.conv(x, w_const, conv.bias, pad, strides, dilations) if w_const is not None else None

    @staticmethod
    def _winograd(n: RuleContext, conv: Convolution) -> bool:
        """Whether `conv` may take the Winograd form: float32, `cpu-winograd` on, the op's whole
        convolution, and its result not transposed later (IREE fuses that transpose into the
        output pass, whose writes then go across the channels: many times slower)."""
        return n.out.dtype == "float32" and n.options.winograd and not conv.group and not conv.transposed

    def one_row_product(self, n: RuleContext, a: ir.Value, b: ir.Value) -> ir.Value | None:
        return matvec.one_row_product(n, a, b)

    def row_products(self, v: ir.Value, weights: list[ir.Value]) -> list[ir.Value]:
        return matvec.row_products(v, weights)

    def lstm_gate_products(self, n: RuleContext, rw: ir.Value, hidden: int, directions: int) -> GateProducts | None:
        return matvec.lstm_gate_products(n, rw, hidden, directions)

    def int8_padded_input(self, x8: ir.Value) -> ir.Value:
        barrier = util.optimization_barrier([x8.type], [x8])
        contract.mark(barrier.owner, contract.INT8_PAD_BARRIER)
        return barrier

    def int8_depth_padding(self, padded: ir.Value) -> ir.Value:
        contract.mark(padded.owner, contract.INT8_DEPTH_PAD)
        return padded


CPU = CpuForms()
