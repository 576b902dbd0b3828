"""Reduce operations (§4.4): the reduced axes stay as singletons (rank preserved).

argmax/argmin over several axes give the row-major flat index within the reduced sub-volume (axes
taken in increasing order), the first one on ties; over no axes, every index is 0. all/any reduce
logical (uint8) tensors through int32 min/max.
"""
import math

import numpy as np

from estuary.importers.nnef.ops import OPS


def _axes(c, inv):
    x = c.tensor(inv.inputs["input"])
    rank = c.spec(x).rank
    axes = list(inv.attribs["axes"])
    c.check(len(set(axes)) == len(axes) and all(0 <= a < rank for a in axes),
            f"axes {axes} must be unique, non-negative and less than the rank {rank}")
    return x, sorted(axes)


def _reduce(nn_name):
    def convert(c, inv):
        x, axes = _axes(c, inv)
        if not axes:
            return c.op("identity", [x])
        y = c.op(nn_name, [x], axes=axes, keep_dimensions=True)
        if inv.attribs.get("normalize"):
            volume = math.prod(c.spec(x).shape[a] for a in axes)
            y = c.op("div", [y, c.const(np.float32(volume))])
        return y

    return convert


OPS.op("sum_reduce")(_reduce("reduce_sum"))


OPS.op("max_reduce")(_reduce("reduce_max"))


OPS.op("min_reduce")(_reduce("reduce_min"))


OPS.op("mean_reduce")(_reduce("reduce_mean"))


def _logical(nn_name):
    def convert(c, inv):
        x, axes = _axes(c, inv)
        if not axes:
            return c.op("identity", [x])
        wide = c.op("cast", [x], to="int32")
        y = c.op(nn_name, [wide], axes=axes, keep_dimensions=True)
        return c.op("cast", [y], to="uint8")

    return convert


OPS.op("all_reduce")(_logical("reduce_min"))


OPS.op("any_reduce")(_logical("reduce_max"))


def _arg(nn_name):
    def convert(c, inv):
        x, axes = _axes(c, inv)
        shape = list(c.spec(x).shape)
        out_shape = [1 if i in axes else d for i, d in enumerate(shape)]
        if not axes:
            return c.const(np.zeros(shape, np.int32), "int32")
        keep = [i for i in range(len(shape)) if i not in axes]
        if axes != list(range(len(shape) - len(axes), len(shape))):
            x = c.op("transpose", [x], permutation=keep + axes)
        flat = [shape[i] for i in keep] + [math.prod(shape[a] for a in axes)]
        x = c.reshape(x, flat)
        y = c.op(nn_name, [x], axis=len(flat) - 1, keep_dimensions=False, output_data_type="int32")
        return c.reshape(y, out_shape)

    return convert


OPS.op("argmax_reduce")(_arg("arg_max"))


OPS.op("argmin_reduce")(_arg("arg_min"))
