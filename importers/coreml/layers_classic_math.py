"""Classic Core ML layers: innerProduct, embedding, batchnorm, mvn, l2normalize, softmax, lrn,
add/multiply/average/max/min, scale, bias, dot, reduce, loadConstant.

Classic axes: C = -3, H = -2, W = -1 (leading axes are batch); see docs/coreml.md.
"""
import numpy as np

from estuary.importers.coreml.layers_classic_common import axis, params, per_channel, scalar
from estuary.importers.coreml.registry import coreml_layer


@coreml_layer("innerProduct")
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
        rows, k, out = int(np.prod(shape[:-1])), shape[-1], shape[:-1] + [cout]
    elif rank == 4:
        rows, k, out = shape[0], int(np.prod(shape[1:])), [shape[0], cout, 1, 1]
    else:
        rows, k, out = shape[0] * shape[1], int(np.prod(shape[2:])), shape[:2] + [cout, 1, 1]
    c.check(k == cin, f"the input {shape} has {k} channels, inputChannels is {cin}")
    w = c.const(c.weights(p.weights, [cout, cin]))
    b = c.const(c.weights(p.bias, [cout], "bias")) if p.hasBias else None
    y = c.op("gemm", [c.reshape(x, [rows, k]), w, b], b_transpose=True)
    return c.reshape(y, out)


@coreml_layer("embedding")
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
    idx = c.op("cast", [c.reshape(x, [int(np.prod(lead)) if lead else 1])], to="int32")
    y = c.op("gather", [c.const(table), idx], axis=0)
    return c.reshape(y, lead + ([n_out, 1, 1] if len(shape) >= 3 else [n_out]))


def _moments(c, x, axes):
    mean = c.op("reduce_mean", [x], axes=axes, keep_dimensions=True)
    centred = c.op("sub", [x, mean])
    var = c.op("reduce_mean", [c.op("mul", [centred, centred])], axes=axes, keep_dimensions=True)
    return centred, var


@coreml_layer("batchnorm")
def batchnorm(c, layer):
    p = layer.batchnorm
    x = c.input(layer)
    shape = c.spec(x).shape
    rank = len(shape)
    c.check(rank >= 3, f"expects an input of rank >= 3, got {list(shape)}")
    ch = int(p.channels)
    c.check(shape[-3] == ch, f"the input has {shape[-3]} channels, the layer {ch}")
    gamma = per_channel(c, c.weights(p.gamma, [ch], "gamma"), x)
    beta = per_channel(c, c.weights(p.beta, [ch], "beta"), x)
    if p.computeMeanVar:
        axes = [rank - 2, rank - 1] if p.instanceNormalization else [i for i in range(rank) if i != rank - 3]
        centred, var = _moments(c, x, axes)
        norm = c.op("div", [centred, c.op("sqrt", [c.op("add", [var, scalar(c, p.epsilon)])])])
        return c.op("add", [c.op("mul", [norm, gamma]), beta])
    mean = c.const(c.weights(p.mean, [ch], "mean"))
    var = c.const(c.weights(p.variance, [ch], "variance"))
    return c.op("batch_normalization", [x, mean, var, c.const(c.weights(p.gamma, [ch], "gamma")),
                                        c.const(c.weights(p.beta, [ch], "beta"))],
                axis=rank - 3, epsilon=float(p.epsilon))


@coreml_layer("mvn")
def mvn(c, layer):
    p = layer.mvn
    x = c.input(layer)
    rank = c.spec(x).rank
    c.check(rank >= 3, "expects an input of rank >= 3")
    axes = [rank - 3, rank - 2, rank - 1] if p.acrossChannels else [rank - 2, rank - 1]
    centred, var = _moments(c, x, axes)
    if not p.normalizeVariance:
        return centred
    return c.op("div", [centred, c.op("sqrt", [c.op("add", [var, scalar(c, p.epsilon)])])])


@coreml_layer("l2normalize")
def l2normalize(c, layer):
    x = c.input(layer)
    rank = c.spec(x).rank
    c.check(rank >= 3, "expects an input of rank >= 3")
    sq = c.op("reduce_sum_square", [x], axes=[rank - 3, rank - 2, rank - 1], keep_dimensions=True)
    return c.op("div", [x, c.op("sqrt", [c.op("add", [sq, scalar(c, layer.l2normalize.epsilon)])])])


@coreml_layer("softmax")
def softmax(c, layer):
    x = c.input(layer)
    rank = c.spec(x).rank
    c.check(rank >= 3, "expects an input of rank >= 3 (softmax over axis -3)")
    return c.op("softmax", [x], axis=rank - 3)


