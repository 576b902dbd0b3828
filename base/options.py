"""CompileOptions: everything a compile decides up front, handed explicitly from `compile` through
the pass pipeline to every pass and lowering rule (never written into the IR, never read from
globals or from the compiling machine once made).

This is plain data. `estuary.backends.options.create_options` makes one for a target (resolving the
target's kind, the CPU's vector width and the worker count), `parse_options` reads MLIR's textual pass-
option form (`estuary-opt --lower-nn-to-tosa="cpu-lanes=8 retile=true"`). Options made by hand carry
what they say: without `cpu_lanes` an llvm-cpu compile keeps IREE's own tiles everywhere.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

# The worker count the CPU tile rules balance workgroups for when compiling for a named CPU: an
# assumption, since a CPU name says nothing about the core count of the machine that will run
# the artefact (balance affects speed only). For `cpu="host"` the default is the compiling
# machine's core count, since `host` means "this machine".
NAMED_CPU_WORKERS = 8
MAX_WORKERS = 64
# Reduced precision is opt-in: the inputs of every matmul and convolution rounded to bf16 or fp16
# (IREE's contraction-input demotion), products accumulated in float32. Accuracy against float32:
# docs/performance.md, "Reduced precision".
PRECISIONS = ("fp32", "bf16", "fp16")


def default_workers(cpu: str) -> int:
    """The one default of `CompileOptions.workers`: the compiling machine's cores for `host`,
    else NAMED_CPU_WORKERS."""
    if cpu == "host":
        return max(1, min(os.cpu_count() or 1, MAX_WORKERS))
    return NAMED_CPU_WORKERS


@dataclass(frozen=True)
class CompileOptions:
    """One compile's settings. `workers=0` resolves to `default_workers(cpu)` when made; the
    other fields are taken as given (`backends.options.create_options` derives them from a target)."""

    target: str = "llvm-cpu"
    cpu: str = "host"  # llvm-cpu target CPU as given (`host`, an LLVM CPU name or x86-64-vN)
    optimize: bool = True  # the nn-level optimization passes
    disabled: frozenset[str] = frozenset()  # optional passes switched off by name
    # float32 lanes of the llvm-cpu target CPU's vector registers (create_options: backends/llvm_cpu/host.py,
    # the one source of the vector width for the lowering forms and the tile rules); None: unknown
    cpu_lanes: int | None = None
    winograd: bool = False  # 3x3 convolutions in Winograd form (llvm-cpu)
    # cpu-tiles: the measured llvm-cpu lowering forms and tile rules (on an AVX2 or AVX-512 CPU, optimizing)
    retile: bool = False
    workers: int = 0  # CPU worker count the tile rules balance workgroups for; 0: default_workers(cpu)
    extra_flags: tuple[str, ...] = ()  # IREE flags appended to the target's
    precision: str = "fp32"  # inputs of matmuls and convolutions: fp32, or bf16/fp16 (float32 accumulation)
    gpu: bool = False  # the target is a GPU (its lowering forms differ from the CPU's); set from the target

    def __post_init__(self) -> None:
        if not self.workers:
            object.__setattr__(self, "workers", default_workers(self.cpu))

    @property
    def tile_lanes(self) -> int | None:
        """The float32 lanes the measured llvm-cpu forms and tile rules are built for: `cpu_lanes`
        (8: AVX2, 16: AVX-512) with `retile`, else None (the generic forms, IREE's tiles)."""
        return self.cpu_lanes if self.retile else None
