"""NNAPI AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D (NHWC)."""
from estuary.importers.nnapi.model import OperationCode as Op
from estuary.importers.nnapi.ops import OPS
from estuary.importers.nnapi.ops.convolution import spatial


def _pool(nn_name):
    def convert(c, ins, outs):
        c.check(len(ins) in (7, 10), f"takes 7 (implicit padding) or 10 (explicit) inputs, got {len(ins)}")
        x = c.tensor(ins[0])
        n_explicit = len(ins) == 10
        first_k = 7 if n_explicit else 4
        fw, fh = c.scalar(ins[first_k]), c.scalar(ins[first_k + 1])
        padding, strides, _ = spatial(c, ins, 1, (fh, fw), 9)
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
        if nn_name == "l2_pool2d":
            # NNAPI: sqrt(sum(x^2) / sum(1)) over the window's in-bounds elements, the root of an
            # average of squares (nn.l2_pool2d is WebNN's sqrt(sum(x^2)), without the division)
            squares = c.op("average_pool2d", [c.op("mul", [x, x])], window_dimensions=[fh, fw], padding=padding,
                           strides=strides, layout="nhwc")
            y = c.op("sqrt", [squares])
        else:
            y = c.op(nn_name, [x], window_dimensions=[fh, fw], padding=padding, strides=strides, layout="nhwc")
        c.set_output(outs[0], c.fuse(y, c.scalar(ins[first_k + 2])))
    return convert


OPS.op(Op.AVERAGE_POOL_2D)(_pool("average_pool2d"))


OPS.op(Op.MAX_POOL_2D)(_pool("max_pool2d"))


OPS.op(Op.L2_POOL_2D)(_pool("l2_pool2d"))
