"""CompileOptions: made once, handed to every pass; textual pass options for estuary-opt."""
import pytest

import estuary
from estuary.backends import targets
from estuary.base.options import CompileOptions
from estuary.backends.options import create_options, parse_options
from estuary.cli import opt_main


def test_create_resolves_the_derived_fields():
    cpu = create_options("llvm-cpu", cpu="x86-64-v3", optimize=True, workers=4)
    assert (cpu.cpu_lanes, cpu.winograd, cpu.retile, cpu.tile_lanes, cpu.workers) == (8, True, True, 8, 4)
    # the vector width is the CPU's whatever the switches: the limits on IREE's tiles use it
    off = create_options("llvm-cpu", cpu="x86-64-v3", optimize=True, disable_passes=["cpu-tiles", "cpu-winograd"])
    assert (off.cpu_lanes, off.winograd, off.retile, off.tile_lanes) == (8, False, False, None)
    unoptimized = create_options("llvm-cpu", cpu="x86-64-v3", optimize=False)
    assert (unoptimized.cpu_lanes, unoptimized.winograd, unoptimized.retile) == (8, False, False)
    gpu = create_options("vulkan-spirv", optimize=True)
    assert gpu.gpu and not gpu.retile and not gpu.winograd and gpu.cpu_lanes is None
    assert create_options("llvm-cpu", cpu="znver4").workers == 8  # a named CPU: not this machine's cores


@pytest.mark.parametrize("cpu, lanes, retile", [
    ("skylake-avx512", 16, True), ("znver4", 16, True), ("haswell", 8, True), ("znver3", 8, True),
    ("x86-64-v2", 4, False),       # SSE: the limits only, IREE's own tiles
    ("sandybridge", 8, False),     # AVX without AVX2: not what the rules were measured on
    ("neoverse-v1", 4, False),     # AArch64 (cross-compiled): NEON's 16 bytes, SVE or not
])
def test_named_cpus_resolve_their_lanes(cpu, lanes, retile):
    """Named CPUs carry their lanes as x86-64-v3/v4 do; the measured forms and rules (`retile`)
    are for AVX2 and AVX-512 CPUs only."""
    o = create_options("llvm-cpu", cpu=cpu, optimize=True)
    assert (o.cpu_lanes, o.retile, o.tile_lanes) == (lanes, retile, lanes if retile else None)


def test_bad_options_are_clear_errors():
    with pytest.raises(estuary.EstuaryError, match="unknown target 'tpu'"):
        create_options("tpu")
    with pytest.raises(estuary.EstuaryError, match="workers must be a whole number"):
        create_options("llvm-cpu", workers=0)
    with pytest.raises(estuary.EstuaryError, match="unknown pass option 'lanes=8'"):
        parse_options("lanes=8")
    with pytest.raises(estuary.EstuaryError, match="bad value for pass option 'cpu-lanes'"):
        parse_options("cpu-lanes=eight")


def test_parse_is_mlir_textual_form():
    o = parse_options("target=vulkan-spirv cpu-lanes=8 winograd=true disabled=nn-cse,nn-dce workers=4")
    assert (o.target, o.cpu_lanes, o.winograd, o.disabled, o.workers) == (
        "vulkan-spirv", 8, True, frozenset({"nn-cse", "nn-dce"}), 4)
    assert o.tile_lanes is None and parse_options("cpu-lanes=8 retile=true").tile_lanes == 8
    assert parse_options("") == CompileOptions()


def test_flags_follow_the_options():
    flags = targets.get("llvm-cpu").flags(CompileOptions(cpu="generic", extra_flags=("--x",)), keep_f64=True)
    assert "--iree-llvmcpu-target-cpu=generic" in flags and flags[-2:] == ["--x", "--iree-input-demote-f64-to-f32=false"]
    vulkan = targets.get("vulkan-spirv")
    assert any(f.startswith("--iree-vulkan-target-features") for f in vulkan.flags(CompileOptions("vulkan-spirv")))
    own = vulkan.flags(CompileOptions("vulkan-spirv", extra_flags=("--iree-vulkan-target=rdna3",)))
    assert not any(f.startswith("--iree-vulkan-target-features") for f in own)


def test_estuary_opt_takes_pass_options(tmp_path, capsys):
    src = tmp_path / "m.mlir"
    src.write_text('func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n'
                   '  %0 = "nn.softplus"(%x) : (tensor<4xf32>) -> tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n')
    assert opt_main([str(src), "--lower-nn-to-tosa"]) == 0
    assert "math.log1p" in capsys.readouterr().out
    assert opt_main([str(src), "--lower-nn-to-tosa=target=vulkan-spirv"]) == 0
    assert "math.log1p" not in capsys.readouterr().out
    assert opt_main([str(src), "--lower-nn-to-tosa=lanes=8"]) == 1
    assert "unknown pass option" in capsys.readouterr().err
