"""The conversion context every importer's converters build with (`c` in importers/<format>/ops/).

A format's context (importers/<format>/converter.py) subclasses `ConversionContext`: it walks
the source model, calls each registered converter through `convert`, and adds format helpers
(blobs, operands, NNEF broadcasting, ...). The base gives `op`, `const` (one dtype rule, see
dialects/builder.py), `spec`, `reshape`, `fail`, `check`, ops and constants named after the
current source layer (`label`), and one rule for exceptions raised inside a converter.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NoReturn

import numpy.typing as npt
from iree.compiler import ir

from estuary.base.dims import DimError
from estuary.dialects.builder import Builder
from estuary.dialects.core import TensorSpec
from estuary.dialects.graph import Graph, Operand, Results
from estuary.base.errors import EstuaryError, ModelImportError, VerificationError, conversion_error, where


class ConversionContext(Builder):
    """Builds one nn function from one source model; `label` and `op_type` name the source layer
    or operation being converted (ops and constants carry `label` as their location)."""

    def __init__(self, graph: Graph, path: str) -> None:
        self.graph = graph
        self.path = path
        self.label: str | None = None
        self.op_type: str | None = None

    # ------------------------------------------------------------ diagnostics

    def where(self) -> str:
        """'file: operation 'label' (op_type)' for the current layer (formats may add a line)."""
        return where(self.path, self.label, self.op_type)

    def error_prefix(self) -> str:
        """What an unforeseen exception inside a converter is reported against."""
        return self.where()

    def located(self, err: VerificationError) -> VerificationError:
        """A VerificationError from the nn type rules, as the format reports it (default: as is)."""
        return err

    def fail(self, message: str) -> NoReturn:
        raise VerificationError(f"{self.where()}: {message}")

    def check(self, cond: object, message: str) -> None:
        if not cond:
            self.fail(message)

    def spec(self, value: ir.Value) -> TensorSpec:
        """The spec of an operand; a clear error when the model gave something else (a list where
        one operand belongs), which would otherwise fail inside the converter."""
        if not isinstance(value, ir.Value):
            self.fail(f"expected one operand, got {type(value).__name__} {value!r:.60}")
        return super().spec(value)

    # ------------------------------------------------------------ building

    def create(self, nn_name: str, operands: list[Operand], attrs: Mapping[str, Any]) -> Results:
        try:
            return self.graph.op(nn_name, operands, attrs, name=self.label)
        except VerificationError as e:
            raise self.located(e) from None

    def constant(self, array: npt.NDArray[Any], spec: TensorSpec, name: str | None) -> ir.Value:
        return self.graph.constant(array, spec, name=self.label if name is None else name)

    # ------------------------------------------------------------ conversion

    def convert(self, label: str | None, op_type: str | None, fn: Callable[..., Any], *args: Any) -> Any:
        """Run converter `fn(self, *args)` for source layer `label` of type `op_type`.

        Estuary's own errors pass through; anything else becomes one (errors.conversion_error):
        a "malformed" ModelImportError for what bad parameters raise (ValueError, IndexError, ...),
        an InternalError asking for a report for the rest (TypeError, AttributeError: our bugs).
        A converter that needs a fixed size where the model has a dynamic dimension (`int()` of a
        Dim or an order of Dims: DimError; Python arithmetic a Dim does not define: a TypeError
        naming it) says so, naming the layer, and asks for a fixed shape."""
        self.label, self.op_type = label, op_type
        try:
            return fn(self, *args)
        except EstuaryError:
            raise
        except (DimError, TypeError) as e:
            if isinstance(e, TypeError) and "'Dim'" not in str(e):
                raise conversion_error(self.error_prefix(), e) from e
            raise ModelImportError(f"{self.error_prefix()}: does not take dynamic dimensions here ({e}); compile "
                                   f"for a fixed shape (--shape / shapes=)") from None
        except Exception as e:
            raise conversion_error(self.error_prefix(), e) from e