@coreml_layer("lrn")
def lrn(c, layer):
    p = layer.lrn
    x = c.input(layer)
    shape = list(c.spec(x).shape)
    rank = len(shape)
    c.check(rank >= 3, "expects an input of rank >= 3")
    size = int(p.localSize)
    c.check(size >= 1, "localSize must be >= 1")
    ch = shape[-3]
    # window over channels [i - (size-1)/2, i + size/2]: a banded [C, C] matrix applied along C
    lo = (size - 1) // 2
    band = np.zeros((ch, ch), np.float32)
    for i in range(ch):
        band[i, max(0, i - lo):min(ch, i - lo + size)] = 1.0
    lead = shape[:-3]
    n = int(np.prod(lead)) if lead else 1
    sq = c.reshape(c.op("mul", [x, x]), [n, ch, shape[-2] * shape[-1]])
    sums = c.op("matmul", [c.const(np.broadcast_to(band, (n, ch, ch)).copy()), sq])
    sums = c.reshape(sums, shape)
    denom = c.op("add", [c.op("mul", [sums, scalar(c, p.alpha / size)]), scalar(c, p.k)])
    return c.op("div", [x, c.op("pow", [denom, scalar(c, p.beta)])])


def _fold(c, layer, nn_name):
    xs = c.inputs(layer)
    if len(xs) == 1:
        return c.op(nn_name, [xs[0], scalar(c, params(layer).alpha)])
    y = xs[0]
    for v in xs[1:]:
        y = c.op(nn_name, [y, v])
    return y


@coreml_layer("add")
def add(c, layer):
    return _fold(c, layer, "add")


@coreml_layer("multiply")
def multiply(c, layer):
    return _fold(c, layer, "mul")


@coreml_layer("max")
def maximum(c, layer):
    xs = c.inputs(layer)
    c.check(len(xs) >= 2, "expects at least 2 inputs")
    return _fold(c, layer, "max")


@coreml_layer("min")
def minimum(c, layer):
    xs = c.inputs(layer)
    c.check(len(xs) >= 2, "expects at least 2 inputs")
    return _fold(c, layer, "min")


@coreml_layer("average")
def average(c, layer):
    xs = c.inputs(layer)
    y = xs[0]
    for v in xs[1:]:
        y = c.op("add", [y, v])
    return c.op("div", [y, scalar(c, len(xs))])


def _param_blob(c, wp, shape, x, what):
    """scale/bias parameters of shape [1], [C], [1,H,W] or [C,H,W] broadcasting against x's [C,H,W]."""
    shape = [int(d) for d in shape] or [1]
    c.check(len(shape) in (1, 3), f"{what} shape {shape} must be [1], [C], [1,H,W] or [C,H,W]")
    v = c.weights(wp, shape, what)
    if len(shape) == 1:
        v = v.reshape(-1, 1, 1)
    rank = c.spec(x).rank
    return c.const(v.reshape([1] * max(rank - 3, 0) + list(v.shape)))


@coreml_layer("scale")
def scale(c, layer):
    p = layer.scale
    x = c.input(layer)
    y = c.op("mul", [x, _param_blob(c, p.scale, p.shapeScale, x, "scale")])
    if p.hasBias:
        y = c.op("add", [y, _param_blob(c, p.bias, p.shapeBias, x, "bias")])
    return y


@coreml_layer("bias")
def bias(c, layer):
    p = layer.bias
    x = c.input(layer)
    return c.op("add", [x, _param_blob(c, p.bias, p.shape, x, "bias")])


@coreml_layer("dot")
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


_REDUCE_AXES = {0: [-3, -2, -1], 1: [-2, -1], 2: [-3], 3: [-2], 4: [-1]}
_REDUCE = {0: "reduce_sum", 1: "reduce_mean", 2: "reduce_product", 4: "reduce_sum_square", 5: "reduce_l1",
           6: "reduce_l2", 7: "reduce_max", 8: "reduce_min"}


@coreml_layer("reduce")
def reduce(c, layer):
    p = layer.reduce
    x = c.input(layer)
    rank = c.spec(x).rank
    c.check(p.axis in _REDUCE_AXES, f"unknown reduce axis {p.axis}")
    axes = [axis(c, x, a) for a in _REDUCE_AXES[p.axis] if -a <= rank]
    c.check(len(axes) == len(_REDUCE_AXES[p.axis]), f"the input of rank {rank} lacks the reduced axes")
    if p.mode == 9:  # ARGMAX
        c.check(len(axes) == 1, "ARGMAX reduces a single axis (C, H or W)")
        idx = c.op("arg_max", [x], axis=axes[0], keep_dimensions=True, output_data_type="int32")
        return c.op("cast", [idx], to="float32")
    if p.mode == 3:  # LOGSUM: log of the sum (epsilon is not used by this mode)
        s = c.op("reduce_sum", [x], axes=axes, keep_dimensions=True)
        return c.op("log", [s])
    c.check(p.mode in _REDUCE, f"unknown reduce mode {p.mode}")
    return c.op(_REDUCE[p.mode], [x], axes=axes, keep_dimensions=True)


@coreml_layer("loadConstant")
def load_constant(c, layer):
    p = layer.loadConstant
    shape = [int(d) for d in p.shape]
    c.check(len(shape) == 3, f"shape must be [C, H, W], got {shape}")
    data = c.weights(p.data, shape, "data")
    return c.const(data.reshape(([1, 1] if not c.nd else []) + shape))
