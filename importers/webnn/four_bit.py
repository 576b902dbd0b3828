"""WebNN's int4 / uint4 operands: one value per int8 / uint8 element, within the 4-bit range.

Estuary has no 4-bit storage; a 4-bit operand is its 8-bit storage type inside (so every op that
takes int8 / uint8 takes it) and the graph remembers which values are 4-bit, for the operations
whose result depends on it (quantizeLinear saturates to the zero point's range) and for the
descriptors the Python API reports.
"""
from __future__ import annotations

from typing import Any

# WebNN data type -> (storage data type, lowest, highest value)
FOUR_BIT: dict[str, tuple[str, int, int]] = {"int4": ("int8", -8, 7), "uint4": ("uint8", 0, 15)}
_ATTR = "webnn_four_bit"


def storage(data_type: str) -> str:
    """The data type a WebNN operand of `data_type` has inside Estuary."""
    return FOUR_BIT[data_type][0] if data_type in FOUR_BIT else data_type


def value_range(data_type: str) -> tuple[int, int] | None:
    """(lowest, highest) of a 4-bit data type, else None."""
    return FOUR_BIT[data_type][1:] if data_type in FOUR_BIT else None


def mark(graph: Any, value: Any, data_type: str) -> Any:
    """Record that `value` of `graph` is a `data_type` (int4 / uint4) operand; returns it."""
    if data_type in FOUR_BIT:
        marks = getattr(graph, _ATTR, None)
        if marks is None:
            marks = {}
            setattr(graph, _ATTR, marks)
        marks[value] = data_type
    return value


def kind(graph: Any, value: Any) -> str | None:
    """"int4" / "uint4" when `value` was marked so, else None."""
    marks = getattr(graph, _ATTR, None)
    return marks.get(value) if marks else None
