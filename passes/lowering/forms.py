"""The hooks where a target's lowering departs from the generic rules: `Forms`.

A generic rule with such a point takes a `forms` argument. Registered as the generic rule it runs
with `GENERIC` (this class: every hook keeps the generic form); a backend subclasses `Forms` and
registers rules for its target that call the same generic rule with its own forms
(backends/llvm_cpu/lowering/rules.py: `@lowering("conv2d", ..., target="llvm-cpu")`). So the
generic machinery (geometry, padding, grouping, the recurrence, requantization) exists once, and
what differs per target is a hook returning the target's form, or None where the generic form
stands. The hooks build at the current insertion point, like the rules.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from iree.compiler import ir

from estuary.passes.lowering import matvec

if TYPE_CHECKING:
    from estuary.passes.lowering import RuleContext


@dataclass(frozen=True)
class Convolution:
    """One ungrouped, not depthwise 2-D convolution as convolution.py builds it: NHWC `x`, OIHW
    weights, bias [F], TOSA's (top, bottom, left, right) padding, and what follows its result."""

    x: ir.Value
    w_oihw: ir.Value
    bias: ir.Value
    pad: Sequence[int]
    strides: Sequence[int]
    dilations: Sequence[int]
    transposed: bool = False  # the result is transposed later (an NCHW model output)
    padded: bool = False  # the result is padded later (a padded convolution or pooling reads it)
    group: bool = False  # one group of a grouped convolution, not the op's whole convolution


# v [K] -> one [nd, 1, hidden] value per gate block (an LSTM step's recurrent products)
GateProducts = Callable[[ir.Value], list[ir.Value]]


class Forms:
    """The generic forms; a target's subclass overrides the hooks where its forms differ."""

    def convolution(self, n: RuleContext, conv: Convolution) -> ir.Value | None:
        """`conv` -> [N, OH, OW, F] in the target's own form, else None: the generic 1x1 product
        (pointwise.py) or TOSA's conv2d."""
        return None

    def one_row_product(self, n: RuleContext, a: ir.Value, b: ir.Value) -> ir.Value | None:
        """A single row `a` [.., 1, K] times the constant matrix `b` [.., K, N] -> [1, N] float32
        in the target's own form, else None (tosa.matmul)."""
        return None

    def row_products(self, v: ir.Value, weights: list[ir.Value]) -> list[ir.Value]:
        """[v · w^T for w in weights] as one multi-result generic (matvec.row_products): a batch-1
        recurrent step's gate products."""
        return matvec.row_products(v, weights)

    def lstm_gate_products(self, n: RuleContext, rw: ir.Value, hidden: int, directions: int) -> GateProducts | None:
        """The recurrent products of every step of a batch-1 LSTM with recurrent weight `rw`
        [nd, 4 * hidden, K] in the target's own form (one function per network, called per step),
        else None (`row_products`)."""
        return None

    def int8_padded_input(self, x8: ir.Value) -> ir.Value:
        """The int8 input of a padded quantized convolution as the convolution reads it."""
        return x8

    def int8_depth_padding(self, padded: ir.Value) -> ir.Value:
        """An int8 matrix-vector product's operand padded along its depth (quantized.py
        `_pad_depth`), as the product reads it."""
        return padded


GENERIC = Forms()
