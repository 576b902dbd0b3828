"""Core ML products: innerProduct, dot, batchedMatmul."""
import math

import numpy as np

from estuary.base import dims
from estuary.importers.coreml.ops import OPS


@OPS.op("innerProduct")
def inner_product(c, layer):
    p = layer.innerProduct
    c.check(not p.int8DynamicQuantize, "int8DynamicQuantize (int8 arithmetic on a dynamically quantized "
            "input) is not supported: the spec leaves the input quantization undefined")
    x = c.input(layer)
    shape = list(c.spec(x).shape)
    cin, cout = int(p.inputChannels), int(p.outputChannels)
    rank = len(shape)
    c.check(1 <= rank <= 5, f"expects an input of rank 1..5, got {shape}")
    if rank <= 3:
        rows, k, out = dims.size(shape[:-1]), shape[-1], shape[:-1] + [cout]
    elif rank == 4:
        rows, k, out = shape[0], dims.size(shape[1:]), [shape[0], cout, 1, 1]
    else:
        rows, k, out = shape[0] * shape[1], dims.size(shape[2:]), shape[:2] + [cout, 1, 1]
    c.check(k == cin, f"the input {shape} has {k} channels, inputChannels is {cin}")
    w = c.const(c.weights(p.weights, [cout, cin]))
    b = c.const(c.weights(p.bias, [cout], "bias")) if p.hasBias else None
    y = c.op("gemm", [c.reshape(x, [rows, k]), w, b], b_transpose=True)
    return c.reshape(y, out)


@OPS.op("dot")
def dot(c, layer):
    a, b = c.input(layer, 0), c.input(layer, 1)
    rank = c.spec(a).rank
    c.check(rank >= 3, "expects inputs of rank >= 3 (dot product along axis -3)")
    if layer.dot.cosineSimilarity:
        def unit(v):
            n = c.op("sqrt", [c.op("reduce_sum_square", [v], axes=[rank - 3], keep_dimensions=True)])
            return c.op("div", [v, n])
        a, b = unit(a), unit(b)
    return c.op("reduce_sum", [c.op("mul", [a, b])], axes=[rank - 3], keep_dimensions=True)


def _swap_last(c, x):
    rank = len(c.spec(x).shape)
    perm = list(range(rank))
    perm[-2:] = perm[-1], perm[-2]
    return c.op("transpose", [x], permutation=perm)


@OPS.op("batchedMatmul")
def convert_batched_matmul(c, layer):
    """numpy matmul of two inputs (1-D operands promoted and the added dimension dropped), or of one
    input with the weight matrix (X1, X2) plus an optional bias. int8DynamicQuantize is an
    execution hint: the product is computed in float."""
    p = layer.batchedMatmul
    a = c.input(layer)
    if len(layer.input) >= 2:
        b = c.input(layer, 1)
        ra, rb = len(c.spec(a).shape), len(c.spec(b).shape)
        if ra == 1:
            a = c.op("reshape", [a], new_shape=[1, c.spec(a).shape[0]])
        if rb == 1:
            b = c.op("reshape", [b], new_shape=[c.spec(b).shape[0], 1])
        if p.transposeA and ra > 1:
            a = _swap_last(c, a)
        if p.transposeB and rb > 1:
            b = _swap_last(c, b)
        y = c.op("matmul", [a, b])
        shape = list(c.spec(y).shape)
        if ra == 1:
            del shape[-2]
        if rb == 1:
            del shape[-1]
        if ra == 1 or rb == 1:
            y = c.op("reshape", [y], new_shape=shape or [1])
        return y
    x1, x2 = int(p.weightMatrixFirstDimension), int(p.weightMatrixSecondDimension)
    c.check(x1 > 0 and x2 > 0, f"weight matrix dimensions {x1} x {x2} must be positive")
    c.check(not p.transposeB, "transposeB is not defined for a weight matrix parameter")
    w = c.weights(p.weights, (x2, x1)).T  # stored as (X2, X1): the transpose of the (X1, X2) matrix
    shape = c.spec(a).shape
    if p.transposeA:
        c.check(len(shape) >= 2, "transposeA needs an input of rank >= 2")
        a = _swap_last(c, a)
        shape = c.spec(a).shape
    c.check(shape[-1] == x1, f"input's last dimension {shape[-1]} must equal weightMatrixFirstDimension {x1}")
    rows = math.prod(shape[:-1])
    flat = c.op("reshape", [a], new_shape=[rows, x1])
    bias = c.const(c.weights(p.bias, (x2,), what="bias")) if p.hasBias else None
    y = c.op("gemm", [flat, c.const(np.ascontiguousarray(w))] + ([bias] if bias is not None else []))
    return c.op("reshape", [y], new_shape=list(shape[:-1]) + [x2])
