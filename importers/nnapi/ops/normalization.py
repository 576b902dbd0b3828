"""NNAPI L2_NORMALIZATION and LOCAL_RESPONSE_NORMALIZATION (float32)."""
import numpy as np

from estuary.importers.nnapi.model import OperationCode as Op
from estuary.importers.nnapi.ops import OPS


@OPS.op(Op.L2_NORMALIZATION)
def l2_normalization(c, ins, outs):
    x = c.tensor(ins[0])
    rank = c.spec(x).rank
    norm = c.op("sqrt", [c.op("reduce_sum_square", [x], axes=[rank - 1], keep_dimensions=True)])
    c.set_output(outs[0], c.op("div", [x, norm]))


@OPS.op(Op.LOCAL_RESPONSE_NORMALIZATION)
def local_response_normalization(c, ins, outs):
    """x / (bias + alpha * sum of x^2 over depth [d - radius, d + radius]) ^ beta."""
    c.check(len(ins) == 5, f"takes 5 inputs, got {len(ins)}")
    x = c.tensor(ins[0])
    radius, bias, alpha, beta = (c.scalar(i) for i in ins[1:5])
    c.check(radius >= 0, f"radius must be non-negative, got {radius}")
    n, h, w, ch = c.spec(x).shape
    squares = c.op("reshape", [c.op("mul", [x, x])], new_shape=[n * h * w, 1, ch, 1])
    window = c.f32(np.ones((1, 1, 2 * radius + 1, 1)), "window")
    sums = c.op("conv2d", [squares, window], padding=[0, 0, radius, radius], input_layout="nhwc",
                filter_layout="ohwi")
    sums = c.op("reshape", [sums], new_shape=[n, h, w, ch])
    scaled = c.op("add", [c.f32([bias], "bias"), c.op("mul", [sums, c.f32([alpha], "alpha")])])
    c.set_output(outs[0], c.op("div", [x, c.op("pow", [scaled, c.f32([beta], "beta")])]))
