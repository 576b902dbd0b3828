"""The WebIDL types of MLGraphBuilder's arguments, as the WebNN registrations state them.

Each registration (importers/webnn/ops/) types its positional parameters and its options in the
spec's IDL spelling, an option with its dictionary default when the spec gives one:

    params={"input": "MLOperand", "axis": "unsigned long"},
    options={"keepDimensions": "boolean = false", "outputDataType": 'MLOperandDataType = "int32"'}

Every integer of the spec's operation signatures is `[EnforceRange]`, so the annotation is left
implied. `MLDimension` is Estuary's entry of reshape/expand's newShape and slice's starts/sizes:
an unsigned long, or a dynamic dimension (importers/webnn/dynamic.py, webmachinelearning/webnn#883).
scripts/webnn_signatures.py writes the registrations' types and ENUMS for the JavaScript builder
(js/webnn/lib/signatures.json), which converts arguments by them.
"""
from __future__ import annotations

import json
import math
import numbers
import re

import numpy as np

from estuary.base import dtypes
from estuary.importers.webnn import four_bit

# The enumerations the operations use, their values in the spec's order.
ENUMS: dict[str, tuple[str, ...]] = {
    "MLOperandDataType": (*dtypes.ALL, *four_bit.FOUR_BIT),
    "MLInputOperandLayout": ("nchw", "nhwc"),
    "MLConv2dFilterOperandLayout": ("oihw", "hwio", "ohwi", "ihwo"),
    "MLConvTranspose2dFilterOperandLayout": ("iohw", "hwoi", "ohwi"),
    "MLRoundingType": ("floor", "ceil"),
    "MLInterpolationMode": ("nearest-neighbor", "linear"),
    "MLPaddingMode": ("constant", "edge", "reflection"),
    "MLRecurrentNetworkDirection": ("forward", "backward", "both"),
    "MLRecurrentNetworkActivation": ("relu", "sigmoid", "tanh"),
    "MLGruWeightLayout": ("zrn", "rzn"),
    "MLLstmWeightLayout": ("iofg", "ifgo"),
}
# Values an earlier edition of the spec had and Estuary's importer still takes (the JSON form and
# the Python builder read graphs of either edition; the JavaScript builder follows the current one).
EARLIER: dict[str, tuple[str, ...]] = {
    "MLPaddingMode": ("symmetric",),  # the 2023 Candidate Recommendation's mirror padding with the edge
}

# The other types an argument may have (a sequence<T> of any of these or of an enumeration, too).
SCALARS = ("MLOperand", "unsigned long", "long", "float", "double", "boolean", "MLNumber", "USVString", "MLDimension")
UNIONS = ("(unsigned long or sequence<unsigned long>)",)  # split's splits

OPERAND, OPERANDS = "MLOperand", "sequence<MLOperand>"
_SEQUENCE = re.compile(r"sequence<(.+)>\Z")


def element(type_: str) -> str | None:
    """T of sequence<T>; None for another type."""
    m = _SEQUENCE.match(type_)
    return m.group(1) if m else None


def is_type(type_: str) -> bool:
    """Whether `type_` is one the registrations may use."""
    inner = element(type_)
    base = type_ if inner is None else inner
    return type_ in UNIONS or base in SCALARS or base in ENUMS


def member(name: str, text: str) -> tuple[str, object]:
    """A dictionary member or parameter, "type" or "type = default" (the default in JSON, as IDL
    writes it), as (type, default); the default is `NO_DEFAULT` when none is given."""
    type_, _, default_text = (part.strip() for part in text.partition("="))
    if not is_type(type_):
        raise TypeError(f"{name}: unknown WebIDL type {type_!r} in {text!r}")
    if not default_text:
        return type_, NO_DEFAULT
    try:
        default = json.loads(default_text)
    except json.JSONDecodeError:
        raise TypeError(f"{name}: the default of {text!r} is not a JSON value") from None
    if not conforms(default, type_):
        raise TypeError(f"{name}: the default {default!r} is not a {type_}")
    return type_, default


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT = _NoDefault()


def conforms(value: object, type_: str) -> bool:
    """Whether a value is one of `type_`'s: a JSON value (an operand: its name), or the Python
    builder's (tuples, numpy numbers and arrays)."""
    inner = element(type_)
    if inner is not None:
        if isinstance(value, np.ndarray) and value.ndim == 1:
            value = list(value)
        return isinstance(value, (list, tuple)) and all(conforms(v, inner) for v in value)
    if type_ in UNIONS:
        return conforms(value, "unsigned long") or conforms(value, "sequence<unsigned long>")
    if type_ in ENUMS:
        return value in ENUMS[type_] or value in EARLIER.get(type_, ())
    if type_ in ("MLOperand", "USVString"):
        return isinstance(value, str)
    if type_ == "boolean":
        return isinstance(value, bool)
    if type_ == "MLDimension":
        return isinstance(value, dict) or conforms(value, "unsigned long")
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        return False  # MLNumber is unrestricted, but JSON has no NaN or infinities
    if type_ in ("unsigned long", "long"):
        lo, hi = (0, 0xFFFFFFFF) if type_ == "unsigned long" else (-(1 << 31), (1 << 31) - 1)
        return isinstance(value, numbers.Integral) and lo <= int(value) <= hi
    return True  # float, double, MLNumber
