"""Core ML reductions: reduce (classic axes) and reduceSum/Mean/Max/... (ND)."""
from estuary.importers.coreml.classic import axis
from estuary.importers.coreml.converter import params
from estuary.importers.coreml.nd import at_least_1d, axis_of
from estuary.importers.coreml.ops import OPS


_REDUCE_AXES = {0: [-3, -2, -1], 1: [-2, -1], 2: [-3], 3: [-2], 4: [-1]}


_REDUCE = {0: "reduce_sum", 1: "reduce_mean", 2: "reduce_product", 4: "reduce_sum_square", 5: "reduce_l1",
           6: "reduce_l2", 7: "reduce_max", 8: "reduce_min"}


@OPS.op("reduce")
def reduce(c, layer):
    p = layer.reduce
    x = c.input(layer)
    rank = c.spec(x).rank
    c.check(p.axis in _REDUCE_AXES, f"unknown reduce axis {p.axis}")
    axes = [axis(c, x, a) for a in _REDUCE_AXES[p.axis] if -a <= rank]
    c.check(len(axes) == len(_REDUCE_AXES[p.axis]), f"the input of rank {rank} lacks the reduced axes")
    if p.mode == 9:  # ARGMAX
        c.check(len(axes) == 1, "ARGMAX reduces a single axis (C, H or W)")
        idx = c.op("arg_max", [x], axis=axes[0], keep_dimensions=True, output_data_type="int32")
        return c.op("cast", [idx], to="float32")
    if p.mode == 3:  # LOGSUM: log of the sum (epsilon is not used by this mode)
        s = c.op("reduce_sum", [x], axes=axes, keep_dimensions=True)
        return c.op("log", [s])
    c.check(p.mode in _REDUCE, f"unknown reduce mode {p.mode}")
    return c.op(_REDUCE[p.mode], [x], axes=axes, keep_dimensions=True)


_REDUCE_ND = {"reduceSum": "reduce_sum", "reduceMean": "reduce_mean", "reduceMax": "reduce_max",
           "reduceMin": "reduce_min", "reduceProd": "reduce_product", "reduceL1": "reduce_l1",
           "reduceL2": "reduce_l2", "reduceLogSum": "reduce_log_sum", "reduceSumSquare": "reduce_sum_square",
           "reduceLogSumExp": "reduce_log_sum_exp"}


def _reduce(kind, nn_name):
    @OPS.op(kind)
    def convert(c, layer):
        """Reduce over `axes` (negative from the end), or every axis when reduceAll or axes is empty."""
        p = params(layer)
        x = c.input(layer)
        rank = len(c.spec(x).shape)
        if p.reduceAll or len(p.axes) == 0:
            axes = list(range(rank))
        else:
            axes = sorted({axis_of(c, a, rank, "reduction axis") for a in p.axes})
            c.check(len(axes) == len(p.axes), f"axes {list(p.axes)} name an axis twice")
        y = c.op(nn_name, [x], axes=axes, keep_dimensions=bool(p.keepDims))
        return at_least_1d(c, y)
    convert.__name__ = f"convert_{kind}"
    return convert


for _kind, _nn in _REDUCE_ND.items():
    _reduce(_kind, _nn)
