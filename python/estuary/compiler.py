"""Compiling models: import -> nn passes -> lowering -> IREE (in process) -> Artifact (.vmfb)."""
from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from estuary.backends import abi, pipeline, targets
from estuary.backends.invoke import run_iree
from estuary.backends.llvm_cpu import pad_fusion
from estuary.backends.options import create_options
from estuary.backends.targets import TARGETS
from estuary.base import integrity
from estuary.base.errors import EstuaryError
from estuary.base.options import CompileOptions

__all__ = ["Artifact", "CompileOptions", "TARGETS", "compile", "compile_nn", "signature_json"]


@dataclass
class Artifact:
    """A compiled model: .vmfb bytes plus the signature they implement."""

    vmfb: bytes
    target: str
    signature: dict[str, Any]
    timings: dict[str, float] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)  # e.g. {"cpu_tiles": ops whose IREE tiles were rewritten}

    def save(self, path: str | os.PathLike[str]) -> str:
        path = os.fspath(path)
        try:
            with open(path, "wb") as f:
                f.write(self.vmfb)
        except OSError as e:
            raise EstuaryError(f"cannot write {path}: {e.strerror or e}") from None
        return path

    @property
    def inputs(self) -> list[tuple[Any, ...]]:
        return [tuple(x) for x in self.signature["inputs"]]

    @property
    def outputs(self) -> list[tuple[Any, ...]]:
        return [tuple(x) for x in self.signature["outputs"]]


Progress = bool | Callable[[str], None]  # print phase messages to stderr, or hand them to a callable


def _progress(enabled: Progress, message: str) -> None:
    if callable(enabled):
        enabled(message)
    elif enabled:
        print(f"[estuary] {message}", file=sys.stderr, flush=True)


def compile_nn(nn: Any, options: CompileOptions | None = None, *, progress: Progress = False,
               timings: dict[str, float] | None = None) -> Artifact:
    """Lower an NNModule (in place) with `options` and compile it with IREE; returns an Artifact."""
    options = options or create_options()
    timings = {} if timings is None else timings
    flags, stats = lower_nn(nn, options, progress=progress, timings=timings)
    t1 = time.perf_counter()
    _progress(progress, f"compiling for {options.target} with IREE")
    vmfb = iree_compile(nn, flags, options, stats)
    if "cpu_tiles" in stats:
        _progress(progress, f"cpu-tiles: retiled {stats['cpu_tiles']} dispatch(es)")
    timings["iree_s"] = time.perf_counter() - t1
    return Artifact(vmfb, options.target, nn.signature(), timings, stats)


# Compressed weights (int8 / uint8 constants widened by a cast, kept by nn-fold-constants): IREE
# hoists their expansion (and its data-tiling pack) into an initializer that runs once at load
# instead of evaluating it at compile time, so the artefact stores the narrow data and runs at
# the speed of float weights (docs/mlprogram.md, compressed weights).
NARROW_WEIGHT_FLAGS = ["--iree-opt-const-eval=false", "--iree-opt-const-expr-max-size-increase-threshold=1099511627776"]
# Dynamic shapes: IREE 3.13's aggressive dispatch fusion miscompiled a value reduced over several
# dynamic axes that is also added to a later reduction's result (log-sum-exp gave wrong values;
# docs/dynamic-shapes.md), so modules with dynamic shapes compile without it.
DYNAMIC_SHAPE_FLAGS = ["--iree-dispatch-creation-enable-aggressive-fusion=false"]


def lower_nn(nn: Any, options: CompileOptions, *, progress: Progress = False,
             timings: dict[str, float] | None = None) -> tuple[list[str], dict[str, Any]]:
    """Everything of a compile before IREE: passes, lowering, output storage and signature (in
    place); returns IREE's flags and the passes' statistics. The fuzz runner stops here for most
    mutants (tests/fuzz/runner.py)."""
    target = targets.get(options.target)
    t0 = time.perf_counter()
    _progress(progress, "optimizing and lowering the nn module")
    results = pipeline.run_default(nn, options)
    stats = {k: v for k, v in results.items() if k in ("winograd", "isolated_reductions")}
    if "winograd" in stats:
        _progress(progress, f"cpu-winograd: {stats['winograd']} 3x3 convolution(s) in Winograd form")
    if timings is not None:
        timings["lower_s"] = time.perf_counter() - t0
    flags = list(target.flags(options, keep_f64=bool(results.get("keep_f64"))))
    if results.get("narrow_weights"):
        flags += NARROW_WEIGHT_FLAGS
    if results.get("dynamic_shapes"):
        flags += DYNAMIC_SHAPE_FLAGS
    if results.get("fuse_int8_padding"):
        flags.append(pad_fusion.FLAG)
    nn.target = options.target
    if target.output_storage:
        abi.output_storage(nn)
    nn.write_signature()
    return flags, stats


def iree_compile(nn: Any, flags: Sequence[str], options: CompileOptions, stats: dict[str, Any] | None = None) -> bytes:
    """Hand the module to IREE without printing it; CompileError carries IREE's diagnostics. A
    reduced-precision compile runs IREE in a child process (backends/precision.py says why)."""
    stats = {} if stats is None else stats
    if options.precision != "fp32":
        from estuary.backends import precision

        vmfb, stats["cpu_tiles"] = precision.compile_in_child(nn.module, flags, options, nn.source)
        return integrity.seal(vmfb)
    return integrity.seal(run_iree(nn.session, nn.module.operation, nn.context, flags, options, stats, nn.source))


def compile(source: Any, target: str = "llvm-cpu", format: str | None = None, *, optimize: bool | None = None,
            cpu: str = "host", extra_flags: Iterable[str] = (), shapes: dict[str, Any] | None = None,
            progress: Progress = False, disable_passes: Iterable[str] = (), workers: int | None = None,
            precision: str = "fp32", options: CompileOptions | None = None) -> Artifact:
    """Compile a model (path, in-memory model object, or NNModule) for `target`.

    The keyword arguments make the CompileOptions (`options=` passes a ready one instead):
    `optimize` the nn-level passes (None: on unless ESTUARY_OPTIMIZE=0), `cpu` the llvm-cpu
    target CPU, `disable_passes` optional passes by name, `workers` the CPU worker count the
    tile rules plan for (default: this machine's cores for `cpu="host"`, else 8), `precision`
    "bf16" or "fp16" to round matmul and convolution inputs (float32 accumulation; opt-in)."""
    from estuary.importers import import_model

    if options is None:
        options = create_options(target, cpu=cpu, optimize=optimize, disable_passes=tuple(disable_passes),
                                        workers=workers, extra_flags=tuple(extra_flags), precision=precision)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    _progress(progress, f"importing {source if isinstance(source, (str, os.PathLike)) else type(source).__name__}")
    nn = import_model(source, format=format, shapes=shapes)
    timings["import_s"] = time.perf_counter() - t0
    try:
        art = compile_nn(nn, options, progress=progress, timings=timings)
    finally:
        if nn is not source:  # built here: free its MLIR context and weights (NNModule.close)
            nn.close()
    timings["total_s"] = time.perf_counter() - t0
    return art


def signature_json(art: Artifact) -> str:
    return json.dumps(art.signature, indent=2)
