"""Data types: WebNN names <-> numpy dtypes <-> MLIR element types."""
from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from iree.compiler import ir

# WebNN's vocabulary is the canonical one inside Estuary.
NUMPY: dict[str, type[np.generic]] = {
    "float32": np.float32,
    "float16": np.float16,
    "int32": np.int32,
    "uint32": np.uint32,
    "int64": np.int64,
    "uint64": np.uint64,
    "int8": np.int8,
    "uint8": np.uint8,
}
FLOATS = ("float32", "float16")
INTS = ("int32", "uint32", "int64", "uint64", "int8", "uint8")
SIGNED = ("int32", "int64", "int8")
UNSIGNED = ("uint32", "uint64", "uint8")
ALL = tuple(NUMPY)
# A signature dtype only (inputs/outputs of a compiled model): a uint8 0/1 tensor inside that is a
# boolean in the source format (NNEF `logical`); the caller passes and gets numpy bool arrays.
BOOL = "bool"


def from_numpy(dtype: npt.DTypeLike) -> str:
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return "uint8"
    for name, t in NUMPY.items():
        if np.dtype(t) == dt:
            return name
    raise ValueError(f"unsupported numpy dtype {dt}")


def to_numpy(name: str) -> np.dtype[Any]:
    return np.dtype(NUMPY[name])


def bits(name: str) -> int:
    return to_numpy(name).itemsize * 8


def mlir_type(name: str) -> ir.Type:
    """MLIR element type used at the `nn` level (unsigned types keep their signedness)."""
    if name == "float32":
        return ir.F32Type.get()
    if name == "float16":
        return ir.F16Type.get()
    width = bits(name)
    if name in UNSIGNED:
        return ir.IntegerType.get_unsigned(width)
    return ir.IntegerType.get_signless(width)


def storage_type(name: str) -> ir.Type:
    """Element type after lowering: TOSA/linalg use signless integers."""
    if name in FLOATS:
        return mlir_type(name)
    return ir.IntegerType.get_signless(bits(name))


def from_mlir(t: ir.Type) -> str:
    """WebNN dtype name of an MLIR element type."""
    if isinstance(t, ir.F32Type):
        return "float32"
    if isinstance(t, ir.F16Type):
        return "float16"
    if isinstance(t, ir.IntegerType):
        it = ir.IntegerType(t)
        prefix = "uint" if it.is_unsigned else "int"
        name = f"{prefix}{it.width}"
        if name in NUMPY:
            return name
    raise ValueError(f"unsupported element type {t}")
