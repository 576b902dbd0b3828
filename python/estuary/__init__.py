"""Estuary: compile Core ML, NNEF, WebNN and NNAPI models with MLIR + IREE, run them on numpy."""
from estuary.errors import (CompileError, EstuaryError, LoweringError, ModelImportError,
                            RuntimeInputError, UnsupportedOpError, VerificationError)
from estuary.compiler import Artifact, TARGETS, compile
from estuary.runtime import Model, load

__version__ = "0.1.0"

__all__ = ["compile", "load", "Artifact", "Model", "TARGETS", "EstuaryError", "CompileError",
           "LoweringError", "ModelImportError", "RuntimeInputError", "UnsupportedOpError",
           "VerificationError"]
