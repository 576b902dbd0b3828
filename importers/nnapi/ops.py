"""NNAPI operations: one registration per OperationCode (API level 27 semantics)."""
from estuary.importers.nnapi.registry import nnapi_op
from estuary.nnapi import OperationCode as Op


def _binary(nn_name):
    def convert(c, ins, outs):
        c.check(len(ins) == 3 and len(outs) == 1, f"takes 3 inputs and 1 output, got {len(ins)} and {len(outs)}")
        a, b = c.tensor(ins[0]), c.tensor(ins[1])
        c.check(c.spec(a).dtype == c.spec(b).dtype, "both inputs must have the same type")
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
    c.set_output(outs[0], c.fuse(c.tensor(ins[0]), code))
