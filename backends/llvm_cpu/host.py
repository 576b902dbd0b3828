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


# The float32 lanes of the vectors IREE 3.13 gives an x86 CPU name (its target's
# `native_vector_size` / 4) and whether its features hold AVX2 or AVX-512, the CPUs the measured
# forms and tile rules were made for. Read from IREE's configured target for every name LLVM's
# x86-64 target lists (2026-11-29; tests/backends/llvm_cpu/test_host_cpu.py checks a sample against IREE). LLVM's
# underscore spellings (clang's cpu_dispatch names: icelake_server, skylake_avx512, ...) get only
# AVX there, and mic_avx512 64-byte vectors without `+avx512f`: IREE's view, kept as it is.
AVX512 = frozenset("""cannonlake cascadelake cooperlake diamondrapids emeraldrapids graniterapids graniterapids-d
    icelake-client icelake-server knl knm novalake rocketlake sapphirerapids skx skylake-avx512 tigerlake
    x86-64-v4 znver4 znver5 znver6 c86-4g-m7 c86-4g-m8""".split())
AVX2 = frozenset("""alderlake arrowlake arrowlake-s bdver4 broadwell clearwaterforest core-avx2 gracemont grandridge
    haswell lunarlake meteorlake pantherlake raptorlake sierraforest skylake wildcatlake x86-64-v3 znver1 znver2
    znver3 c86-4g-m4 c86-4g-m6""".split())
AVX = frozenset("""sandybridge ivybridge corei7-avx core-avx-i bdver1 bdver2 bdver3 btver2 arrowlake_s core_2nd_gen_avx
    core_3rd_gen_avx core_4th_gen_avx core_4th_gen_avx_tsx core_5th_gen_avx core_5th_gen_avx_tsx graniterapids_d
    icelake_client icelake_server skylake_avx512""".split())  # 32-byte vectors without AVX2
WIDE_LANES = {**{name: 16 for name in AVX512}, **{name: 8 for name in AVX2 | AVX}, "mic_avx512": 16}
MEASURED = AVX512 | AVX2
# Every other CPU IREE targets has 16-byte vectors: x86-64 with SSE only, and every AArch64 CPU
# (NEON; IREE 3.13 configures SVE ones such as neoverse-v1 with 16-byte vectors too). A name LLVM
# does not know is ignored by it ("not a recognized processor"): the generic CPU, 16 bytes as well.
NARROW_LANES = 4


def _host_lanes() -> tuple[int | None, bool]:
    """(lanes, measured) of `host` where it is not resolved to a name: an x86-64 host with the
    whole AVX-512 baseline (16, measured), an AArch64 host (4), else unknown."""
    machine = platform.machine().lower()
    if machine in ("aarch64", "arm64"):
        return NARROW_LANES, False
    flags = _cpuinfo_flags() if machine in ("x86_64", "amd64") else None
    if flags is not None and level(flags) == "x86-64-v4":
        return 16, True
    return None, False


def _lanes(cpu: str) -> tuple[int | None, bool]:
    resolved = resolve(cpu)
    if resolved == "host":
        return _host_lanes()
    return WIDE_LANES.get(resolved, NARROW_LANES), resolved in MEASURED


def vector_lanes(cpu: str) -> int | None:
    """float32 lanes of the vector registers llvm-cpu code for `cpu` gets (`host` resolved as
    above): 16 with AVX-512, 8 with AVX or AVX2, 4 for other x86-64 and AArch64 CPUs; None for a
    `host` whose vectors are unknown. The compile options carry it (`CompileOptions.cpu_lanes`)."""
    return _lanes(cpu)[0]


def measured(cpu: str) -> bool:
    """Whether `cpu` has AVX2 or AVX-512, where the measured lowering forms and tile rules apply
    (`CompileOptions.retile`); elsewhere IREE's own choices stand, within the limits every
    llvm-cpu compile gets."""
    return _lanes(cpu)[1]
