"""Core ML embeddings: embedding (classic) and embeddingND."""
import numpy as np

from estuary.base import dims
from estuary.importers.coreml.nd import shape_of
from estuary.importers.coreml.ops import OPS


@OPS.op("embedding")
def embedding(c, layer):
    p = layer.embedding
    x = c.input(layer)
    shape = list(c.spec(x).shape)
    c.check(len(shape) >= 3 and shape[-3:] == [1, 1, 1] or len(shape) < 3 and shape[-1:] == [1],
            f"expects indices of shape [..., 1, 1, 1], got {shape}")
    lead = shape[:-3] if len(shape) >= 3 else shape[:-1]
    n_in, n_out = int(p.inputDim), int(p.outputChannels)
    table = c.weights(p.weights, [n_out, n_in]).T.copy()
    if p.hasBias:
        table = table + c.weights(p.bias, [n_out], "bias")[None, :]
    idx = c.op("cast", [c.reshape(x, [dims.size(lead)])], to="int32")
    y = c.op("gather", [c.const(table), idx], axis=0)
    return c.reshape(y, lead + ([n_out, 1, 1] if len(shape) >= 3 else [n_out]))


@OPS.op("embeddingND")
def convert_embedding_nd(c, layer):
    """Rows of the [embeddingSize, vocabSize] weights picked by the indices in the last (size-1)
    dimension of the input, plus the optional bias. Out-of-range indices are clamped."""
    p = layer.embeddingND
    x = c.input(layer)
    shape = shape_of(c, x)
    vocab, size = int(p.vocabSize), int(p.embeddingSize)
    c.check(vocab > 0 and size > 0, f"vocabSize {vocab} and embeddingSize {size} must be positive")
    c.check(len(shape) >= 2 and shape[-1] == 1, f"input shape {shape} must have rank >= 2 and last dimension 1")
    table = np.ascontiguousarray(c.weights(p.weights, (size, vocab)).T)
    idx = c.op("reshape", [x], new_shape=shape[:-1])
    if c.spec(idx).dtype != "int32":
        idx = c.op("cast", [idx], to="int32")
    y = c.op("gather", [c.const(table), idx], axis=0)
    if p.hasBias:
        y = c.op("add", [y, c.const(c.weights(p.bias, (size,), what="bias"))])
    return y
