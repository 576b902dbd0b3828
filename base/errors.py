"""The one exception hierarchy of Estuary: every user-facing failure is an EstuaryError.

    EstuaryError
    ├── ModelImportError      a model file could not be read, or is malformed
    │   └── UnsupportedOpError  the model uses operations Estuary cannot import (all listed)
    ├── VerificationError     an `nn` op has invalid operands or attributes
    ├── LoweringError         an op could not be lowered to TOSA/linalg
    ├── CompileError          IREE rejected the lowered module
    ├── RuntimeInputError     inputs handed to a compiled model do not match its signature
    ├── ExecutionError        loading or running a compiled artefact failed (device, IREE runtime)
    └── InternalError         a bug in Estuary itself: the message asks for a report
"""
from __future__ import annotations

from collections.abc import Iterable


class EstuaryError(Exception):
    """Base class. `str(err)` is a complete message for the user (no traceback needed)."""


class ModelImportError(EstuaryError):
    """A model file could not be read or is malformed."""


class UnsupportedOpError(ModelImportError):
    """The model uses operations Estuary cannot import; lists all of them at once."""

    def __init__(self, path: object, items: Iterable[tuple[str, str, str | None]]):
        self.path = str(path)
        self.items = list(items)  # [(layer_name, op_type, reason)]
        lines = [f"{self.path}: {len(self.items)} unsupported operation(s):"]
        for name, op_type, reason in self.items:
            lines.append(f"  - {name!r} ({op_type})" + (f": {reason}" if reason else ""))
        super().__init__("\n".join(lines))


class VerificationError(EstuaryError):
    """An `nn` op has invalid operands or attributes. Type rules raise it without a location;
    the graph builder, the importers and the passes add the file, layer and op type."""


class LoweringError(EstuaryError):
    """An op could not be lowered to TOSA/linalg."""


class CompileError(EstuaryError):
    """IREE rejected the lowered module."""


class RuntimeInputError(EstuaryError):
    """Inputs handed to a compiled model do not match its signature."""


class ExecutionError(EstuaryError):
    """Loading or running a compiled artefact failed (device missing, bad .vmfb, execution failure)."""


class InternalError(EstuaryError):
    """A bug in Estuary, not in the user's model: the message says so and asks for a report."""

    def __init__(self, where_: str, err: BaseException):
        self.cause = err
        super().__init__(f"{where_}: internal error: {type(err).__name__}: {err} "
                         "(this is a bug in Estuary; run with --verbose for the traceback and please report it)")


def where(source: object = None, name: object = None, op_type: str | None = None) -> str:
    """Format 'file: operation 'name' (op_type)' prefixes consistently."""
    parts = []
    if source:
        parts.append(str(source))
    if name is not None or op_type:
        desc = f"operation {name!r}" if name is not None else "operation"
        if op_type:
            desc += f" ({op_type})"
        parts.append(desc)
    return ": ".join(parts)


# What a converter raises on parameters it did not foresee in the *model* (a missing input, a
# wrong rank, a zero stride, an index out of range, a huge size): importers turn these into
# `malformed(...)` errors naming the file, the layer and its type. TypeError and AttributeError
# mean a bug in the converter itself and become InternalErrors; Estuary's own errors pass through.
MALFORMED = (ArithmeticError, LookupError, ValueError, MemoryError, RecursionError)


def malformed(prefix: str, err: BaseException) -> ModelImportError:
    """ModelImportError for an unforeseen failure while converting one layer or operation."""
    detail = str(err) or "no detail"
    if isinstance(err, MemoryError):
        detail = f"its sizes need more memory than there is ({detail})"
    return ModelImportError(f"{prefix}: malformed or unsupported parameters: {detail} ({type(err).__name__})")


def conversion_error(prefix: str, err: Exception) -> EstuaryError:
    """The EstuaryError for any exception raised while converting one layer or operation."""
    if isinstance(err, EstuaryError):
        return err
    if isinstance(err, MALFORMED):
        return malformed(prefix, err)
    return InternalError(prefix, err)
