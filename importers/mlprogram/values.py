"""MIL types and values: element types, tensor shapes and immediate/blob constants as numpy.

Element types inside Estuary: every float type (fp16, fp32, fp64, bf16) computes as float32 (see
docs/mlprogram.md "float16"), bool is uint8 0/1, int8/uint8 keep their width, other integer types
are int32 (Core ML's integer type). Sub-byte and 8-bit codes only occur in constexpr weights,
which are expanded in numpy at import.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

FLOAT_TYPES = {"FLOAT16", "FLOAT32", "FLOAT64", "BFLOAT16"}
_NN = {"BOOL": "uint8", "INT8": "int8", "UINT8": "uint8", "INT16": "int32", "INT32": "int32", "INT64": "int32",
       "UINT16": "int32", "UINT32": "int32", "UINT64": "int32", "INT4": "int8", "UINT4": "uint8", "UINT1": "uint8",
       "UINT2": "uint8", "UINT3": "uint8", "UINT6": "uint8"}
_NUMPY = {"BOOL": np.bool_, "FLOAT16": np.float16, "FLOAT32": np.float32, "FLOAT64": np.float64,
          "INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "INT64": np.int64, "UINT8": np.uint8,
          "UINT16": np.uint16, "UINT32": np.uint32, "UINT64": np.uint64, "INT4": np.int8, "UINT4": np.uint8,
          "UINT1": np.uint8, "UINT2": np.uint8, "UINT3": np.uint8, "UINT6": np.uint8}
# MIL dtype strings (cast's `dtype`, ...) -> proto DataType names
DTYPE_NAMES = {"fp16": "FLOAT16", "fp32": "FLOAT32", "fp64": "FLOAT64", "int8": "INT8", "uint8": "UINT8",
               "int16": "INT16", "uint16": "UINT16", "int32": "INT32", "int64": "INT64", "uint32": "UINT32",
               "bool": "BOOL", "int4": "INT4", "uint4": "UINT4", "bf16": "BFLOAT16"}


def type_name(pb: Any, code: int) -> str:
    """The proto's name of a data type code; ValueError for a code it does not define."""
    try:
        return str(pb.DataType.Name(code))
    except ValueError:
        raise ValueError(f"unknown MIL data type code {code}") from None


def nn_dtype(name: str) -> str:
    """The nn element type a MIL element type computes as."""
    return "float32" if name in FLOAT_TYPES else _NN.get(name, "int32")


def numpy_dtype(name: str) -> Any:
    if name == "BFLOAT16":
        return np.float32
    return _NUMPY[name]


def tensor_type(vt: Any, pb: Any) -> tuple[str, list[int | None]] | None:
    """(element type name, dims with None for unknown) of a tensor ValueType, else None."""
    if vt.WhichOneof("type") != "tensorType":
        return None
    t = vt.tensorType
    dims: list[int | None] = []
    for d in t.dimensions:
        dims.append(int(d.constant.size) if d.WhichOneof("dimension") == "constant" else None)
    return type_name(pb, t.dataType), dims


def immediate(value: Any, pb: Any, blob: Callable[[str, int, int, str], np.ndarray], where: str) -> Any:
    """A MIL Value as numpy (tensors), str (a string scalar) or list of those (lists/tuples)."""
    vt = value.type
    kind = vt.WhichOneof("type")
    if kind in ("listType", "tupleType"):
        iv = value.immediateValue
        items = iv.list.values if iv.WhichOneof("value") == "list" else iv.tuple.values
        return [immediate(v, pb, blob, where) for v in items]
    if kind != "tensorType":
        raise ValueError(f"a constant of type {kind} is not supported")
    name, dims = tensor_type(vt, pb)  # type: ignore[misc]
    if any(d is None for d in dims):
        raise ValueError("a constant has an unknown dimension")
    shape = [int(d) for d in dims]  # type: ignore[arg-type]
    count = int(np.prod(shape)) if shape else 1
    which = value.WhichOneof("value")
    if which == "blobFileValue":
        bf = value.blobFileValue
        flat = blob(bf.fileName, int(bf.offset), count, name)
        return _typed(flat, name, shape, count)
    if which != "immediateValue":
        raise ValueError(f"a constant holds no value ({which})")
    t = value.immediateValue.tensor
    field = t.WhichOneof("value")
    if name == "STRING":
        strings = list(t.strings.values)
        return strings[0] if not shape and strings else np.asarray(strings, dtype=object).reshape(shape)
    if field == "bytes":
        raw = t.bytes.values
        if name in ("INT4", "UINT4", "UINT1", "UINT2", "UINT3", "UINT6"):
            flat = _unpack_bits(np.frombuffer(raw, np.uint8), name, count)
        else:
            flat = np.frombuffer(raw, dtype=numpy_dtype(name))
    elif field is None:
        flat = np.zeros(0)
    else:
        flat = np.asarray(list(getattr(t, field).values))
    return _typed(flat, name, shape, count)


_BITS = {"INT4": 4, "UINT4": 4, "UINT1": 1, "UINT2": 2, "UINT3": 3, "UINT6": 6}


def _unpack_bits(data: np.ndarray, name: str, count: int) -> np.ndarray:
    """Sub-byte elements packed little-endian (first element in the lowest bits)."""
    n = _BITS[name]
    bits = np.unpackbits(data, bitorder="little")[: count * n].reshape(count, n)
    vals = (bits.astype(np.int32) << np.arange(n, dtype=np.int32)).sum(axis=1)
    if name == "INT4":
        vals = np.where(vals >= 8, vals - 16, vals)
    return vals


def _typed(flat: np.ndarray, name: str, shape: list[int], count: int) -> np.ndarray:
    if flat.size != count:
        raise ValueError(f"a constant of shape {shape} holds {flat.size} values")
    return np.asarray(flat).astype(numpy_dtype(name)).reshape(shape)
