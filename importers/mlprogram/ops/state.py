"""iOS18 states: read_state gives a state's current value, write_state replaces it. A compiled
model has no memory between runs, so a state is an input (its value before the run) and an
output of the same name (its value after the run); see docs/mlprogram.md "States". A float16
state stores float16 values: a write rounds to float16, so a read later in the same run sees what
the next run will read (the float32 computing of docs/mlprogram.md "float16" stops at the state)."""
from __future__ import annotations

from typing import Any

from estuary.importers.mlprogram.ops import OPS


def _state(c: Any, op: Any) -> Any:
    from estuary.importers.mlprogram.converter import State

    s = c.arg(op, "input")
    c.check(isinstance(s, State), "input is not a state")
    return s


@OPS.op("read_state", since=18)
def convert_read_state(c: Any, op: Any) -> Any:
    return _state(c, op).value


@OPS.op("write_state", since=18)
def convert_write_state(c: Any, op: Any) -> Any:
    s = _state(c, op)
    data = c.x(op, "data")
    c.check(list(c.spec(data).shape) == list(c.spec(c.value(s.value)).shape),
            f"data of shape {list(c.spec(data).shape)} does not fit state {s.name!r}")
    if s.dtype == "float16":  # what the state stores: later reads in this run see float16 values too
        data = c.op("cast", [c.op("cast", [data], to="float16")], to="float32")
    s.value = data
    return []
