"""Estuary: compile Core ML, NNEF, WebNN and NNAPI models with MLIR + IREE, run them on numpy."""
from __future__ import annotations

import importlib
from typing import Any

from estuary.errors import (CompileError, EstuaryError, ExecutionError, InternalError, LoweringError, ModelImportError,
                            RuntimeInputError, UnsupportedOpError, VerificationError)
from estuary.compiler import Artifact, CompileOptions, TARGETS, compile
from estuary.runtime import Model, load

__version__ = "0.1.0"
DISTRIBUTION = "estuary-nn"  # the name on PyPI (`pip install estuary-nn`); the import name stays `estuary`

# submodules loaded on first attribute access (`estuary.nnapi` without `import estuary.nnapi`)
_LAZY = ("webnn", "nnapi", "cache", "dtypes", "errors", "compiler", "runtime", "state")

__all__ = ["compile", "load", "Artifact", "CompileOptions", "Model", "TARGETS", "EstuaryError", "CompileError",
           "ExecutionError", "InternalError", "LoweringError", "ModelImportError", "RuntimeInputError", "UnsupportedOpError",
           "VerificationError", "example_model", "webnn", "nnapi", "cache"]


def example_model() -> str:
    """Path of the example model shipped in the package: a MobileNet-style block in WebNN JSON,
    input "image" float32 [1, 3, 32, 32], output "probabilities" [1, 10]."""
    import os

    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "examples", "mobilenet_block.json")


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return importlib.import_module(f"estuary.{name}")
    raise AttributeError(f"module 'estuary' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
