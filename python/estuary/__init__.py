"""Estuary: compile Core ML, NNEF, WebNN and NNAPI models with MLIR + IREE, run them on numpy."""
from estuary.errors import (CompileError, EstuaryError, ExecutionError, InternalError, LoweringError, ModelImportError,
                            RuntimeInputError, UnsupportedOpError, VerificationError)
from estuary.compiler import Artifact, CompileOptions, TARGETS, compile
from estuary.runtime import Model, load

__version__ = "0.1.0"

__all__ = ["compile", "load", "Artifact", "CompileOptions", "Model", "TARGETS", "EstuaryError", "CompileError",
           "ExecutionError", "InternalError", "LoweringError", "ModelImportError", "RuntimeInputError", "UnsupportedOpError",
           "VerificationError"]
