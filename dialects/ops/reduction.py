"""nn ops: reductions and arg_min/arg_max (WebNN §7.7.34, §7.7.5).

`axes` absent: reduce every dimension; present but empty: reduce nothing (the function is applied
to each element on its own, e.g. reduce_l1 -> |x|). arg_min/arg_max return the first index of the
extreme value on ties.
"""
import numpy as np

from estuary import dtypes
from estuary.dialects.core import Bool, DType, Int, Ints, TensorSpec, axes_valid, check, dtype_in, nn_op

NUMERIC = ("float32", "float16", "int32", "uint32", "int64", "uint64")


def reduced_shape(shape, axes, keep_dimensions):
    axes = list(range(len(shape))) if axes is None else list(axes)
    axes_valid(axes, len(shape))
    if keep_dimensions:
        return tuple(1 if i in axes else d for i, d in enumerate(shape)), axes
    return tuple(d for i, d in enumerate(shape) if i not in axes), axes


def _ref(fn):
    def ref(x, axes, keep_dimensions):
        ax = tuple(range(x.ndim)) if axes is None else tuple(axes)
        wide = x.astype(np.float64) if x.dtype.kind == "f" else x.astype(np.int64 if x.dtype.kind == "i" else np.uint64)
        with np.errstate(all="ignore"):
            out = fn(wide, ax) if ax else fn(wide, None, elementwise=True)
        out = np.asarray(out)
        if keep_dimensions and ax:
            out = np.expand_dims(out, ax)
        return out.astype(x.dtype)
    return ref


def _lse(x, ax, elementwise=False):
    if elementwise:
        return x
    m = np.max(x, axis=ax, keepdims=True)
    return (np.log(np.sum(np.exp(x - m), axis=ax, keepdims=True)) + m).squeeze(ax)


REDUCTIONS = {
    # name: (allowed dtypes, reference (x, axes, elementwise=False))
    "reduce_sum": (NUMERIC, lambda x, ax, elementwise=False: x if elementwise else np.sum(x, axis=ax)),
    "reduce_mean": (dtypes.FLOATS, lambda x, ax, elementwise=False: x if elementwise else np.mean(x, axis=ax)),
    "reduce_max": (None, lambda x, ax, elementwise=False: x if elementwise else np.max(x, axis=ax)),
    "reduce_min": (None, lambda x, ax, elementwise=False: x if elementwise else np.min(x, axis=ax)),
    "reduce_product": (NUMERIC, lambda x, ax, elementwise=False: x if elementwise else np.prod(x, axis=ax)),
    "reduce_l1": (NUMERIC, lambda x, ax, elementwise=False: np.abs(x) if elementwise else np.sum(np.abs(x), axis=ax)),
    "reduce_l2": (dtypes.FLOATS,
                  lambda x, ax, elementwise=False: np.abs(x) if elementwise else np.sqrt(np.sum(x * x, axis=ax))),
    "reduce_log_sum": (dtypes.FLOATS,
                       lambda x, ax, elementwise=False: np.log(x) if elementwise else np.log(np.sum(x, axis=ax))),
    "reduce_log_sum_exp": (dtypes.FLOATS, _lse),
    "reduce_sum_square": (NUMERIC, lambda x, ax, elementwise=False: x * x if elementwise else np.sum(x * x, axis=ax)),
}


def _rule_for(allowed):
    def rule(input, axes, keep_dimensions):
        if allowed:
            dtype_in(input, allowed)
        shape, _ = reduced_shape(input.shape, axes, keep_dimensions)
        return input.with_shape(shape)
    return rule


for _name, (_allowed, _fn) in REDUCTIONS.items():
    nn_op(_name, ["input"], {"axes": Ints(None), "keep_dimensions": Bool(False)}, reference=_ref(_fn),
          family="reduction")(_rule_for(_allowed))


def _arg_ref(fn):
    def ref(x, axis, keep_dimensions, output_data_type):
        out = fn(x, axis=axis)
        if keep_dimensions:
            out = np.expand_dims(out, axis)
        return out.astype(dtypes.to_numpy(output_data_type))
    return ref


def _arg_rule(input, axis, keep_dimensions, output_data_type):
    check(0 <= axis < input.rank, f"axis {axis} out of range for rank {input.rank}")
    shape, _ = reduced_shape(input.shape, [axis], keep_dimensions)
    return TensorSpec(shape, output_data_type)


_ARG_ATTRS = {"axis": Int(), "keep_dimensions": Bool(False), "output_data_type": DType("int32", ("int32", "int64"))}
nn_op("arg_max", ["input"], dict(_ARG_ATTRS), reference=_arg_ref(np.argmax), family="reduction")(_arg_rule)
nn_op("arg_min", ["input"], dict(_ARG_ATTRS), reference=_arg_ref(np.argmin), family="reduction")(_arg_rule)
