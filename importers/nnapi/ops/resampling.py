"""NNAPI RESIZE_BILINEAR (API level 27), as Android's reference implementation computes it.

Operand 1 is the output width and operand 2 the output height: the API-27 header lists height
first, but the reference implementation (resizeBilinearPrepare(input, width, height)) reads
width first, and later headers document that order. Coordinates are asymmetric: scale =
float32(in / out), src = dst * scale, y0 = floor(src), y1 = min(y0 + 1, in - 1). Composed of gathers
along H and W and a weighted sum with float32 weights computed here exactly as the reference does.
"""
import numpy as np

from estuary.importers.nnapi.model import OperationCode as Op
from estuary.importers.nnapi.ops import OPS


def _plan(in_size, out_size):
    """(i0, i1, w0, w1) int32 indices and float32 weights along one axis."""
    scale = np.float32(in_size) / np.float32(out_size)
    src = np.arange(out_size, dtype=np.float32) * scale
    i0 = np.floor(src).astype(np.int32)
    i1 = np.minimum(i0 + 1, in_size - 1).astype(np.int32)
    frac = (src - i0.astype(np.float32)).astype(np.float32)
    return i0, i1, (np.float32(1) - frac).astype(np.float32), frac


@OPS.op(Op.RESIZE_BILINEAR)
def resize_bilinear(c, ins, outs):
    c.check(len(ins) == 3 and len(outs) == 1, f"takes 3 inputs and 1 output, got {len(ins)} and {len(outs)}")
    op = c.operand(ins[0])
    c.check(op.code.name == "TENSOR_FLOAT32" and len(op.dimensions) == 4,
            f"input must be a 4-D (NHWC) TENSOR_FLOAT32, got {op.code.name} {op.dimensions}")
    x = c.tensor(ins[0])
    width, height = c.scalar(ins[1]), c.scalar(ins[2])
    c.check(width > 0 and height > 0, f"output width {width} and height {height} must be positive")
    n, in_h, in_w, ch = c.spec(x).shape
    y0, y1, wy0, wy1 = _plan(in_h, height)
    x0, x1, wx0, wx1 = _plan(in_w, width)

    def const(v, shape, name):
        return c.graph.constant(np.asarray(v).reshape(shape), name=f"{c.label}/{name}")

    rows = [c.op("gather", [x, const(i, [height], f"y{k}")], axis=1) for k, i in enumerate((y0, y1))]
    wy = [const(w, [1, height, 1, 1], f"wy{k}") for k, w in enumerate((wy0, wy1))]
    wx = [const(w, [1, 1, width, 1], f"wx{k}") for k, w in enumerate((wx0, wx1))]
    xi = [const(i, [width], f"x{k}") for k, i in enumerate((x0, x1))]
    # the reference's sum: v00*wy0*wx0 + v10*wy1*wx0 + v01*wy0*wx1 + v11*wy1*wx1, left to right
    total = None
    for a, b in ((0, 0), (1, 0), (0, 1), (1, 1)):
        v = c.op("gather", [rows[a], xi[b]], axis=2)
        term = c.op("mul", [c.op("mul", [v, wy[a]]), wx[b]])
        total = term if total is None else c.op("add", [total, term])
    c.set_output(outs[0], total)
