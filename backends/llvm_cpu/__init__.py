"""The llvm-cpu target: IREE flags, the CPU's vector width (host.py), its lowering rules and
forms (lowering/), the attributes they mark ops with for the stages below (contract.py), the
int8 pad fusion (pad_fusion.py), the tile policy (tile_rules.py) and its application between
IREE's compile phases (retune.py, phases.py). Importing it registers the rules and the pass."""
from __future__ import annotations

from typing import TYPE_CHECKING

from estuary.backends.llvm_cpu import host, lowering, pad_fusion  # noqa: F401  (register rules, target, pass)

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
