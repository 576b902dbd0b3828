"""NNAPI CONV_2D and DEPTHWISE_CONV_2D (NHWC data, OHWI / 1HWO filters), float32 and quant8."""
from estuary.importers.nnapi.model import OperationCode as Op
from estuary.importers.nnapi.ops import OPS


def _implicit_padding(c, code, size, stride, kernel):
    """(begin, end) padding of one spatial dimension for PaddingCode SAME / VALID."""
    if code == 2:  # VALID
        return 0, 0
    c.check(code == 1, f"invalid implicit padding code {code} (1 SAME, 2 VALID)")
    out = -(-size // stride)
    total = max(0, (out - 1) * stride + kernel - size)
    return total // 2, total - total // 2


def spatial(c, ins, first, kernel_hw, explicit_count):
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


def bias_quant8(c, ins, outs):
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
    qx, qw, qo = bias_quant8(c, ins, outs)
    lo, hi = c.quant_range(fuse, qo)
    return c.op("quantized_conv2d", [x, w, b], input_zero_point=qx[1], filter_zero_point=qw[1], padding=padding,
                strides=strides, filter_layout=layout, multiplier=qx[0] * qw[0] / qo[0], output_zero_point=qo[1],
                output_min=lo, output_max=hi)


@OPS.op(Op.CONV_2D)
def conv_2d(c, ins, outs):
    c.check(len(ins) in (7, 10), f"takes 7 (implicit padding) or 10 (explicit) inputs, got {len(ins)}")
    x, w, b = c.tensor(ins[0]), c.tensor(ins[1]), c.tensor(ins[2])
    kh, kw = c.spec(w).shape[1:3]
    padding, strides, nxt = spatial(c, ins, 3, (kh, kw), 7)
    if c.quant(ins[0]):
        c.set_output(outs[0], _conv_quant8(c, ins, outs, x, w, b, padding, strides, "ohwi", c.scalar(ins[nxt])))
        return
    y = c.op("conv2d", [x, w, b], padding=padding, strides=strides, input_layout="nhwc", filter_layout="ohwi")
    c.set_output(outs[0], c.fuse(y, c.scalar(ins[nxt])))


@OPS.op(Op.DEPTHWISE_CONV_2D)
def depthwise_conv_2d(c, ins, outs):
    c.check(len(ins) in (8, 11), f"takes 8 (implicit padding) or 11 (explicit) inputs, got {len(ins)}")
    x, w, b = c.tensor(ins[0]), c.tensor(ins[1]), c.tensor(ins[2])
    channels = c.spec(x).shape[3]
    _, kh, kw, depth_out = c.spec(w).shape
    padding, strides, nxt = spatial(c, ins, 3, (kh, kw), 8)
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
