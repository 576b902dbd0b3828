"""Imports every family of lowering rules (each registers its rules on import)."""
from estuary.passes.lowering import (  # noqa: F401
    activation,
    constant,
    convolution,
    elementwise,
    matmul,
    normalization,
    pooling,
    recurrent,
    reduction,
    shape,
)
