"""WebNN dynamic dimensions (webmachinelearning/webnn#883): `MLDynamicDimension` in JSON and back.

An input's shape entry is an integer or `{"name": "seq", "maxSize": 128}` (a symbol seq=1..128;
without "name" the symbol is called `<input>_<axis>`, the input's name made an identifier). The
same name in two inputs is one symbol and must have one maxSize. `reshape`/`expand` newShape and
`slice` starts/sizes take, besides integers, `{"name": "seq"}` (a symbol an input declared) and
`{"expression": "seq - 1"}` (an expression over declared symbols, in estuary.base.dims' text
form). Every other shape-like argument is a list of integers; constants have fixed shapes.

`ml_dimension` is the other direction, what `MLOperand.shape` reports: an int, a symbol as
`{"name", "maxSize"}`, and a derived dimension (`2*seq`, `seq + past`) as `{"name": <its text>,
"maxSize": <its largest value>}`; the builders turn such an entry, given back in a shape
argument, into `{"expression": <text>}` (`shape_entry`).
"""
from __future__ import annotations

from collections.abc import Mapping
import re
from typing import Any, TypeGuard

from estuary.base import dims
from estuary.base.dims import Dim, DimError

MAX_SIZE = (1 << 32) - 1  # maxSize is an [EnforceRange] unsigned long
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# MLDimension: an int, or a dict as MLOperand.shape reports it
MLDimension = int | dict[str, Any]


def _is_int(v: object) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def default_name(input_name: str, axis: int) -> str:
    """`<input>_<axis>` as an identifier (other characters become '_', a leading digit gets '_')."""
    base = re.sub(r"[^A-Za-z0-9_]", "_", input_name) or "input"
    return f"{'_' if base[0].isdigit() else ''}{base}_{axis}"


def input_dimension(entry: object, input_name: str, axis: int, symbols: Mapping[str, dims.Sym]) -> dims.Value:
    """One entry of an input's shape: a positive int, or an MLDynamicDimension as a symbol (with
    the bounds 1..maxSize). `symbols` holds those declared so far: a name used again must keep
    its maxSize. ValueError with the reason otherwise (the caller names the file and input)."""
    if _is_int(entry):
        if not 0 < entry <= MAX_SIZE:
            raise ValueError(f"dimension {axis} is {entry}; a dimension is a positive integer")
        return entry
    if not isinstance(entry, dict):
        raise ValueError(f"dimension {axis} is {entry!r}; expected a positive integer or "
                         f"{{\"name\": ..., \"maxSize\": ...}}")
    unknown = sorted(set(entry) - {"name", "maxSize"})
    if unknown:
        raise ValueError(f"dimension {axis} has unknown key(s) {unknown}; an MLDynamicDimension has 'name' and "
                         f"'maxSize'")
    name = entry.get("name", default_name(input_name, axis))
    size = entry.get("maxSize")
    if not isinstance(name, str) or not _IDENTIFIER.match(name):
        raise ValueError(f"dimension {axis}: the name {name!r} is not an identifier (letters, digits, '_', not "
                         f"starting with a digit)")
    if not _is_int(size) or not 0 < size <= MAX_SIZE:
        raise ValueError(f"dimension {axis} ({name}): maxSize must be a positive integer, got {size!r}")
    hi = min(size, dims.MAX_BOUND)
    have = symbols.get(name)
    if have is not None and have.hi != hi:
        raise ValueError(f"dimension {axis} is {name} with maxSize {size}, but an earlier input gave {name} the "
                         f"maxSize {have.hi}")
    return Dim.symbol(name, 1, hi)


def shape_argument(value: object, what: str, symbols: Mapping[str, dims.Sym]) -> list[dims.Value]:
    """A newShape / starts / sizes list: ints, `{"name": symbol}` and `{"expression": text}` entries
    as dimension values (ints and Dims). ValueError naming the entry otherwise."""
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{what} must be a list of integers or dimensions, got {value!r}")
    return [_entry(v, f"{what}[{i}]", symbols) for i, v in enumerate(value)]


def _entry(v: object, what: str, symbols: Mapping[str, dims.Sym]) -> dims.Value:
    if _is_int(v):
        return v
    if isinstance(v, dict) and set(v) <= {"name", "maxSize"} and "name" in v:
        name = v["name"]
        if not isinstance(name, str) or name not in symbols:
            declared = ", ".join(sorted(symbols)) or "none"
            hint = " (an expression is written {\"expression\": ...})" if isinstance(name, str) and not \
                _IDENTIFIER.match(name) else ""
            raise ValueError(f"{what} names {name!r}, which no input declares (declared: {declared}){hint}")
        return Dim.symbol(name, symbols[name].lo, symbols[name].hi)
    if isinstance(v, dict) and set(v) == {"expression"}:
        text = v["expression"]
        if not isinstance(text, str):
            raise ValueError(f"{what}: the expression must be a string, got {text!r}")
        try:
            return dims.parse(text, symbols)
        except DimError as e:
            raise ValueError(f"{what}: {e}") from None
    raise ValueError(f"{what} is {v!r}; expected an integer, {{\"name\": symbol}} or {{\"expression\": text}}")


def is_dynamic_entry(entry: object) -> bool:
    return isinstance(entry, dict)


def ml_dimension(d: dims.Value) -> MLDimension:
    """A dimension as `MLOperand.shape` reports it (see the module docstring)."""
    if not isinstance(d, Dim):
        return int(d)
    sym = d.sym
    return {"name": sym.name if sym is not None else str(d), "maxSize": d.upper()}


def json_dimension(d: dims.Value) -> MLDimension:
    """A dimension as a shape argument's JSON entry: an int, {"name": symbol} or {"expression": text}."""
    if not isinstance(d, Dim):
        return int(d)
    return {"name": d.sym.name} if d.sym is not None else {"expression": str(d)}


def ml_shape(shape: tuple[dims.Value, ...] | list[dims.Value]) -> list[MLDimension]:
    return [ml_dimension(d) for d in shape]


def shape_entry(v: object) -> object:
    """A shape argument's entry as the JSON form takes it: a reported derived dimension
    (`{"name": "2*seq", ...}`) becomes `{"expression": "2*seq"}`; anything else is unchanged."""
    if isinstance(v, dict) and isinstance(v.get("name"), str) and not _IDENTIFIER.match(v["name"]):
        return {"expression": v["name"]}
    return v
