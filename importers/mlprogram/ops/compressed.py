"""Compressed weights kept compressed: a quantized or palettized constexpr weight whose only
consumers are matmul / linear / conv / conv_transpose weights becomes an int8 / uint8 constant
and the few graph ops that expand it (cast, subtract the offset, multiply by the scale; or a
gather from the palette), instead of a float32 constant expanded at import.

IREE does not fold a widening cast of a constant into a new constant, so the artefact stores
the narrow data and the expansion runs inside the dispatches, fused with the consumer where
IREE can (docs/mlprogram.md "Compressed weights" has the sizes and times). Forms that would not
shrink (sparse masks, vector palettes, 16-bit data) are expanded at import as before.
"""
from __future__ import annotations

from typing import Any

import numpy as np

WEIGHT_INPUTS = {"linear": ("weight",), "matmul": ("x", "y"), "conv": ("weight",), "conv_transpose": ("weight",)}
NARROW = (np.int8, np.uint8)


def feeds_weights_only(c: Any, op: Any) -> bool:
    """Whether every use of op's result is a weight input of a matmul-like op (not a block
    output, not another op's operand)."""
    name = op.outputs[0]
    if len(op.outputs) != 1 or name in c.block.outputs:
        return False
    uses = _uses(c).get(name, [])
    return bool(uses) and all(key in WEIGHT_INPUTS.get(kind, ()) for kind, key in uses)


def _uses(c: Any) -> dict[str, list[tuple[str, str]]]:
    """{value name: [(consumer op type, input name)]} of the function, nested blocks included
    (built once per conversion)."""
    from estuary.importers.mlprogram.converter import walk

    cached = getattr(c, "_value_uses", None)
    if cached is not None and cached[0] is c.block:
        return cached[1]
    uses: dict[str, list[tuple[str, str]]] = {}
    for proto in walk(c.block.operations):
        for key, arg in proto.inputs.items():
            for b in arg.arguments:
                if b.WhichOneof("binding") == "name":
                    uses.setdefault(b.name, []).append((proto.type, key))
    c._value_uses = (c.block, uses)
    return uses


def _split_blocks(shape: list[int], param_shape: list[int]) -> tuple[list[int], list[int]]:
    """Shapes that put each block of a block-wise parameter on its own axis: data [.., p, b, ..]
    and parameter [.., p, 1, ..] for every axis of the data."""
    data, param = [], []
    for d, p in zip(shape, param_shape):
        data += [p, d // p]
        param += [p, 1]
    return data, param


def shift_scale(c: Any, data: np.ndarray, scale: np.ndarray, offset: Any) -> Any:
    """scale * (data - offset) with block-wise parameters (same rank as data), as graph ops on a
    narrow constant."""
    shape = list(data.shape)
    split, pshape = _split_blocks(shape, list(np.shape(scale)))
    x = c.reshape(c.op("cast", [c.const(data)], to="float32"), split)
    if offset is not None and np.any(offset):
        off = np.asarray(offset, np.float32)
        _, oshape = _split_blocks(shape, list(off.shape))
        x = c.op("sub", [x, c.const(off.reshape(oshape), "float32")])
    x = c.op("mul", [x, c.const(np.asarray(scale, np.float32).reshape(pshape), "float32")])
    return c.reshape(x, shape)


def per_axis(param: np.ndarray, axis: int, rank: int, size: int) -> np.ndarray:
    """An iOS16 scalar or per-channel parameter as a block-wise one of full rank."""
    p = np.asarray(param)
    shape = [1] * rank
    if p.size > 1:
        shape[axis] = size
    return p.reshape(shape)


def palette(c: Any, indices: np.ndarray, lut: np.ndarray) -> Any:
    """lut [*G, P, 1] read at uint8 `indices`: the palette rows of each group repeated over
    the group's blocks on axis 0 (the output channels) and read with gather_elements, or one
    gather from a single palette. None for other groupings."""
    rank = indices.ndim
    groups = lut.shape[:rank]
    p = lut.shape[-2]
    idx = c.op("cast", [c.const(indices.astype(np.uint8))], to="int32")
    if all(g == 1 for g in groups):
        return c.op("gather", [c.const(lut.reshape(p).astype(np.float32), "float32"), idx], axis=0)
    if any(g != 1 for g in groups[1:]):
        return None
    out = indices.shape[0]
    rows = np.repeat(lut.reshape(groups[0], p).astype(np.float32), out // groups[0], axis=0)  # [out, P]
    flat = c.reshape(idx, [out, indices.size // out])
    y = c.op("gather_elements", [c.const(rows, "float32"), flat], axis=1)
    return c.reshape(y, list(indices.shape))
