"""The llvm-cpu target: IREE flags, host CPU detection (host.py), the tile policy (tile_rules.py)
and its application between IREE's compile phases (retune.py, phases.py)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from estuary.backends.llvm_cpu import host, pad_fusion  # noqa: F401  (pad_fusion registers its pass)

if TYPE_CHECKING:
    from estuary.base.options import CompileOptions

# CPU flags chosen by measurement (docs/performance.md): data tiling with the mmt4d ukernel packs
# constant weights at compile time and runs convolutions and matmuls on ukernels; IREE's own
# code for pack/unpack fuses the packing better than the pack ukernels. im2col
# (`--iree-global-opt-use-im2col-for-convs`) is slower together with data tiling, so it is off.
CPU_FLAGS = ["--iree-opt-level=O3", "--iree-opt-data-tiling", "--iree-llvmcpu-enable-ukernels=mmt4d"]


def flags(options: CompileOptions) -> list[str]:
    """The llvm-cpu flags for `options.cpu` (`host` resolved as host.py explains)."""
    return [f"--iree-llvmcpu-target-cpu={host.resolve(options.cpu)}"] + CPU_FLAGS
