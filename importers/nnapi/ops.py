"""NNAPI operations: one registration per OperationCode (API level 27 semantics)."""
import numpy as np

from estuary.importers.nnapi.registry import nnapi_op
from estuary.nnapi import OperationCode as Op


INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def _widen(c, value, q, multiplier=1.0):
    """int32 round((value - zero_point) * multiplier) of a uint8 tensor quantized as q."""
    return c.op("requantize", [value], input_zero_point=q[1], multiplier=multiplier, output_zero_point=0,
                output_min=INT32_MIN, output_max=INT32_MAX, to="int32")


def _binary_quant8(c, nn_name, ins, outs, a, b):
    """ADD: both inputs rescaled to int32 in units of output_scale / 2^k (k keeps 255 * ratio * 2^k
    below 2^30), added, requantized; MUL: (a - za)(b - zb) in int32 times sa * sb / so."""
    qa, qb = c.quant(ins[0]), c.quant(ins[1])
    qo = c.require_quant(outs[0], "the output")
    lo, hi = c.quant_range(c.scalar(ins[2]), qo)
    if nn_name == "add":
        ratio = max(qa[0], qb[0]) / qo[0]
        k = max(0, min(16, int(np.floor(np.log2(2.0 ** 30 / (255 * ratio))))))
        wide = c.op("add", [_widen(c, a, qa, qa[0] / qo[0] * 2 ** k), _widen(c, b, qb, qb[0] / qo[0] * 2 ** k)])
        multiplier = 2.0 ** -k
    else:
        c.check(qo[0] > qa[0] * qb[0], f"output_scale {qo[0]} must exceed input1_scale * input2_scale "
                                       f"= {qa[0] * qb[0]}")
        wide = c.op("mul", [_widen(c, a, qa), _widen(c, b, qb)])
        multiplier = qa[0] * qb[0] / qo[0]
    return c.op("requantize", [wide], multiplier=multiplier, output_zero_point=qo[1], output_min=lo, output_max=hi)


def _binary(nn_name):
    def convert(c, ins, outs):
        c.check(len(ins) == 3 and len(outs) == 1, f"takes 3 inputs and 1 output, got {len(ins)} and {len(outs)}")
        a, b = c.tensor(ins[0]), c.tensor(ins[1])
        c.check(c.spec(a).dtype == c.spec(b).dtype, "both inputs must have the same type")
        if c.quant(ins[0]):
            c.set_output(outs[0], _binary_quant8(c, nn_name, ins, outs, a, b))
            return
        c.set_output(outs[0], c.fuse(c.op(nn_name, [a, b]), c.scalar(ins[2])))

    return convert


nnapi_op(Op.ADD)(_binary("add"))
nnapi_op(Op.MUL)(_binary("mul"))


@nnapi_op(Op.FLOOR)
def floor(c, ins, outs):
    c.check(len(ins) == 1 and len(outs) == 1, "takes 1 input and 1 output")
    c.set_output(outs[0], c.op("floor", [c.tensor(ins[0])]))


@nnapi_op(Op.RELU, Op.RELU1, Op.RELU6)
def relu_family(c, ins, outs):
    c.check(len(ins) == 1 and len(outs) == 1, "takes 1 input and 1 output")
    code = {Op.RELU: 1, Op.RELU1: 2, Op.RELU6: 3}[c.code]
    q = c.quant(ins[0])
    if q:
        qo = c.require_quant(outs[0], "the output")
        c.set_output(outs[0], c.requant(c.tensor(ins[0]), q, qo, *c.quant_range(code, qo)))
        return
    c.set_output(outs[0], c.fuse(c.tensor(ins[0]), code))


# ---------------------------------------------------------------- convolution and pooling (NHWC)


