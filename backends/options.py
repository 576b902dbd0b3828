"""CompileOptions: everything a compile decides up front, handed explicitly from `compile` through
the pass pipeline to every pass and lowering rule (never written into the IR, never read from
globals or from the compiling machine once made)."""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass

from estuary.errors import EstuaryError

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


def host_workers() -> int:
    return max(1, min(os.cpu_count() or 1, MAX_WORKERS))


@dataclass(frozen=True)
class CompileOptions:
    """One compile's settings. Make it with `CompileOptions.create(...)`, which resolves the
    derived fields (lanes, Winograd, retiling) from the target, CPU and switches; the plain
    constructor takes every field as given (lit tests and estuary-opt state what they need)."""

    target: str = "llvm-cpu"
    cpu: str = "host"  # llvm-cpu target CPU as given (`host`, an LLVM CPU name or x86-64-vN)
    optimize: bool = True  # the nn-level optimization passes
    disabled: frozenset[str] = frozenset()  # optional passes switched off by name
    cpu_lanes: int | None = None  # float32 vector lanes the CPU lowering forms are built for; None: IREE's forms
    winograd: bool = False  # 3x3 convolutions in Winograd form (llvm-cpu)
    retile: bool = False  # cpu-tiles: rewrite IREE's tile choices between configuration and code generation
    workers: int = 2  # CPU worker count the tile rules balance workgroups for
    extra_flags: tuple[str, ...] = ()  # IREE flags appended to the target's
    precision: str = "fp32"  # inputs of matmuls and convolutions: fp32, or bf16/fp16 (float32 accumulation)

    @classmethod
    def create(cls, target: str = "llvm-cpu", *, cpu: str = "host", optimize: bool | None = None,
               disable_passes: tuple[str, ...] | list[str] | frozenset[str] = (), workers: int | None = None,
               extra_flags: tuple[str, ...] | list[str] = (), precision: str = "fp32") -> CompileOptions:
        """Options for compiling for `target`: `optimize=None` means on unless ESTUARY_OPTIMIZE=0
        (the test suite's passes-off run); `workers=None` the default described at NAMED_CPU_WORKERS."""
        from estuary.backends import targets
        from estuary.backends.llvm_cpu import host

        targets.get(target)  # unknown target: a clear error before anything else
        if optimize is None:
            optimize = os.environ.get("ESTUARY_OPTIMIZE", "1") != "0"
        if workers is None:
            workers = host_workers() if cpu == "host" else NAMED_CPU_WORKERS
        if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= MAX_WORKERS:
            raise EstuaryError(f"workers must be a whole number from 1 to {MAX_WORKERS}, got {workers!r}")
        if precision not in PRECISIONS:
            raise EstuaryError(f"unknown precision {precision!r}; choose one of {', '.join(PRECISIONS)}")
        disabled = frozenset(disable_passes)
        cpu_forms = target == "llvm-cpu" and optimize
        retile = cpu_forms and "cpu-tiles" not in disabled
        return cls(target=target, cpu=cpu, optimize=bool(optimize), disabled=disabled,
                   cpu_lanes=host.vector_lanes(cpu) if retile else None,
                   winograd=cpu_forms and "cpu-winograd" not in disabled, retile=retile,
                   workers=workers, extra_flags=tuple(extra_flags), precision=precision)

    @property
    def gpu(self) -> bool:
        """Whether the target is a GPU (its lowering forms differ from the CPU's)."""
        from estuary.backends import targets

        return targets.get(self.target).gpu

    @classmethod
    def parse(cls, text: str, base: CompileOptions | None = None) -> CompileOptions:
        """Options in MLIR's textual pass-option form, space-separated `key=value` pairs:
        `target=vulkan-spirv cpu-lanes=8 winograd=true disable=nn-cse,nn-dce workers=4`."""
        base = base or cls()
        changes: dict[str, object] = {}
        for item in text.split():
            key, sep, value = item.partition("=")
            field = key.replace("-", "_")
            if not sep or field not in _PARSERS:
                raise EstuaryError(f"unknown pass option {item!r}; options are "
                                   f"{', '.join(k.replace('_', '-') + '=' for k in _PARSERS)}")
            try:
                changes[field] = _PARSERS[field](value)
            except ValueError:
                raise EstuaryError(f"bad value for pass option {key!r}: {value!r}") from None
        return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def _bool(text: str) -> bool:
    if text.lower() in ("1", "true", "on", "yes"):
        return True
    if text.lower() in ("0", "false", "off", "no"):
        return False
    raise ValueError(text)


def _lanes(text: str) -> int | None:
    return None if text.lower() in ("", "none") else int(text)


_PARSERS: dict[str, Callable[[str], object]] = {
    "target": str, "cpu": str, "optimize": _bool, "cpu_lanes": _lanes, "winograd": _bool, "retile": _bool,
    "workers": int, "disabled": lambda t: frozenset(x for x in t.split(",") if x),
    "extra_flags": lambda t: tuple(x for x in t.split(",") if x), "precision": str,
}
