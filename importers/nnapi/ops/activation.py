"""NNAPI activations: RELU, RELU1, RELU6, SOFTMAX, LOGISTIC, TANH."""
import numpy as np

from estuary.importers.nnapi.model import OperationCode as Op
from estuary.importers.nnapi.ops import OPS


@OPS.op(Op.RELU, Op.RELU1, Op.RELU6)
def relu_family(c, ins, outs):
    c.check(len(ins) == 1 and len(outs) == 1, "takes 1 input and 1 output")
    code = {Op.RELU: 1, Op.RELU1: 2, Op.RELU6: 3}[c.code]
    q = c.quant(ins[0])
    if q:
        qo = c.require_quant(outs[0], "the output")
        c.set_output(outs[0], c.requant(c.tensor(ins[0]), q, qo, *c.quant_range(code, qo)))
        return
    c.set_output(outs[0], c.fuse(c.tensor(ins[0]), code))


@OPS.op(Op.SOFTMAX)
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
        x = c.op("mul", [x, c.f32([beta], "beta")])
    c.set_output(outs[0], c.op("softmax", [x], axis=c.spec(x).rank - 1))


def _check_q256(c, outs):
    qo = c.require_quant(outs[0], "the output")
    c.check(qo == (1.0 / 256, 0), f"a TENSOR_QUANT8_ASYMM output must have scale 1/256 and zeroPoint 0, "
                                  f"got scale {qo[0]} and zeroPoint {qo[1]}")


@OPS.op(Op.LOGISTIC, Op.TANH)
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
