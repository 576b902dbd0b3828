"""WebNN mappings: reduce* (§7.7.34) and argMin/argMax (§7.7.5)."""
from estuary.importers.webnn.ops import OPS

_REDUCE = {"reduceSum": "reduce_sum", "reduceMean": "reduce_mean", "reduceMax": "reduce_max",
           "reduceMin": "reduce_min", "reduceProduct": "reduce_product", "reduceL1": "reduce_l1",
           "reduceL2": "reduce_l2", "reduceLogSum": "reduce_log_sum", "reduceLogSumExp": "reduce_log_sum_exp",
           "reduceSumSquare": "reduce_sum_square"}


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _keep_dimensions(c, options):
    keep = options.get("keepDimensions", False)
    c.check(isinstance(keep, bool), f"keepDimensions must be a boolean, got {keep!r}")
    return keep


def _reduce(nn_name):
    def fn(c, input, options):
        axes = options.get("axes")  # absent: all axes; [] : none (kept distinct)
        c.check(axes is None or isinstance(axes, (list, tuple)) and all(_is_int(a) and a >= 0 for a in axes),
                f"axes must be a list of unsigned integers, got {axes!r}")
        return c.op(nn_name, [input], axes=None if axes is None else list(axes),
                    keep_dimensions=_keep_dimensions(c, options))
    return fn


for _js, _nn in _REDUCE.items():
    OPS.op(_js, params={"input": "MLOperand"},
           options={"axes": "sequence<unsigned long>", "keepDimensions": "boolean = false"})(_reduce(_nn))


def _arg(nn_name):
    def fn(c, input, axis, options):
        c.check(_is_int(axis) and axis >= 0, f"axis must be an unsigned integer, got {axis!r}")
        return c.op(nn_name, [input], axis=axis, keep_dimensions=_keep_dimensions(c, options),
                    output_data_type=options.get("outputDataType", "int32"))
    return fn


for _js, _nn in {"argMax": "arg_max", "argMin": "arg_min"}.items():
    OPS.op(_js, params={"input": "MLOperand", "axis": "unsigned long"},
           options={"keepDimensions": "boolean = false", "outputDataType": 'MLOperandDataType = "int32"'})(_arg(_nn))
