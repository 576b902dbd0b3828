"""Reduced precision (`--precision bf16|fp16`): the inputs of every matmul and convolution rounded
to bf16 or fp16 by IREE's contraction-input demotion, products accumulated in float32.

IREE 3.13 registers the demotion switches as process-wide options, which can be set once per
process before its first compile and not per session. So a reduced-precision compile lowers the
model here as usual and hands the lowered module (MLIR bytecode) to a child Python process that
sets those options and runs the same IREE compile (with the llvm-cpu tile phases); the parent
keeps compiling float32 models with its own IREE. The child's failure is a CompileError.
"""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from typing import Any

from estuary.base.options import CompileOptions
from estuary.base.errors import CompileError


def global_flags(precision: str) -> list[str]:
    """IREE's process-wide demotion options for `precision` (bf16 or fp16)."""
    return [f"--iree-global-opt-demote-contraction-inputs-type={'f16' if precision == 'fp16' else precision}",
            "--iree-global-opt-demote-contraction-inputs-operations=all"]


def compile_in_child(module: Any, flags: Sequence[str], options: CompileOptions,
                     source: str) -> tuple[bytes, int]:
    """(.vmfb, retiled dispatches) of the lowered `module` compiled by a child process with the
    demotion options of `options.precision`."""
    fields = {k: sorted(v) if isinstance(v, frozenset) else v for k, v in dataclasses.asdict(options).items()}
    with tempfile.TemporaryDirectory(prefix="estuary-precision-") as work:
        mlir, out = os.path.join(work, "lowered.mlirbc"), os.path.join(work, "out.vmfb")
        with open(mlir, "wb") as f:
            module.operation.write_bytecode(f)
        job = json.dumps({"module": mlir, "output": out, "flags": list(flags), "options": fields, "source": source})
        r = subprocess.run([sys.executable, "-m", "estuary.backends.precision"], input=job, capture_output=True,
                           text=True)
        if r.returncode != 0 or not os.path.exists(out):
            lines = r.stdout.strip().splitlines()
            reply = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else {}
            raise CompileError(reply.get("error") or f"{source}: the {options.precision} compile process exited "
                               f"with status {r.returncode}: {r.stderr.strip()[-800:]}")
        with open(out, "rb") as f:
            vmfb = f.read()
    reply = json.loads(r.stdout.strip().splitlines()[-1])
    return vmfb, int(reply.get("cpu_tiles", 0))


def _child() -> int:
    from iree.compiler import ir
    from iree.compiler.api import Session, ctypes_dl

    job = json.loads(sys.stdin.read())
    fields = dict(job["options"], disabled=frozenset(job["options"]["disabled"]),
                  extra_flags=tuple(job["options"]["extra_flags"]))
    options = CompileOptions(**fields)
    ctypes_dl._initializeGlobalCL("estuary", *global_flags(options.precision))
    from estuary.backends.invoke import run_iree

    session = Session()
    context = session.context
    with open(job["module"], "rb") as f:
        module = ir.Module.parse(f.read(), context)
    stats: dict[str, Any] = {}
    try:
        vmfb = run_iree(session, module.operation, context, job["flags"], options, stats, job["source"])
    except CompileError as e:
        print(json.dumps({"error": str(e)}))
        return 1
    with open(job["output"], "wb") as f:
        f.write(vmfb)
    print(json.dumps({"cpu_tiles": stats.get("cpu_tiles", 0)}))
    return 0


if __name__ == "__main__":
    sys.exit(_child())
