"""What code that builds `nn` ops writes with, wherever the ops go: `op`, `const`, `spec`, `reshape`.

The importers' conversion contexts (importers/context.py) append to a Graph; a lowering
decomposition creates ops in place. Both subclass `Builder` and say only how an op and a constant
are created.

Constants follow one dtype rule (`constant_dtype`): an explicit dtype wins; otherwise booleans
become uint8, floats (of any width) float32 (the type Estuary computes in), and integers keep
their numpy type (int64 stays int64). Callers that need int32 indices say `dtype="int32"`.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from iree.compiler import ir

from estuary.base import dims, dtypes
from estuary.dialects.core import TensorSpec
from estuary.dialects.graph import Operand, Results, spec_of


def constant_dtype(array: npt.NDArray[Any], dtype: str | None = None) -> str:
    """The nn dtype of a constant made from `array`: `dtype` if given, else the one rule above."""
    if dtype is not None:
        return dtype
    kind = array.dtype.kind
    if kind == "b":
        return "uint8"
    if kind == "f":
        return "float32"
    return dtypes.from_numpy(array.dtype)


class Builder(ABC):
    """Base of the objects nn-building code receives as `c` (importers) or `d` (decompositions)."""

    @abstractmethod
    def create(self, nn_name: str, operands: list[Operand], attrs: Mapping[str, Any]) -> Results:
        """Create nn.<nn_name> with these (complete, non-None) attributes."""

    @abstractmethod
    def constant(self, array: npt.NDArray[Any], spec: TensorSpec, name: str | None) -> ir.Value:
        """Create an nn.constant holding `array` typed `spec`."""

    def op(self, nn_name: str, operands: Iterable[Operand], **attrs: Any) -> Results:
        """nn.<nn_name> of `operands`; attributes given as None are left at their defaults."""
        return self.create(nn_name, list(operands), {k: v for k, v in attrs.items() if v is not None})

    def const(self, array: npt.ArrayLike, dtype: str | None = None, name: str | None = None) -> ir.Value:
        """An nn.constant of `array`, typed by `constant_dtype` (see the module docstring)."""
        array = np.asarray(array)
        dtype = constant_dtype(array, dtype)
        return self.constant(array.astype(dtypes.to_numpy(dtype)), TensorSpec(array.shape, dtype), name)

    def spec(self, value: ir.Value) -> TensorSpec:
        return spec_of(value)

    def band(self, x: ir.Value, lower: int, upper: int) -> Results:
        """Keep j - i <= upper and i - j <= lower on the last two axes (a negative bound: no
        limit), as Core ML's matrixBandPart and MIL's band_part define it."""
        y = x
        if upper >= 0:
            y = self.op("triangular", [y], upper=False, diagonal=upper)
        if lower >= 0:
            y = self.op("triangular", [y], upper=True, diagonal=-lower)
        return y if y is not x else self.op("identity", [x])

    def reshape(self, value: ir.Value, shape: Sequence[int | dims.Dim]) -> ir.Value:
        """`value` reshaped to `shape` (itself when it already has that shape); dynamic dimensions
        are expressions of the input's symbols."""
        new_shape = [dims.value(d) for d in shape]
        if list(self.spec(value).shape) == new_shape:
            return value
        result = self.op("reshape", [value], new_shape=new_shape)
        assert isinstance(result, ir.Value)
        return result
