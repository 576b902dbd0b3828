"""NNAPI data movement: CONCATENATION, RESHAPE, DEPTH_TO_SPACE, SPACE_TO_DEPTH."""
import numpy as np

from estuary.importers.nnapi.model import OperationCode as Op
from estuary.importers.nnapi.ops import OPS


@OPS.op(Op.CONCATENATION)
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


@OPS.op(Op.RESHAPE)
def reshape(c, ins, outs):
    c.check(len(ins) == 2, f"takes 2 inputs, got {len(ins)}")
    x = c.tensor(ins[0])
    target, declared = c.operand(ins[1]), c.operand(outs[0]).dimensions
    if target.value is None:
        # a shape given at run time (the CTS passes [-1] as a model input): the declared output
        # shape decides, when it is complete (the run-time value cannot change a static shape)
        c.check(bool(declared) and 0 not in declared,
                "the shape operand must be a constant, or the output operand's dimensions must be fully specified")
        shape = list(declared)
        c.check(c.spec(x).size == int(np.prod(shape)),
                f"the output's dimensions {shape} do not hold the input's {c.spec(x).size} elements")
        c.set_output(outs[0], _same_quant(c, ins, outs, c.op("reshape", [x], new_shape=shape)))
        return
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


@OPS.op(Op.DEPTH_TO_SPACE)
def depth_to_space(c, ins, outs):
    x = c.tensor(ins[0])
    bs = c.scalar(ins[1])
    n, h, w, ch = c.spec(x).shape
    c.check(bs >= 1 and ch % (bs * bs) == 0, f"block size {bs} squared must divide the depth {ch}")
    t = c.op("reshape", [x], new_shape=[n, h, w, bs, bs, ch // (bs * bs)])
    t = c.op("transpose", [t], permutation=[0, 1, 3, 2, 4, 5])
    y = c.op("reshape", [t], new_shape=[n, h * bs, w * bs, ch // (bs * bs)])
    c.set_output(outs[0], _same_quant(c, ins, outs, y))


@OPS.op(Op.SPACE_TO_DEPTH)
def space_to_depth(c, ins, outs):
    x = c.tensor(ins[0])
    bs = c.scalar(ins[1])
    n, h, w, ch = c.spec(x).shape
    c.check(bs >= 1 and h % bs == 0 and w % bs == 0, f"block size {bs} must divide height {h} and width {w}")
    t = c.op("reshape", [x], new_shape=[n, h // bs, bs, w // bs, bs, ch])
    t = c.op("transpose", [t], permutation=[0, 1, 3, 2, 4, 5])
    y = c.op("reshape", [t], new_shape=[n, h // bs, w // bs, bs * bs * ch])
    c.set_output(outs[0], _same_quant(c, ins, outs, y))
