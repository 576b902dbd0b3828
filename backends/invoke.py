"""Running IREE's compiler on a lowered module: one session invocation, or for llvm-cpu two
phases around the retuning of its tile choices (llvm_cpu/phases.py). Used by estuary.compiler
and by the reduced-precision child process (precision.py)."""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from iree.compiler import api

from estuary.backends import targets
from estuary.backends.llvm_cpu import phases
from estuary.base.options import CompileOptions
from estuary.base.errors import CompileError


# IREE 3.13 can choose tiles that break its own limits for data-tiling packs fused into a
# reduction (a LayerNorm whose input and output both feed matmuls) on 16-byte-vector CPUs
# (x86-64-v2, AArch64 NEON): one of the two sibling packs is left untiled along its row. The
# limits in retune.py cannot reach that choice, so such a compile is retried once without
# data tiling (docs/design.md, "llvm-cpu").
_TILE_LIMITS = ("operations with large vector sizes", "exceeded stack allocation limit")


def layers_of(location: str) -> str:
    """An IREE diagnostic's location as the model's layers it names (`layer 'conv_3'`, `layers
    'where_45', 'softmax_43'`): the importers name each op's location after its source layer; the
    model file is said once, in the error's first line. The raw location when it names none."""
    names = list(dict.fromkeys(re.findall(r'"([^"]+)"\(', location)))
    if not names:
        return location
    return ("layer " if len(names) == 1 else "layers ") + ", ".join(f"'{n}'" for n in names)


def _execute(session: Any, module_op: Any, context: Any, options: CompileOptions,
             stats: dict[str, Any]) -> tuple[bool, Any, Any]:
    """Run IREE's pipeline; for llvm-cpu in two phases around the retuning of its tile choices
    (the limits always, the measured rules with `options.retile`)."""
    phased = phases.phased_compile(session, module_op, context, options) if targets.get(options.target).retunes \
        else None
    if phased is not None:
        ok, inv, stats["cpu_tiles"], keep = phased
        return ok, inv, keep
    inv = session.invocation()
    inv.import_module(module_op)
    return inv.execute(), inv, None


def run_iree(session: Any, module_op: Any, context: Any, flags: Sequence[str], options: CompileOptions,
             stats: dict[str, Any], source: str) -> bytes:
    """The .vmfb of `module_op` compiled by `session` with `flags`; CompileError on failure."""
    try:
        session.set_flags(*flags)
    except ValueError as e:
        raise CompileError(f"bad compiler flags {list(flags)}: {e}") from None
    diagnostics = []

    def collect(d: Any) -> bool:
        message = re.sub(r"#hal\.executable\.target<.*", "(its target)", str(d.message))  # a long attribute
        diagnostics.append(f"{layers_of(str(d.location))}: {message}")
        return True

    handler = context.attach_diagnostic_handler(collect)
    # IREE transforms the module it borrows: keep a copy for the retry below.
    backup = module_op.clone() if targets.get(options.target).retunes else None
    try:
        ok, inv, keep = _execute(session, module_op, context, options, stats)
        if not ok and backup is not None and any(sign in d for d in diagnostics for sign in _TILE_LIMITS):
            inv.close()
            del keep
            diagnostics.clear()
            session.set_flags("--iree-opt-data-tiling=false")
            ok, inv, keep = _execute(session, backup, context, options, stats)
            stats["data_tiling"] = "off (retried)"
    finally:
        handler.detach()
    try:
        if not ok:
            detail = "\n  ".join(diagnostics[:20]) or "(no diagnostics)"
            raise CompileError(f"{source}: IREE failed to compile for {' '.join(flags)}:\n  {detail}")
        out = api.Output.open_membuffer()
        inv.output_vm_bytecode(out)
        return bytes(out.map_memory())  # sealed by the caller: estuary.load checks it before IREE parses
    finally:
        inv.close()  # the session keeps each invocation, and the module it holds, until closed
        del keep  # the configured module the phased invocation borrowed
