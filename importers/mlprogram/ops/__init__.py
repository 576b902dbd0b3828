"""MIL op converters, one module per family; `OPS` is the ML Program registry.

`@OPS.op("mil_name", since=15)` registers `fn(c, op)` (c: importers/mlprogram/converter.py's
`Context`, op: an `Op` view of the MIL operation); `since` is the first opset (iOS version) that
defines the op. The converter returns the op's result(s): nn Values, or numpy arrays when the
result is known at import (constants, constexpr weights).
"""
from typing import Any

from estuary.importers.registry import ImportRegistry


def _meta(meta: dict[str, Any]) -> dict[str, Any]:
    meta.setdefault("since", 15)
    return meta


OPS = ImportRegistry("mlprogram", _meta)
