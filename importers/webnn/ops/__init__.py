"""WebNN method mappings: one registration per MLGraphBuilder method, in one module per op family.

A mapping receives an `OpContext` (importers/webnn/converter.py) and the method's arguments in
the spec's positional order, operands already resolved to nn Values, and returns the output
Value(s). The same functions serve the JSON importer and the Python MLGraphBuilder, so both
validate exactly alike. A registration states the method's signature in WebIDL (importers/webnn/idl.py):

    @OPS.op("argMax", params={"input": "MLOperand", "axis": "unsigned long"},
            options={"keepDimensions": "boolean = false", "outputDataType": 'MLOperandDataType = "int32"'})

`params`: the positional parameters in order, name -> type; `options`: the options dictionary's
members, name -> "type" or "type = default" (None: the method takes no options dict; every
dictionary has `label`); `defaults`: values of trailing positional parameters. The entry then
reads: `params` (the names, "options" last), `operands` (parameters that are operands or lists of
them), `options` (the option names), `option_operands`, `types` (every parameter's and option's
WebIDL type) and `option_defaults` (the dictionary defaults). scripts/webnn_signatures.py writes
the signatures for the JavaScript builder.
"""
from __future__ import annotations

from typing import Any

from estuary.importers.registry import ImportRegistry
from estuary.importers.webnn import idl

LABEL = 'USVString = ""'  # MLOperatorOptions, which every options dictionary inherits


def _meta(meta: dict[str, Any]) -> dict[str, Any]:
    """The metadata a WebNN registration gives, checked and completed."""
    unknown = set(meta) - {"params", "options", "defaults"}
    if unknown or not isinstance(meta.get("params"), dict):
        raise TypeError(f"WebNN registrations take params={{name: WebIDL type}} and some of options=, "
                        f"defaults=; got {sorted(meta)}")
    types: dict[str, str] = {}
    for name, text in meta["params"].items():
        types[name], default = idl.member(name, text)
        if default is not idl.NO_DEFAULT:
            raise TypeError(f"parameter {name!r}: positional parameters take defaults=, not {text!r}")
    options, option_defaults = meta.get("options"), {}
    if options is not None:
        for name, text in {**options, "label": LABEL}.items():
            if name in types:
                raise TypeError(f"option {name!r} is also a positional parameter")
            types[name], default = idl.member(name, text)
            if default is not idl.NO_DEFAULT:
                option_defaults[name] = default
    is_operand = {n for n, t in types.items() if t in (idl.OPERAND, idl.OPERANDS)}
    return {"params": [*meta["params"], *([] if options is None else ["options"])],
            "operands": is_operand & set(meta["params"]),
            "option_operands": is_operand - set(meta["params"]),
            "options": None if options is None else {*options, "label"},
            "types": types, "option_defaults": option_defaults,
            "defaults": dict(meta.get("defaults") or {})}


OPS = ImportRegistry("webnn", _meta)
