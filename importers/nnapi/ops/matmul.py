"""NNAPI FULLY_CONNECTED (float32 and quant8)."""
from estuary.importers.nnapi.model import OperationCode as Op
from estuary.importers.nnapi.ops import OPS
from estuary.importers.nnapi.ops.convolution import bias_quant8


@OPS.op(Op.FULLY_CONNECTED)
def fully_connected(c, ins, outs):
    c.check(len(ins) == 4, f"takes 4 inputs, got {len(ins)}")
    x, w, b = c.tensor(ins[0]), c.tensor(ins[1]), c.tensor(ins[2])
    units, size = c.spec(w).shape
    total = c.spec(x).size
    c.check(total % size == 0, f"input of {total} elements is not a multiple of the weights' input size {size}")
    flat = c.op("reshape", [x], new_shape=[total // size, size])
    if c.quant(ins[0]):
        qx, qw, qo = bias_quant8(c, ins, outs)
        lo, hi = c.quant_range(c.scalar(ins[3]), qo)
        c.set_output(outs[0], c.op("quantized_matmul", [flat, w, b], a_zero_point=qx[1], b_zero_point=qw[1],
                                   multiplier=qx[0] * qw[0] / qo[0], output_zero_point=qo[1], output_min=lo,
                                   output_max=hi))
        return
    y = c.op("gemm", [flat, w, b], b_transpose=True)
    c.set_output(outs[0], c.fuse(y, c.scalar(ins[3])))
