"""One module per op family; importing them registers every `nn` op declaration."""
from estuary.dialects.ops import (  # noqa: F401
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
