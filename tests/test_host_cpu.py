"""`--target-cpu host` on x86-64: kept with AVX-512, else the x86-64 level the host really has."""
from estuary.backends import targets
from estuary.base.options import CompileOptions
from estuary.backends.llvm_cpu import host as host_cpu

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
