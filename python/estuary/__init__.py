"""Estuary: compile Core ML, NNEF, WebNN and NNAPI models with MLIR + IREE, run them on numpy.

Importing `estuary` (or any subpackage, such as `estuary.dialects`) loads only the error classes;
the compiler, the runtime and the format APIs load on first use (`estuary.compile`,
`estuary.load`, `estuary.webnn`, ...).
"""
from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

from estuary.base.errors import (CompileError, EstuaryError, ExecutionError, InternalError, LoweringError,
                                 ModelImportError, RuntimeInputError, UnsupportedOpError, VerificationError)

if TYPE_CHECKING:
    from estuary.backends.options import create_options as compile_options
    from estuary.backends.targets import TARGETS
    from estuary.base.options import CompileOptions
    from estuary.compiler import Artifact, compile
    from estuary.loader import load
    from estuary.runtime import Model

__version__ = "0.1.0"
DISTRIBUTION = "estuary-nn"  # the name on PyPI (`pip install estuary-nn`); the import name stays `estuary`

# public names loaded on first use: name -> (module, attribute); attribute None: the module itself
_LAZY: dict[str, tuple[str, str | None]] = {
    "compile": ("estuary.compiler", "compile"),
    "Artifact": ("estuary.compiler", "Artifact"),
    "load": ("estuary.loader", "load"),
    "Model": ("estuary.runtime", "Model"),
    "CompileOptions": ("estuary.base.options", "CompileOptions"),
    "compile_options": ("estuary.backends.options", "create_options"),
    "TARGETS": ("estuary.backends.targets", "TARGETS"),
    "errors": ("estuary.base.errors", None),
    "dtypes": ("estuary.base.dtypes", None),
    **{name: (f"estuary.{name}", None) for name in ("webnn", "nnapi", "cache", "compiler", "runtime", "state")},
}

__all__ = ["compile", "load", "Artifact", "CompileOptions", "compile_options", "Model", "TARGETS", "EstuaryError",
           "CompileError", "ExecutionError", "InternalError", "LoweringError", "ModelImportError", "RuntimeInputError",
           "UnsupportedOpError", "VerificationError", "example_model", "webnn", "nnapi", "cache"]


def example_model() -> str:
    """Path of the example model shipped in the package: a MobileNet-style block in WebNN JSON,
    input "image" float32 [1, 3, 32, 32], output "probabilities" [1, 10]."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "examples", "mobilenet_block.json")


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'estuary' has no attribute {name!r}")
    module, attribute = _LAZY[name]
    value = importlib.import_module(module)
    value = value if attribute is None else getattr(value, attribute)
    globals()[name] = value  # found directly from now on
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
