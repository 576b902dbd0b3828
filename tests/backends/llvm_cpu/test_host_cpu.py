"""`--target-cpu host` on x86-64: kept with AVX-512, else the x86-64 level the host really has;
the vector lanes of every CPU (host.py), the same as IREE's target states."""
import pytest

from estuary.backends import targets
from estuary.backends.llvm_cpu import host as host_cpu
from estuary.backends.options import create_options
from estuary.base.options import CompileOptions


def phases_missing():
    from estuary.backends.llvm_cpu import phases

    return phases._phase_setters() is None

V2 = {"cx16", "lahf_lm", "popcnt", "pni", "sse4_1", "sse4_2", "ssse3"}
V3 = V2 | {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"}
V4 = V3 | {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}


def test_levels():
    assert host_cpu.level(set()) == "x86-64"
    assert host_cpu.level(V2) == "x86-64-v2"
    assert host_cpu.level(V3 | {"sha_ni"}) == "x86-64-v3"
    assert host_cpu.level(V4) == "x86-64-v4"
    assert host_cpu.level(V3 - {"fma"}) == "x86-64-v2"
    assert host_cpu.level((V4 - {"abm"})) == "x86-64-v2"   # a level needs every lower one


def test_choice():
    assert host_cpu.choose(V4 | {"avx512_vnni"}) == "host"   # AVX-512: LLVM's host CPU
    assert host_cpu.choose(V3) == "x86-64-v3"                # e.g. a Zen 4 whose VM hides AVX-512
    assert host_cpu.choose(V3 | {"avx512f"}) == "x86-64-v3"  # part of AVX-512 only
    assert host_cpu.choose(None) == "host"                   # no /proc/cpuinfo


def test_cpuinfo_flags(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu avx2 fma\n\nprocessor\t: 1\nflags\t\t: fpu avx2 fma\n")
    assert host_cpu._cpuinfo_flags(str(info)) == {"fpu", "avx2", "fma"}
    assert host_cpu._cpuinfo_flags(str(tmp_path / "missing")) is None


def test_only_host_is_resolved():
    assert host_cpu.resolve("generic") == "generic"
    assert host_cpu.resolve("znver3") == "znver3"
    flags = targets.get("llvm-cpu").flags(CompileOptions(cpu="generic"))
    assert "--iree-llvmcpu-target-cpu=generic" in flags
    resolved = host_cpu.resolve("host")
    assert f"--iree-llvmcpu-target-cpu={resolved}" in targets.get("llvm-cpu").flags(CompileOptions())


def test_named_cpus_have_their_lanes():
    assert [host_cpu.vector_lanes(c) for c in ("x86-64-v4", "skylake-avx512", "znver4", "icelake-server")] == [16] * 4
    assert [host_cpu.vector_lanes(c) for c in ("x86-64-v3", "haswell", "znver3", "sandybridge")] == [8] * 4
    assert [host_cpu.vector_lanes(c) for c in ("x86-64-v2", "generic", "neoverse-v1", "apple-m1")] == [4] * 4
    assert host_cpu.vector_lanes("no-such-cpu") == 4  # LLVM ignores an unknown name: the generic CPU
    assert host_cpu.measured("haswell") and host_cpu.measured("sapphirerapids")
    assert not host_cpu.measured("sandybridge") and not host_cpu.measured("x86-64-v2")  # AVX only; SSE
    assert not host_cpu.measured("neoverse-v1")


# compile_matrix.py's CPUs (AArch64 ones cross-compiled) and AVX without AVX2
SAMPLE = ["host", "x86-64-v2", "x86-64-v3", "x86-64-v4", "haswell", "skylake-avx512", "icelake-server",
          "sapphirerapids", "emeraldrapids", "znver3", "znver4", "sandybridge", "aarch64:generic",
          "aarch64:neoverse-v1", "aarch64:apple-m1"]
AARCH64_TRIPLE = "--iree-llvmcpu-target-triple=aarch64-unknown-linux-gnu"
_ADD = """func.func @main(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = tosa.add %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}"""


def _iree_target(options):
    """The `#hal.executable.target` IREE configures a tiny module with for `options` (compiled to
    the `executable-configurations` phase with the flags of a real compile)."""
    import re

    from iree.compiler import api, ir

    from estuary.backends.llvm_cpu import phases

    session = api.Session()
    session.context.load_all_available_dialects()
    session.set_flags(*targets.get("llvm-cpu").flags(options))
    with session.context:
        module = ir.Module.parse(_ADD)
    inv = session.invocation()
    inv.import_module(module.operation)
    phases._phase_setters()[0](inv._inv_p, b"executable-configurations")
    assert inv.execute()
    found = set(re.findall(r'#hal\.executable\.target<"llvm-cpu"[^\n]*?\}>', str(inv.export_module())))
    inv.close()
    assert len(found) == 1, found
    return found.pop()


def _iree_lanes(target):
    """What retune.py read from IREE's target before the options carried the lanes: the native
    vector size in float32 lanes, and the lanes of the measured rules (16 with AVX-512, 8 with
    AVX2, else None) from its CPU features."""
    import re

    native = int(re.search(r"native_vector_size = (\d+)", target).group(1)) // 4
    features = re.search(r'cpu_features = "([^"]*)"', target)
    features = set(features.group(1).split(",")) if features else set()
    for feature, lanes in (("avx512f", 16), ("avx2", 8)):
        if f"+{feature}" in features and f"-{feature}" not in features:
            return native, lanes
    return native, None


@pytest.mark.skipif(phases_missing(), reason="this IREE build has no phase control")
@pytest.mark.parametrize("cpu", SAMPLE)
def test_lanes_are_what_iree_configures(cpu):
    """One source for the vector width: the options' lanes (host.py) are the ones IREE's target
    attribute states for the same flags, and the measured rules apply exactly where its features
    hold AVX2 or AVX-512."""
    name, flags = (cpu.split(":")[1], (AARCH64_TRIPLE,)) if cpu.startswith("aarch64:") else (cpu, ())
    options = create_options("llvm-cpu", cpu=name, extra_flags=flags, optimize=True)
    native, measured = _iree_lanes(_iree_target(options))
    assert options.cpu_lanes == native
    assert options.tile_lanes == measured
