"""The default pass pipeline of `estuary compile`."""
from estuary.errors import EstuaryError
from estuary.passes import PASSES, load_all

# nn-level optimizations run between verification and lowering when `optimize` is on; each can be
# switched off by name (`estuary compile --disable-pass NAME`, `compile(..., disable_passes=[...])`).
OPTIMIZATIONS = ["nn-fold-constants", "nn-fold-batch-norm", "nn-layout-nhwc", "nn-canonicalize-transposes",
                 "nn-cse", "nn-stack-step-products", "nn-merge-sibling-matmuls", "nn-split-elementwise", "nn-dce"]
DEFAULT = ["nn-verify", "lower-nn-to-tosa"]
# llvm-cpu code-generation choices, switched off the same way: Winograd 3x3 convolutions in the
# lowering (passes/lowering/winograd.py) and retiled dispatches inside the IREE compile
# (estuary/cpu_tiles.py).
IREE_OPTIMIZATIONS = ["cpu-winograd", "cpu-tiles"]


def run(nn, names):
    load_all()
    for name in names:
        PASSES[name](nn)
    return nn


def run_default(nn, optimize=True, disable=()):
    unknown = sorted(set(disable) - set(OPTIMIZATIONS) - set(IREE_OPTIMIZATIONS))
    if unknown:
        raise EstuaryError(f"cannot disable pass(es) {unknown}: the optional passes are "
                           f"{OPTIMIZATIONS + IREE_OPTIMIZATIONS}")
    names = ["nn-verify"] + ([n for n in OPTIMIZATIONS if n not in disable] if optimize else []) + ["lower-nn-to-tosa"]
    return run(nn, names)
