"""The one exception hierarchy of Estuary: every user-facing failure is an EstuaryError."""


class EstuaryError(Exception):
    """Base class. `str(err)` is a complete message for the user (no traceback needed)."""


class ImportError_(EstuaryError):
    """A model file could not be read or is malformed."""


ModelImportError = ImportError_


class UnsupportedOpError(EstuaryError):
    """The model uses operations Estuary cannot import; lists all of them at once."""

    def __init__(self, path, items):
        self.path = str(path)
        self.items = list(items)  # [(layer_name, op_type, reason)]
        lines = [f"{self.path}: {len(self.items)} unsupported operation(s):"]
        for name, op_type, reason in self.items:
            lines.append(f"  - {name!r} ({op_type})" + (f": {reason}" if reason else ""))
        super().__init__("\n".join(lines))


class VerificationError(EstuaryError):
    """An `nn` op has invalid operands or attributes."""


class LoweringError(EstuaryError):
    """An op could not be lowered to TOSA/linalg."""


class CompileError(EstuaryError):
    """IREE rejected the lowered module."""


class RuntimeInputError(EstuaryError):
    """Inputs handed to a compiled model do not match its signature."""


class RuntimeError_(EstuaryError):
    """The IREE runtime failed (device missing, execution failure)."""


def where(source=None, name=None, op_type=None):
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


# What a converter raises on parameters it did not foresee (a missing input, a wrong rank, a
# zero stride, a value of the wrong JSON type, a huge size): importers turn these into
# `malformed(...)` errors naming the file, the layer and its type. Estuary's own errors pass through.
MALFORMED = (ArithmeticError, LookupError, TypeError, ValueError, AttributeError, MemoryError, RecursionError)


def malformed(prefix, err):
    """ModelImportError for an unforeseen failure while converting one layer or operation."""
    detail = str(err) or "no detail"
    if isinstance(err, MemoryError):
        detail = f"its sizes need more memory than there is ({detail})"
    return ImportError_(f"{prefix}: malformed or unsupported parameters: {detail} ({type(err).__name__})")
