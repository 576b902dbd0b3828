"""The default pass pipeline of `estuary compile`: verify, optimize, lower, then the target's
workarounds on the lowered module."""
from __future__ import annotations

from typing import Any

from estuary.backends import targets
from estuary.base.options import CompileOptions
from estuary.base.errors import EstuaryError
from estuary.passes import PASSES, load_all

# nn-level optimizations run between verification and lowering when `optimize` is on; each can be
# switched off by name (`estuary compile --disable-pass NAME`, `compile(..., disable_passes=[...])`).
OPTIMIZATIONS = ["nn-fold-constants", "nn-fold-batch-norm", "nn-layout-nhwc", "nn-canonicalize-transposes",
                 "nn-cse", "nn-stack-step-products", "nn-merge-sibling-matmuls", "nn-split-elementwise", "nn-dce"]
# llvm-cpu code-generation choices, switched off the same way: Winograd 3x3 convolutions in the
# lowering (backends/llvm_cpu/lowering/winograd.py) and retiled dispatches inside the IREE compile
# (backends/llvm_cpu).
IREE_OPTIMIZATIONS = ["cpu-winograd", "cpu-tiles"]


def run(nn: Any, names: list[str], options: CompileOptions | None = None) -> dict[str, Any]:
    """Run the passes `names` in order with `options`; returns their side results, merged."""
    load_all()
    options = options or CompileOptions()
    results: dict[str, Any] = {}
    for name in names:
        results.update(PASSES[name](nn, options) or {})
    return results


def passes_for(options: CompileOptions) -> list[str]:
    """The pipeline for `options`: verification, the optimizations it keeps, the lowering and the
    target's passes on the lowered module."""
    unknown = sorted(set(options.disabled) - set(OPTIMIZATIONS) - set(IREE_OPTIMIZATIONS))
    if unknown:
        raise EstuaryError(f"cannot disable pass(es) {unknown}: the optional passes are "
                           f"{OPTIMIZATIONS + IREE_OPTIMIZATIONS}")
    optimizations = [n for n in OPTIMIZATIONS if n not in options.disabled] if options.optimize else []
    return (["nn-verify"] + optimizations + ["lower-nn-to-tosa", "limit-elementwise-chains"] +
            list(targets.get(options.target).after_lowering))


def run_default(nn: Any, options: CompileOptions) -> dict[str, Any]:
    """Run the compile pipeline for `options` on `nn`; returns the passes' side results."""
    return run(nn, passes_for(options), options)
