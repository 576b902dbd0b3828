"""The IREE HAL targets Estuary compiles for: flags, runtime driver, and what differs per target."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from estuary.backends import abi, llvm_cpu, spirv
from estuary.base.options import CompileOptions
from estuary.base.errors import EstuaryError
from estuary.passes.lowering import register_target


@dataclass(frozen=True)
class Target:
    """One IREE HAL target. GPU chip choices (cuda's sm_80, rocm's gfx942) are overridable with
    the caller's extra flags."""

    name: str
    driver: str  # the iree.runtime driver that runs its artefacts
    device_flags: tuple[str, ...]  # IREE flags naming the target device
    gpu: bool  # lowering rules take their GPU forms
    output_storage: bool = False  # results written into caller-provided buffers (abi.output_storage)
    after_lowering: tuple[str, ...] = ()  # passes run on the lowered module (workarounds)
    target_flags: Callable[[CompileOptions], list[str]] = field(default=lambda options: [])
    retunes: bool = False  # IREE's tile choices pass through backends/llvm_cpu/retune.py (phases.py)

    def flags(self, options: CompileOptions, *, keep_f64: bool = False) -> list[str]:
        """Every IREE flag of a compile for this target with `options`; `keep_f64`: a lowering
        needs real float64 arithmetic (IREE demotes f64 to f32 by default)."""
        flags = list(self.device_flags) + abi.EXECUTION_MODEL + self.target_flags(options)
        flags += list(options.extra_flags)
        if keep_f64 and not self.gpu:
            flags.append("--iree-input-demote-f64-to-f32=false")
        return flags


TARGETS = {t.name: t for t in (
    Target("llvm-cpu", "local-task", ("--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu"),
           gpu=False, output_storage=True, after_lowering=("cpu-fuse-int8-padding",), target_flags=llvm_cpu.flags,
           retunes=True),
    Target("vulkan-spirv", "vulkan", ("--iree-hal-target-device=vulkan",), gpu=True,
           after_lowering=("spirv-isolate-reductions",), target_flags=spirv.vulkan_flags),
    Target("cuda", "cuda", ("--iree-hal-target-device=cuda", "--iree-cuda-target=sm_80"), gpu=True),
    Target("rocm", "hip", ("--iree-hal-target-device=hip", "--iree-rocm-target=gfx942"), gpu=True),
    Target("metal-spirv", "metal", ("--iree-hal-target-device=metal",), gpu=True,
           after_lowering=("spirv-isolate-reductions",)),
)}


# cuda and rocm have no backend module of their own (their Target entry above is all there is):
# they lower with the generic rules. llvm-cpu and the SPIR-V targets declare themselves in
# llvm_cpu/lowering/ and spirv.py, imported above.
register_target("cuda")
register_target("rocm")


def get(name: str) -> Target:
    """The Target called `name`, or a clear error listing the others."""
    try:
        return TARGETS[name]
    except (KeyError, TypeError):
        raise EstuaryError(f"unknown target {name!r}; choose one of {sorted(TARGETS)}") from None
