"""Values of the tract-semantics reader (tract_reader.py): tensors that are nn Values, values known
when the model is imported, and the folding of operations on known values.

tract folds what it can while it reads a model: a variable, a literal, the shape of a tensor
(`tract_core_shape_of`) are constants, and an operation on constants is a constant. A tensor whose
value is known can then stand where an integer is declared (`reshape(x, shape = [d0, d1, -1])`
with `d0` a slice of a shape). `Wire` mirrors that: an nn Value, or a known value (a numpy array,
or a `SymArray` of ints and `Dim`s when a dimension is a symbol), or both. Known values are folded
here while they are small (`FOLD_LIMIT` elements); the reader materializes the rest as constants.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from iree.compiler import ir

from estuary.base import dims
from estuary.base.dims import Dim
from estuary.importers.mlprogram import symbolic
from estuary.importers.mlprogram.symbolic import NotSymbolic, SymArray

FOLD_LIMIT = 1 << 16  # the most elements an operation on known values is folded for at import
Known = npt.NDArray[Any] | SymArray

# tract datum types (tract_core_external, tract_core_cast) -> nn element types. tract's 64-bit
# integers and TDim (its symbolic dimension type) are Estuary's int32, as NNEF's integer is.
DATUM_TYPES = {"f32": "float32", "f16": "float16", "f64": "float32", "i64": "int32", "i32": "int32",
               "i16": "int32", "i8": "int32", "u8": "int32", "u16": "int32", "u32": "int32", "u64": "int32",
               "tdim": "int32", "bool": "uint8"}
NNEF_TYPES = {"scalar": "float32", "integer": "int32", "logical": "uint8"}


def datum_type(name: str) -> str | None:
    return DATUM_TYPES.get(name.lower())


def numpy_kind(dtype: str) -> Any:
    """The numpy type known values of nn type `dtype` are kept in (64-bit ints, like tract)."""
    return {"float32": np.float32, "float16": np.float16, "int32": np.int64, "uint8": np.bool_}[dtype]


def nn_type(array: Known) -> str:
    """The nn element type a known value stands for."""
    kind = array.dtype.kind
    if kind == "b":
        return "uint8"
    if kind in "iuO":
        return "int32"
    return "float16" if array.dtype == np.float16 else "float32"


@dataclass
class Wire:
    """A tensor of the model: its nn Value, or its value known at import, or both."""

    value: ir.Value | None = None
    known: Known | None = None

    def shape(self, spec_of: Callable[[ir.Value], Any]) -> list[dims.Value]:
        if self.known is not None:
            return list(self.known.shape)
        assert self.value is not None
        return list(spec_of(self.value).shape)


def as_known(value: Any) -> Known:
    """A literal, a Dim or a (nested) list of them as a known array (ints 64-bit, floats 32-bit)."""
    if isinstance(value, (np.ndarray, SymArray)):
        return value
    flat = _flatten(value)
    if any(isinstance(v, Dim) for v in flat):
        return symbolic.make(np.asarray(value, dtype=object), np.int64)
    array = np.asarray(value)
    if array.dtype.kind == "f":
        return array.astype(np.float32)
    if array.dtype.kind in "iu":
        return array.astype(np.int64)
    if array.dtype.kind == "b":
        return array
    raise NotSymbolic(f"{value!r} is not a tensor value")


def _flatten(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return [y for v in value for y in _flatten(v)]
    return [value]


def ndim(array: Known) -> int:
    return len(array.shape)


def size(array: Known) -> int:
    return int(np.prod(array.shape, dtype=np.int64))


def objects(array: Known) -> npt.NDArray[np.object_]:
    return symbolic.objects(array)


def python(array: Known) -> Any:
    """A known value as Python data: a scalar (int, float, bool, Dim) for rank 0, else nested lists."""
    values = objects(array)
    return values.tolist() if values.ndim else values[()]


def cast(array: Known, dtype: str) -> Known:
    """A known value converted to nn type `dtype` (kept in its numpy kind: see numpy_kind)."""
    if isinstance(array, SymArray):
        if dtype == "int32":
            return array
        raise NotSymbolic(f"cannot convert the dimensions {array.symbols()} to {dtype}")
    return array.astype(numpy_kind(dtype))


# ---------------------------------------------------------------- folding


def _ints(*arrays: Known) -> bool:
    return all(a.dtype.kind in "iuO" for a in arrays)


def _binary(fn: Callable[[Any, Any], Any], result: str | None = None) -> Callable[[Sequence[Known]], Known]:
    def fold(args: Sequence[Known]) -> Known:
        a, b = args
        if isinstance(a, SymArray) or isinstance(b, SymArray):
            return symbolic.elementwise(fn, [a, b], np.bool_ if result == "bool" else np.int64)
        out = np.asarray(fn(a, b))
        return out.astype(np.float32) if out.dtype == np.float64 else out

    return fold


def _div(a: Any, b: Any) -> Any:
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and _ints(a, b):
        return np.floor_divide(a, b)  # tract divides integers (and dimensions) exactly or by floor
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return np.true_divide(a, b)
    return symbolic.floor_div(a, b)


def _compare(name: str) -> Callable[[Any, Any], Any]:
    table = {"lt": "less", "gt": "greater", "le": "less_equal", "ge": "greater_equal", "eq": "equal",
             "ne": "not_equal"}
    ufunc = getattr(np, table[name])

    def fn(a: Any, b: Any) -> Any:
        if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
            return ufunc(a, b)
        return symbolic.decide(table[name], a, b)

    return fn


def _arith(name: str) -> Callable[[Any, Any], Any]:
    numpy_fn = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "min": np.minimum, "max": np.maximum}[name]
    sym_fn = {"add": symbolic.add, "sub": symbolic.sub, "mul": symbolic.mul, "min": symbolic.minimum,
              "max": symbolic.maximum}[name]

    def fn(a: Any, b: Any) -> Any:
        if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
            return numpy_fn(a, b)
        return sym_fn(a, b)

    return fn


def _logical(fn: Callable[[Any, Any], Any]) -> Callable[[Sequence[Known]], Known]:
    def fold(args: Sequence[Known]) -> Known:
        a, b = (np.asarray(x, dtype=bool) for x in args)
        return np.asarray(fn(a, b))

    return fold


def fold_binary(name: str, a: Known, b: Known) -> Known:
    """`name` (an NNEF binary operation) of two known values, numpy broadcasting after NNEF's
    alignment (the caller aligns ranks)."""
    if name in ("and", "or"):
        return _logical(np.logical_and if name == "and" else np.logical_or)([a, b])
    if name in _COMPARE:
        return _binary(_compare(name), "bool")([a, b])
    if name == "div":
        return _binary(_div)([a, b])
    if name == "pow":
        if isinstance(a, SymArray) or isinstance(b, SymArray):
            raise NotSymbolic("a power of a dimension")
        return np.asarray(np.power(a, b))
    return _binary(_arith(name))([a, b])


_COMPARE = ("lt", "gt", "le", "ge", "eq", "ne")
BINARY = ("add", "sub", "mul", "div", "pow", "min", "max", "and", "or") + _COMPARE


def align_known(a: Known, rank: int) -> Known:
    """NNEF broadcasting: trailing singleton axes up to `rank`."""
    if ndim(a) >= rank or ndim(a) == 0:
        return a
    shape = tuple(a.shape) + (1,) * (rank - ndim(a))
    return a.map(lambda v: v.reshape(shape)) if isinstance(a, SymArray) else a.reshape(shape)


def reshape(a: Known, shape: Sequence[int]) -> Known:
    return a.map(lambda v: v.reshape(tuple(shape))) if isinstance(a, SymArray) else a.reshape(tuple(shape))


def data_move(a: Known, fn: Callable[[Any], Any]) -> Known:
    """A numpy data movement (slice, transpose, take, concatenation of one) on a known value."""
    return a.map(fn) if isinstance(a, SymArray) else np.asarray(fn(a))


def concat(values: Sequence[Known], axis: int) -> Known:
    if any(isinstance(v, SymArray) for v in values):
        return symbolic.make(np.concatenate([objects(v) for v in values], axis=axis), np.int64)
    return np.concatenate([np.asarray(v) for v in values], axis=axis)


def select(cond: Known, a: Known, b: Known) -> Known:
    c = np.asarray(cond, dtype=bool)
    if isinstance(a, SymArray) or isinstance(b, SymArray):
        return symbolic.make(np.where(c, objects(a), objects(b)), np.int64)
    return np.where(c, a, b)


def int_list(value: Any, what: str) -> list[dims.Value]:
    """An integer[] argument (a list, or one integer as tract accepts) as ints and Dims."""
    items = value if isinstance(value, (list, tuple)) else [value]
    out: list[dims.Value] = []
    for v in items:
        if isinstance(v, (np.ndarray, SymArray)):
            out.extend(int_list(python(v), what))
            continue
        out.append(dims.value(v))
    return out


__all__ = ["BINARY", "DATUM_TYPES", "FOLD_LIMIT", "Known", "NotSymbolic", "SymArray", "Wire", "align_known",
           "as_known", "cast", "concat", "data_move", "datum_type", "fold_binary", "int_list", "ndim", "nn_type",
           "numpy_kind", "objects", "python", "reshape", "select", "size"]
