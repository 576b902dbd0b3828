"""What `--target-cpu host` means for llvm-cpu: the host's CPU, or the x86-64 level it really has.

IREE 3.13 builds its `host` target from LLVM's host CPU name plus the host's features. A virtual
machine may hide features the CPU's name implies: on a Zen 4 (LLVM: `znver4`) whose hypervisor
masks AVX-512, the target's feature string holds both `+avx512f` (from the name) and `-avx512f`
(from the host). LLVM honours the last and emits AVX2 code, but IREE's tile and ukernel choices
see `+avx512f` and are made for 16-lane registers, so every matrix product runs in halves with
spills (docs/performance.md).
So on an x86-64 host without the whole AVX-512 baseline, `host` becomes the highest x86-64
microarchitecture level whose features /proc/cpuinfo lists. Hosts with AVX-512, other
architectures, and hosts without /proc/cpuinfo keep `host`.
"""
from __future__ import annotations

import functools
import platform

# /proc/cpuinfo flags each x86-64 level adds (LLVM's x86-64-v2/v3/v4; sse3 is `pni`, lzcnt `abm`)
LEVELS = (
    ("x86-64-v2", {"cx16", "lahf_lm", "popcnt", "pni", "sse4_1", "sse4_2", "ssse3"}),
    ("x86-64-v3", {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"}),
    ("x86-64-v4", {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}),
)


def level(flags: set[str]) -> str:
    """The highest x86-64 level name whose features are all in `flags` (a set of cpuinfo flags)."""
    name, have = "x86-64", set()
    for level_name, needs in LEVELS:
        have |= needs
        if not have <= flags:
            break
        name = level_name
    return name


def _cpuinfo_flags(path: str = "/proc/cpuinfo") -> set[str] | None:
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return None


def choose(flags: set[str] | None) -> str:
    """The target CPU for `host` given the host's cpuinfo flags (None: unknown)."""
    if flags is None:
        return "host"
    name = level(flags)
    return "host" if name == "x86-64-v4" else name


@functools.lru_cache(maxsize=None)
def resolve(cpu: str) -> str:
    """`cpu` itself unless it is `host` on an x86-64 host (see the module docstring)."""
    if cpu != "host" or platform.machine().lower() not in ("x86_64", "amd64"):
        return cpu
    return choose(_cpuinfo_flags())


LANES = {"x86-64-v3": 8, "x86-64-v4": 16}


def vector_lanes(cpu: str) -> int | None:
    """float32 lanes of the vector registers llvm-cpu code for `cpu` gets on this host: 8 for an
    AVX2 level, 16 for AVX-512 (`host` on such a host, or x86-64-v4), else None (unknown)."""
    resolved: str | None = resolve(cpu)
    if resolved == "host":
        flags = _cpuinfo_flags() if platform.machine().lower() in ("x86_64", "amd64") else None
        resolved = level(flags) if flags is not None else None
    return LANES.get(resolved) if resolved is not None else None
