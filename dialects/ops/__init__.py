"""One module per op family; importing them registers every `nn` op declaration.

`FAMILIES` is the one list of op families: dialects/ops/<family>.py declares them (an op's family
is the name of the module that declares it), and the lowering rules (passes/lowering/<family>.py)
and the lit and numeric tests (lit/*/<family>.mlir, tests/ops/test_<family>.py) follow it.
"""
import importlib

FAMILIES = (
    "activation",
    "constant",
    "convolution",
    "elementwise",
    "indexing",
    "lookup",
    "math",
    "matmul",
    "normalization",
    "pooling",
    "quantized",
    "random",
    "recurrent",
    "reduction",
    "shape",
)

for _family in FAMILIES:
    importlib.import_module(f"{__name__}.{_family}")
