"""Target backends: what each IREE HAL target needs from the compiler (flags, runtime driver, the
llvm-cpu tile policy, SPIR-V workarounds), and the CompileOptions every stage is handed.

The lowering asks this package (never the other way round); the public API package holds none of it.
"""
from estuary.backends.options import CompileOptions
from estuary.backends.targets import TARGETS, Target, get

__all__ = ["CompileOptions", "TARGETS", "Target", "get"]
