"""IREE phase control for the llvm-cpu retiling: compile to `executable-configurations`, let
retune.py rewrite the chosen tiles, and compile on from there.

IREE only lets a tile choice survive for batch-1 convolutions after its own configuration step
(a tuning spec is dropped when it re-inserts the unit batch dim), hence two phases. The phase
controls are in IREE's C API but not in its Python wrapper; `phased_compile` binds them with
ctypes and reports None when they are missing, and the caller then compiles in one go.
"""
from __future__ import annotations

import ctypes
from typing import Any

from estuary.backends.llvm_cpu.retune import retune
from estuary.base.options import CompileOptions


def _phase_setters() -> tuple[Any, Any] | None:
    try:
        from iree.compiler.api import ctypes_dl
        lib = ctypes_dl._dylib
        to_phase, from_phase = lib.ireeCompilerInvocationSetCompileToPhase, lib.ireeCompilerInvocationSetCompileFromPhase
    except (ImportError, AttributeError):
        return None
    for fn in (to_phase, from_phase):
        fn.argtypes, fn.restype = [ctypes.c_void_p, ctypes.c_char_p], None
    return to_phase, from_phase


def phased_compile(session: Any, module_op: Any, context: Any,
                   options: CompileOptions) -> tuple[bool, Any, int, Any] | None:
    """Compile `module_op` to executable configurations, retune them for `options` (its CPU's
    vector lanes and worker count, and with `retile` the measured rules as well as the limits:
    retune.retune), and finish the compile.

    Returns (ok, invocation holding the result, number of retiled ops, the configured
    module, which the invocation borrows: keep it alive while using the invocation), or None
    when this IREE build has no phase control."""
    setters = _phase_setters()
    if setters is None:
        return None
    to_phase, from_phase = setters
    first = session.invocation()
    first.import_module(module_op)
    to_phase(first._inv_p, b"executable-configurations")
    if not first.execute():
        return False, first, 0, None
    configured = first.export_module()
    first.close()
    with context:
        changed = retune(configured, options.cpu_lanes, options.workers, options.retile)
    second = session.invocation()
    from_phase(second._inv_p, b"executable-configurations")
    second.import_module(configured)
    return second.execute(), second, changed, configured

