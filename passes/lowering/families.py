"""Imports every family of lowering rules (each registers its rules on import)."""
from estuary.passes.lowering import (  # noqa: F401
    activation,
    constant,
    convolution,
    elementwise,
    indexing,
    lookup,
    math,
    matmul,
    normalization,
    pooling,
    quantized,
    random,
    recurrent,
    reduction,
    shape,
)
