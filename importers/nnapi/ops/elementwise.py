"""NNAPI element-wise operations: ADD, MUL (float32 and quant8), FLOOR, DEQUANTIZE."""
import numpy as np

from estuary.importers.nnapi.model import OperationCode as Op
from estuary.importers.nnapi.ops import OPS


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


OPS.op(Op.ADD)(_binary("add"))


OPS.op(Op.MUL)(_binary("mul"))


@OPS.op(Op.FLOOR)
def floor(c, ins, outs):
    c.check(len(ins) == 1 and len(outs) == 1, "takes 1 input and 1 output")
    c.set_output(outs[0], c.op("floor", [c.tensor(ins[0])]))


@OPS.op(Op.DEQUANTIZE)
def dequantize(c, ins, outs):
    """output = (input - zeroPoint) * scale, TENSOR_QUANT8_ASYMM -> TENSOR_FLOAT32."""
    c.check(len(ins) == 1 and len(outs) == 1, f"takes 1 input and 1 output, got {len(ins)} and {len(outs)}")
    q = c.require_quant(ins[0], "the input")
    c.check(c.operand(outs[0]).code.name == "TENSOR_FLOAT32",
            f"the output must be TENSOR_FLOAT32, got {c.operand(outs[0]).code.name}")
    c.set_output(outs[0], c.op("dequantize", [c.tensor(ins[0])], scale=q[0], zero_point=q[1]))
