"""The default pass pipeline of `estuary compile`."""
from estuary.passes import PASSES, load_all

# nn-level optimizations run between verification and lowering when `optimize` is on.
OPTIMIZATIONS = ["nn-fold-constants", "nn-cse", "nn-dce"]
DEFAULT = ["nn-verify", "lower-nn-to-tosa"]


def run(nn, names):
    load_all()
    for name in names:
        PASSES[name](nn)
    return nn


def run_default(nn, optimize=True):
    names = ["nn-verify"] + (OPTIMIZATIONS if optimize else []) + ["lower-nn-to-tosa"]
    return run(nn, names)