def _implicit_padding(c, code, size, stride, kernel):
    """(begin, end) padding of one spatial dimension for PaddingCode SAME / VALID."""
    if code == 2:  # VALID
        return 0, 0
    c.check(code == 1, f"invalid implicit padding code {code} (1 SAME, 2 VALID)")
    out = -(-size // stride)
    total = max(0, (out - 1) * stride + kernel - size)
    return total // 2, total - total // 2


def _spatial(c, ins, first, kernel_hw, explicit_count):
    """Padding [t, b, l, r] and strides [h, w] from an explicit or implicit operand list."""
    shape = c.operand(ins[0]).dimensions
    n_rest = len(ins) - first
    if n_rest >= explicit_count:  # explicit: left, right, top, bottom, stride_w, stride_h
        left, right, top, bottom, sw, sh = (c.scalar(i) for i in ins[first:first + 6])
        return [top, bottom, left, right], [sh, sw], first + 6
    code, sw, sh = (c.scalar(i) for i in ins[first:first + 3])
    c.check(sw > 0 and sh > 0, "strides must be positive")
    top, bottom = _implicit_padding(c, code, shape[1], sh, kernel_hw[0])
    left, right = _implicit_padding(c, code, shape[2], sw, kernel_hw[1])
    return [top, bottom, left, right], [sh, sw], first + 3


def _bias_quant8(c, ins, outs):
    """Check the quant8 conv / FC operand rules; returns (q_input, q_filter, q_output)."""
    qx = c.quant(ins[0])
    qw = c.require_quant(ins[1], "the filter")
    qo = c.require_quant(outs[0], "the output")
    bias = c.operand(ins[2])
    c.check(bias.code.name == "TENSOR_INT32", f"the bias of a TENSOR_QUANT8_ASYMM input must be TENSOR_INT32, "
                                              f"got {bias.code.name}")
    product = qx[0] * qw[0]
    c.check(bias.zero_point == 0, f"the bias zeroPoint must be 0, got {bias.zero_point}")
    c.check(abs(bias.scale - product) <= 1e-6 * product,
            f"the bias scale must equal input_scale * filter_scale = {product}, got {bias.scale}")
    c.check(qo[0] > product, f"output_scale {qo[0]} must exceed input_scale * filter_scale = {product}")
    return qx, qw, qo


def _conv_quant8(c, ins, outs, x, w, b, padding, strides, layout, fuse):
    qx, qw, qo = _bias_quant8(c, ins, outs)
    lo, hi = c.quant_range(fuse, qo)
    return c.op("quantized_conv2d", [x, w, b], input_zero_point=qx[1], filter_zero_point=qw[1], padding=padding,
                strides=strides, filter_layout=layout, multiplier=qx[0] * qw[0] / qo[0], output_zero_point=qo[1],
                output_min=lo, output_max=hi)


@nnapi_op(Op.CONV_2D)
def conv_2d(c, ins, outs):
    c.check(len(ins) in (7, 10), f"takes 7 (implicit padding) or 10 (explicit) inputs, got {len(ins)}")
    x, w, b = c.tensor(ins[0]), c.tensor(ins[1]), c.tensor(ins[2])
    kh, kw = c.spec(w).shape[1:3]
    padding, strides, nxt = _spatial(c, ins, 3, (kh, kw), 7)
    if c.quant(ins[0]):
        c.set_output(outs[0], _conv_quant8(c, ins, outs, x, w, b, padding, strides, "ohwi", c.scalar(ins[nxt])))
        return
    y = c.op("conv2d", [x, w, b], padding=padding, strides=strides, input_layout="nhwc", filter_layout="ohwi")
    c.set_output(outs[0], c.fuse(y, c.scalar(ins[nxt])))


@nnapi_op(Op.DEPTHWISE_CONV_2D)
def depthwise_conv_2d(c, ins, outs):
    c.check(len(ins) in (8, 11), f"takes 8 (implicit padding) or 11 (explicit) inputs, got {len(ins)}")
    x, w, b = c.tensor(ins[0]), c.tensor(ins[1]), c.tensor(ins[2])
    channels = c.spec(x).shape[3]
    _, kh, kw, depth_out = c.spec(w).shape
    padding, strides, nxt = _spatial(c, ins, 3, (kh, kw), 8)
    multiplier = c.scalar(ins[nxt])
    c.check(depth_out == channels * multiplier,
            f"filter depth {depth_out} must equal input depth {channels} x multiplier {multiplier}")
    if c.quant(ins[0]):
        y = _conv_quant8(c, ins, outs, x, w, b, padding, strides, "ihwo", c.scalar(ins[nxt + 1]))
        c.set_output(outs[0], y)
        return
    # [1, KH, KW, C*M] is the "ihwo" layout of a grouped convolution with one input channel per group
    y = c.op("conv2d", [x, w, b], padding=padding, strides=strides, groups=channels, input_layout="nhwc",
             filter_layout="ihwo")
    c.set_output(outs[0], c.fuse(y, c.scalar(ins[nxt + 1])))


def _pool(nn_name):
    def convert(c, ins, outs):
        c.check(len(ins) in (7, 10), f"takes 7 (implicit padding) or 10 (explicit) inputs, got {len(ins)}")
        x = c.tensor(ins[0])
        n_explicit = len(ins) == 10
        first_k = 7 if n_explicit else 4
        fw, fh = c.scalar(ins[first_k]), c.scalar(ins[first_k + 1])
        padding, strides, _ = _spatial(c, ins, 1, (fh, fw), 9)
        q = c.quant(ins[0])
        if q:
            qo = c.require_quant(outs[0], "the output")
            lo, hi = c.quant_range(c.scalar(ins[first_k + 2]), qo)
            if nn_name == "average_pool2d":
                y = c.op("quantized_average_pool2d", [x], window_dimensions=[fh, fw], padding=padding,
                         strides=strides)
            else:
                y = c.op(nn_name, [x], window_dimensions=[fh, fw], padding=padding, strides=strides, layout="nhwc")
            c.set_output(outs[0], c.requant(y, q, qo, lo, hi))
            return
        y = c.op(nn_name, [x], window_dimensions=[fh, fw], padding=padding, strides=strides, layout="nhwc")
        c.set_output(outs[0], c.fuse(y, c.scalar(ins[first_k + 2])))
    return convert


nnapi_op(Op.AVERAGE_POOL_2D)(_pool("average_pool2d"))
nnapi_op(Op.MAX_POOL_2D)(_pool("max_pool2d"))
nnapi_op(Op.L2_POOL_2D)(_pool("l2_pool2d"))


# ---------------------------------------------------------------- dense and shape operations


@nnapi_op(Op.FULLY_CONNECTED)
def fully_connected(c, ins, outs):
    c.check(len(ins) == 4, f"takes 4 inputs, got {len(ins)}")
    x, w, b = c.tensor(ins[0]), c.tensor(ins[1]), c.tensor(ins[2])
    units, size = c.spec(w).shape
    total = c.spec(x).size
    c.check(total % size == 0, f"input of {total} elements is not a multiple of the weights' input size {size}")
    flat = c.op("reshape", [x], new_shape=[total // size, size])
    if c.quant(ins[0]):
        qx, qw, qo = _bias_quant8(c, ins, outs)
        lo, hi = c.quant_range(c.scalar(ins[3]), qo)
        c.set_output(outs[0], c.op("quantized_matmul", [flat, w, b], a_zero_point=qx[1], b_zero_point=qw[1],
                                   multiplier=qx[0] * qw[0] / qo[0], output_zero_point=qo[1], output_min=lo,
                                   output_max=hi))
        return
    y = c.op("gemm", [flat, w, b], b_transpose=True)
    c.set_output(outs[0], c.fuse(y, c.scalar(ins[3])))


@nnapi_op(Op.CONCATENATION)
def concatenation(c, ins, outs):
    c.check(len(ins) >= 2, "takes at least one tensor and the axis")
    values = [c.tensor(i) for i in ins[:-1]]
    axis = c.scalar(ins[-1])
    rank = c.spec(values[0]).rank
    c.check(-rank <= axis < rank, f"axis {axis} out of range for rank {rank}")
    y = c.op("concat", [values], axis=axis % rank)
    q = c.quant(ins[0])
    if q:
        for i in ins[1:-1]:
            c.check(c.quant(i) == q, f"all TENSOR_QUANT8_ASYMM inputs must have the same scale and zeroPoint: "
                                     f"operand {i} has {c.quant(i)}, operand {ins[0]} has {q}")
        y = c.requant(y, q, c.require_quant(outs[0], "the output"))
    c.set_output(outs[0], y)


@nnapi_op(Op.RESHAPE)
def reshape(c, ins, outs):
    c.check(len(ins) == 2, f"takes 2 inputs, got {len(ins)}")
    x = c.tensor(ins[0])
    target = c.operand(ins[1])
    c.check(target.value is not None, "the shape operand must be a constant")
    shape = [int(v) for v in target.value.reshape(-1)]
    if -1 in shape:
        known = 1
        for v in shape:
            known *= v if v != -1 else 1
        c.check(shape.count(-1) == 1 and known > 0 and c.spec(x).size % known == 0, f"cannot infer shape {shape}")
        shape[shape.index(-1)] = c.spec(x).size // known
    c.set_output(outs[0], _same_quant(c, ins, outs, c.op("reshape", [x], new_shape=shape)))


def _same_quant(c, ins, outs, value):
    """Data movement on quant8: re-express the input's quantization in the output's if they differ."""
    q = c.quant(ins[0])
    return c.requant(value, q, c.require_quant(outs[0], "the output")) if q else value


@nnapi_op(Op.SOFTMAX)
def softmax(c, ins, outs):
    c.check(len(ins) == 2, f"takes 2 inputs, got {len(ins)}")
    x = c.tensor(ins[0])
    beta = c.scalar(ins[1])
    c.check(beta > 0, f"beta must be positive, got {beta}")
    q = c.quant(ins[0])
    if q:
        _check_q256(c, outs)
        c.set_output(outs[0], c.op("quantized_softmax", [x], scale=beta * q[0]))
        return
    if beta != 1.0:
        x = c.op("mul", [x, c.graph.constant(np.array([beta], np.float32), name=f"{c.label}/beta")])
    c.set_output(outs[0], c.op("softmax", [x], axis=c.spec(x).rank - 1))


def _check_q256(c, outs):
    qo = c.require_quant(outs[0], "the output")
    c.check(qo == (1.0 / 256, 0), f"a TENSOR_QUANT8_ASYMM output must have scale 1/256 and zeroPoint 0, "
                                  f"got scale {qo[0]} and zeroPoint {qo[1]}")


@nnapi_op(Op.LOGISTIC, Op.TANH)
def logistic_tanh(c, ins, outs):
    c.check(len(ins) == 1, f"takes 1 input, got {len(ins)}")
    q = c.quant(ins[0])
    if q:  # 256-entry table of round(256 * sigmoid(scale * (q - zeroPoint))), built at compile time
        _check_q256(c, outs)
        real = q[0] * (np.arange(256, dtype=np.float64) - q[1])
        table = np.clip(np.floor(256.0 / (1.0 + np.exp(-real)) + 0.5), 0, 255).astype(np.uint8)
        lut = c.graph.constant(table, name=f"{c.label}/table")
        c.set_output(outs[0], c.op("table_lookup", [c.tensor(ins[0]), lut]))
        return
    c.set_output(outs[0], c.op("sigmoid" if c.code == Op.LOGISTIC else "tanh", [c.tensor(ins[0])]))


@nnapi_op(Op.DEPTH_TO_SPACE)
def depth_to_space(c, ins, outs):
    x = c.tensor(ins[0])
    bs = c.scalar(ins[1])
    n, h, w, ch = c.spec(x).shape
    c.check(bs >= 1 and ch % (bs * bs) == 0, f"block size {bs} squared must divide the depth {ch}")
    t = c.op("reshape", [x], new_shape=[n, h, w, bs, bs, ch // (bs * bs)])
    t = c.op("transpose", [t], permutation=[0, 1, 3, 2, 4, 5])
    y = c.op("reshape", [t], new_shape=[n, h * bs, w * bs, ch // (bs * bs)])
    c.set_output(outs[0], _same_quant(c, ins, outs, y))


@nnapi_op(Op.SPACE_TO_DEPTH)
def space_to_depth(c, ins, outs):
    x = c.tensor(ins[0])
    bs = c.scalar(ins[1])
    n, h, w, ch = c.spec(x).shape
    c.check(bs >= 1 and h % bs == 0 and w % bs == 0, f"block size {bs} must divide height {h} and width {w}")
    t = c.op("reshape", [x], new_shape=[n, h // bs, bs, w // bs, bs, ch])
    t = c.op("transpose", [t], permutation=[0, 1, 3, 2, 4, 5])
    y = c.op("reshape", [t], new_shape=[n, h // bs, w // bs, bs * bs * ch])
    c.set_output(outs[0], _same_quant(c, ins, outs, y))


@nnapi_op(Op.DEQUANTIZE)
def dequantize(c, ins, outs):
    """output = (input - zeroPoint) * scale, TENSOR_QUANT8_ASYMM -> TENSOR_FLOAT32."""
    c.check(len(ins) == 1 and len(outs) == 1, f"takes 1 input and 1 output, got {len(ins)} and {len(outs)}")
    q = c.require_quant(ins[0], "the input")
    c.check(c.operand(outs[0]).code.name == "TENSOR_FLOAT32",
            f"the output must be TENSOR_FLOAT32, got {c.operand(outs[0]).code.name}")
    c.set_output(outs[0], c.op("dequantize", [c.tensor(ins[0])], scale=q[0], zero_point=q[1]))


# ---------------------------------------------------------------- normalization and recurrence


def _f32(c, value, name):
    return c.graph.constant(np.array(value, np.float32), name=f"{c.label}/{name}")


@nnapi_op(Op.L2_NORMALIZATION)
def l2_normalization(c, ins, outs):
    x = c.tensor(ins[0])
    rank = c.spec(x).rank
    norm = c.op("sqrt", [c.op("reduce_sum_square", [x], axes=[rank - 1], keep_dimensions=True)])
    c.set_output(outs[0], c.op("div", [x, norm]))


@nnapi_op(Op.LOCAL_RESPONSE_NORMALIZATION)
def local_response_normalization(c, ins, outs):
    """x / (bias + alpha * sum of x^2 over depth [d - radius, d + radius]) ^ beta."""
    c.check(len(ins) == 5, f"takes 5 inputs, got {len(ins)}")
    x = c.tensor(ins[0])
    radius, bias, alpha, beta = (c.scalar(i) for i in ins[1:5])
    c.check(radius >= 0, f"radius must be non-negative, got {radius}")
    n, h, w, ch = c.spec(x).shape
    squares = c.op("reshape", [c.op("mul", [x, x])], new_shape=[n * h * w, 1, ch, 1])
    window = _f32(c, np.ones((1, 1, 2 * radius + 1, 1)), "window")
    sums = c.op("conv2d", [squares, window], padding=[0, 0, radius, radius], input_layout="nhwc",
                filter_layout="ohwi")
    sums = c.op("reshape", [sums], new_shape=[n, h, w, ch])
    scaled = c.op("add", [_f32(c, [bias], "bias"), c.op("mul", [sums, _f32(c, [alpha], "alpha")])])
    c.set_output(outs[0], c.op("div", [x, c.op("pow", [scaled, _f32(c, [beta], "beta")])]))


@nnapi_op(Op.RNN)
def rnn(c, ins, outs):
    """state = activation(input W^T + state R^T + bias); both outputs are the new state."""
    c.check(len(ins) == 6 and len(outs) == 2, f"takes 6 inputs and 2 outputs, got {len(ins)} and {len(outs)}")
    x, w, r, b, h = (c.tensor(i) for i in ins[:5])
    pre = c.op("add", [c.op("gemm", [x, w, b], b_transpose=True), c.op("gemm", [h, r], b_transpose=True)])
    state = c.fuse(pre, c.scalar(ins[5]), recurrent=True)
    c.set_output(outs[0], state)
    c.set_output(outs[1], state)
