"""WebNN mappings: reduce* and argMin/argMax."""
from estuary.importers.webnn.registry import webnn_op

_REDUCE = {"reduceSum": "reduce_sum", "reduceMean": "reduce_mean", "reduceMax": "reduce_max",
           "reduceMin": "reduce_min", "reduceProduct": "reduce_product", "reduceL1": "reduce_l1",
           "reduceL2": "reduce_l2", "reduceLogSum": "reduce_log_sum", "reduceLogSumExp": "reduce_log_sum_exp",
           "reduceSumSquare": "reduce_sum_square"}


def _reduce(nn_name):
    def fn(c, input, options):
        return c.op(nn_name, [input], axes=options.get("axes"), keep_dimensions=options.get("keepDimensions", False))
    return fn


for _js, _nn in _REDUCE.items():
    webnn_op(_js, ["input", "options"], operands=["input"], options=["axes", "keepDimensions"])(_reduce(_nn))


def _arg(nn_name):
    def fn(c, input, axis, options):
        c.check(isinstance(axis, int) and not isinstance(axis, bool), f"axis must be an integer, got {axis!r}")
        return c.op(nn_name, [input], axis=axis, keep_dimensions=options.get("keepDimensions", False),
                    output_data_type=options.get("outputDataType", "int32"))
    return fn


webnn_op("argMax", ["input", "axis", "options"], operands=["input"],
         options=["keepDimensions", "outputDataType"])(_arg("arg_max"))
webnn_op("argMin", ["input", "axis", "options"], operands=["input"],
         options=["keepDimensions", "outputDataType"])(_arg("arg_min"))
