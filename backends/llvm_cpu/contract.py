"""The attributes llvm-cpu's lowering writes into the lowered module for the backend's own later
stages: its one contract between lowering (backends/llvm_cpu/lowering/) and the stages that read
the lowered or IREE-configured module (pad_fusion.py, retune.py). Nothing else marks ops.

Why attributes at all: these readers run on IR that has passed through steps which rebuild or
regroup ops (IREE's dispatch formation and configuration; the pass pipeline between lowering and
IREE), so a Python-side record of the ops would not survive to them; the options travel
separately and are never written into the IR. Each mark is a unit attribute on one op:

MATVEC, `estuary.matvec`
    written by lowering/matvec.row_products: a batch-1 recurrent step's gate products and a
    one-row product, one multi-result generic. Read by retune.py `_retune_function`
    (`tile_rules.matvec_tiles`): IREE keeps the generic as built up to
    `executable-configurations`, where it looks like any other reduction; the mark says which
    ones get one output per vector step with the reduction as the vector.
UNIT_MATVEC, `estuary.unit_matvec`
    written by lowering/matvec.unit_products: the column-vector form of one-row and LSTM
    products. Read by retune.py `_retune_unit_products` (`tile_rules.unit_tiles`): the mark
    picks the dispatch's root among its fused consumers (an LSTM's gate math), which take its
    column steps too.
INT8_PAD_BARRIER, `estuary.int8_pad_barrier`
    written by lowering/forms.py `int8_padded_input`: the `util.optimization_barrier` before a
    padded int8 convolution. Read by pad_fusion.py: the barriers it may remove (no others) when it
    has IREE fuse the pads into the convolutions instead.
INT8_DEPTH_PAD, `estuary.int8_depth_pad`
    written by lowering/forms.py `int8_depth_padding`: the depth padding of an int8
    matrix-vector product's operands. Read by pad_fusion.py `_blocks_fusion`: such a pad does not
    stand in the way of fusing the convolutions' pads.

IREE drops the marks with the ops it lowers: they do not reach the artefact (checked 2026-11-29:
where nothing reads them, an LSTM's and MobileNet's vulkan-spirv .vmfb were byte-identical with
every `estuary.*` attribute stripped before IREE).
"""
from __future__ import annotations

from iree.compiler import ir

MATVEC = "estuary.matvec"
UNIT_MATVEC = "estuary.unit_matvec"
INT8_PAD_BARRIER = "estuary.int8_pad_barrier"
INT8_DEPTH_PAD = "estuary.int8_depth_pad"
ATTRIBUTES = (MATVEC, UNIT_MATVEC, INT8_PAD_BARRIER, INT8_DEPTH_PAD)


def mark(op: ir.Operation | ir.OpView, attribute: str) -> None:
    """Set one of ATTRIBUTES on `op` (the writers' side of the contract)."""
    assert attribute in ATTRIBUTES, attribute
    op.attributes[attribute] = ir.UnitAttr.get()


def marked(op: ir.Operation | ir.OpView, attribute: str) -> bool:
    """Whether `op` carries `attribute` (the readers' side)."""
    return attribute in op.attributes
