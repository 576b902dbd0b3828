"""nn ops: reductions and arg_min/arg_max (WebNN §7.7.34, §7.7.5).

`axes` absent: reduce every dimension. Present but empty: reduce nothing; the reduction function
is applied to each value on its own (reduce_l1 -> |x|, reduce_sum_square -> x*x, reduce_log_sum ->
log x, the rest -> x). A rank-0 input with `axes` absent is that same case: the output is a scalar.

Choices where the spec is silent:
- integer sums/products wrap in the input's width (as WebNN integer arithmetic does elsewhere);
- reduce_max/reduce_min propagate NaN (TOSA's default nan_mode, like the element-wise max/min);
- arg_min/arg_max return the first index of the extreme value on ties (ONNX select_last_index=0),
  and the index of the first NaN when the slice holds one (TOSA argmax nan_mode PROPAGATE, numpy).
"""
import numpy as np

from estuary.base import dims, dtypes
from estuary.dialects.core import Bool, DType, Int, Ints, TensorSpec, axes_valid, check, dtype_in, nn_op

# reduceL1, reduceProduct, reduceSum, reduceSumSquare (the spec's allowed-type lists).
NUMERIC = ("float32", "float16", "int32", "uint32", "int64", "uint64")


def reduced_shape(shape, axes, keep_dimensions):
    """The spec's "calculate reduction output sizes": (output shape, axes list)."""
    axes = list(range(len(shape))) if axes is None else list(axes)
    axes_valid(axes, len(shape))
    if keep_dimensions:
        return tuple(1 if i in axes else d for i, d in enumerate(shape)), axes
    return tuple(d for i, d in enumerate(shape) if i not in axes), axes


def _wide(x):
    """float64 / int64 / uint64 copy: numpy reductions then wrap like the target width on cast."""
    return x.astype({"f": np.float64, "i": np.int64, "u": np.uint64}[x.dtype.kind])


def _lse(x, ax):
    m = np.max(x, axis=ax, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)  # all -inf slices stay -inf, +inf stays +inf
    return (np.log(np.sum(np.exp(x - m), axis=ax, keepdims=True)) + m).squeeze(ax)


# name: (allowed dtypes or None for any, function of one value, reduction over axes `ax`)
REDUCTIONS = {
    "reduce_sum": (NUMERIC, None, lambda x, ax: np.sum(x, axis=ax)),
    "reduce_mean": (dtypes.FLOATS, None, lambda x, ax: np.mean(x, axis=ax)),
    "reduce_max": (None, None, lambda x, ax: np.max(x, axis=ax)),
    "reduce_min": (None, None, lambda x, ax: np.min(x, axis=ax)),
    "reduce_product": (NUMERIC, None, lambda x, ax: np.prod(x, axis=ax)),
    "reduce_l1": (NUMERIC, np.abs, lambda x, ax: np.sum(np.abs(x), axis=ax)),
    "reduce_l2": (dtypes.FLOATS, np.abs, lambda x, ax: np.sqrt(np.sum(x * x, axis=ax))),
    "reduce_log_sum": (dtypes.FLOATS, np.log, lambda x, ax: np.log(np.sum(x, axis=ax))),
    "reduce_log_sum_exp": (dtypes.FLOATS, None, _lse),
    "reduce_sum_square": (NUMERIC, lambda x: x * x, lambda x, ax: np.sum(x * x, axis=ax)),
}


def _reduce_ref(each, over):
    def ref(x, axes, keep_dimensions):
        _, ax = reduced_shape(x.shape, axes, keep_dimensions)
        with np.errstate(all="ignore"):
            if not ax:
                out = x if each is None else each(_wide(x))
            else:
                out = np.asarray(over(_wide(x), tuple(ax)))
                if keep_dimensions:
                    out = np.expand_dims(out, tuple(ax))
        return np.asarray(out).astype(x.dtype)
    return ref


def _reduce_rule(allowed):
    def rule(input, axes, keep_dimensions):
        """Reduce `input` over `axes` (all when absent, none when empty); same data type."""
        if allowed:
            dtype_in(input, allowed)
        shape, _ = reduced_shape(input.shape, axes, keep_dimensions)
        return input.with_shape(shape)
    return rule


for _name, (_allowed, _each, _over) in REDUCTIONS.items():
    nn_op(_name, ["input"], {"axes": Ints(None), "keep_dimensions": Bool(False)},
          reference=_reduce_ref(_each, _over), dynamic=True)(_reduce_rule(_allowed))


def _arg_ref(fn):
    def ref(x, axis, keep_dimensions, output_data_type):
        out = fn(x, axis=axis)  # numpy: first index on ties, first NaN wins
        if keep_dimensions:
            out = np.expand_dims(out, axis)
        return np.asarray(out).astype(dtypes.to_numpy(output_data_type))
    return ref


def _arg_rule(input, axis, keep_dimensions, output_data_type):
    """Index of the extreme value along `axis` (first on ties), as `output_data_type`."""
    check(0 <= axis < input.rank, f"axis {axis} out of range for rank {input.rank}")
    limit = int(np.iinfo(dtypes.to_numpy(output_data_type)).max)
    check(dims.upper(input.shape[axis]) <= limit,
          f"dimension {axis} of size {input.shape[axis]} exceeds the {output_data_type} maximum {limit}")
    shape, _ = reduced_shape(input.shape, [axis], keep_dimensions)
    return TensorSpec(shape, output_data_type)


_ARG_ATTRS = {"axis": Int(), "keep_dimensions": Bool(False), "output_data_type": DType("int32", ("int32", "int64"))}
nn_op("arg_max", ["input"], dict(_ARG_ATTRS), reference=_arg_ref(np.argmax), dynamic=True)(_arg_rule)
nn_op("arg_min", ["input"], dict(_ARG_ATTRS), reference=_arg_ref(np.argmin), dynamic=True)(_arg_rule)
