"""Making CompileOptions for a target: `create_options` (the compile API's keywords) and `parse_options` (MLIR's
textual pass-option form, for estuary-opt and the lit tests). The options type itself is plain
data in the ground layer (estuary.base.options); what depends on the target lives here."""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable

from estuary.backends import targets
from estuary.backends.llvm_cpu import host
from estuary.base.errors import EstuaryError
from estuary.base.options import MAX_WORKERS, PRECISIONS, CompileOptions, default_workers


def create_options(target: str = "llvm-cpu", *, cpu: str = "host", optimize: bool | None = None,
           disable_passes: tuple[str, ...] | list[str] | frozenset[str] = (), workers: int | None = None,
           extra_flags: tuple[str, ...] | list[str] = (), precision: str = "fp32") -> CompileOptions:
    """Options for compiling for `target`: `optimize=None` means on unless ESTUARY_OPTIMIZE=0
    (the test suite's passes-off run); `workers=None` means `default_workers(cpu)`. For llvm-cpu
    the CPU's vector lanes come from host.py, always (the limits on IREE's tiles use them), and
    `retile` (the measured forms and tile rules) holds on AVX2 and AVX-512 CPUs only."""
    kind = targets.get(target)  # unknown target: a clear error before anything else
    if optimize is None:
        optimize = os.environ.get("ESTUARY_OPTIMIZE", "1") != "0"
    if workers is None:
        workers = default_workers(cpu)
    if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= MAX_WORKERS:
        raise EstuaryError(f"workers must be a whole number from 1 to {MAX_WORKERS}, got {workers!r}")
    if precision not in PRECISIONS:
        raise EstuaryError(f"unknown precision {precision!r}; choose one of {', '.join(PRECISIONS)}")
    disabled = frozenset(disable_passes)
    llvm_cpu = target == "llvm-cpu"
    cpu_forms = llvm_cpu and bool(optimize)
    return CompileOptions(target=target, cpu=cpu, optimize=bool(optimize), disabled=disabled,
                          cpu_lanes=host.vector_lanes(cpu) if llvm_cpu else None,
                          winograd=cpu_forms and "cpu-winograd" not in disabled,
                          retile=cpu_forms and "cpu-tiles" not in disabled and host.measured(cpu),
                          workers=workers, extra_flags=tuple(extra_flags), precision=precision, gpu=kind.gpu)


def parse_options(text: str, base: CompileOptions | None = None) -> CompileOptions:
    """Options in MLIR's textual pass-option form, space-separated `key=value` pairs:
    `target=vulkan-spirv cpu-lanes=8 retile=true winograd=true disabled=nn-cse,nn-dce workers=4`."""
    base = base or CompileOptions()
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
    if "target" in changes:
        changes["gpu"] = targets.get(str(changes["target"])).gpu
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
