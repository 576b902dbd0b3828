"""WebNN method mappings, one module per op family (importing registers them)."""
from estuary.importers.webnn.ops import (  # noqa: F401
    activation,
    convolution,
    elementwise,
    matmul,
    normalization,
    pooling,
    recurrent,
    reduction,
    shape,
)
