"""WebNN method mappings: one registration per MLGraphBuilder method, in one module per op family.

A mapping receives an `OpContext` (importers/webnn/converter.py) and the method's arguments in
the spec's positional order, operands already resolved to nn Values, and returns the output
Value(s). The same functions serve the JSON importer and the Python MLGraphBuilder, so both
validate exactly alike. Registration metadata: `params` (positional parameter names, the last
usually "options"), `operands` (parameters that are operands or lists of them), `options`
(allowed option names; None: the method takes no options dict), `option_operands` (options
that are operands) and `defaults` (values of trailing parameters).
"""
from __future__ import annotations

from typing import Any

from estuary.importers.registry import ImportRegistry


def _meta(meta: dict[str, Any]) -> dict[str, Any]:
    """The metadata a WebNN registration gives, completed (sets; options always allow 'label')."""
    unknown = set(meta) - {"params", "operands", "options", "option_operands", "defaults"}
    if unknown or "params" not in meta:
        raise TypeError(f"WebNN registrations take params= and some of operands=, options=, "
                        f"option_operands=, defaults=; got {sorted(meta)}")
    options = meta.get("options")
    option_operands = set(meta.get("option_operands", ()))
    return {"params": list(meta["params"]), "operands": set(meta.get("operands", ())),
            "option_operands": option_operands,
            "options": None if options is None else set(options) | option_operands | {"label"},
            "defaults": dict(meta.get("defaults") or {})}


OPS = ImportRegistry("webnn", _meta)
