"""WebNN mappings: reshape, transpose, concat, slice, split, pad, expand, gather, triangular."""
from estuary.base import dims
from estuary.importers.webnn import dynamic
from estuary.importers.webnn.converter import OpContext
from estuary.importers.webnn.ops import OPS


def _ints(c, value, what):
    ok = isinstance(value, (list, tuple)) and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    c.check(ok, f"{what} must be a list of integers, got {value!r}")
    return list(value)


def _dims(c: OpContext, value: object, what: str) -> list[dims.Value]:
    """A newShape / starts / sizes argument: ints and dynamic dimensions (importers/webnn/dynamic.py),
    read through what the graph has learned (a symbol bound to another reads as that one, as the
    operands' shapes do)."""
    try:
        return [c.graph.unifier.resolve(d) for d in dynamic.shape_argument(value, what, c.graph.symbols)]
    except ValueError as e:
        c.fail(str(e))


def _int(c, value, what, lo=0, hi=(1 << 32) - 1):
    """An integer within its WebIDL type's range ([EnforceRange] unsigned long by default)."""
    c.check(isinstance(value, int) and not isinstance(value, bool), f"{what} must be an integer, got {value!r}")
    c.check(lo <= value <= hi, f"{what} {value} is outside the range [{lo}, {hi}]")
    return value


def _number(c, value, what):
    """An MLNumber (the op casts it to the input's data type)."""
    c.check(isinstance(value, (int, float)) and not isinstance(value, bool), f"{what} must be a number, got {value!r}")
    return value


@OPS.op("reshape", params={"input": "MLOperand", "newShape": "sequence<MLDimension>"}, options={})
def reshape(c, input, new_shape, options):
    return c.op("reshape", [input], new_shape=_dims(c, new_shape, "newShape"))


@OPS.op("transpose", params={"input": "MLOperand"}, options={"permutation": "sequence<unsigned long>"})
def transpose(c, input, options):
    perm = options.get("permutation")
    return c.op("transpose", [input], permutation=None if perm is None else _ints(c, perm, "permutation"))


@OPS.op("concat", params={"inputs": "sequence<MLOperand>", "axis": "unsigned long"}, options={})
def concat(c, inputs, axis, options):
    c.check(isinstance(inputs, list), "inputs must be a list of operands")
    return c.op("concat", [inputs], axis=_int(c, axis, "axis"))


@OPS.op("slice", params={"input": "MLOperand", "starts": "sequence<MLDimension>", "sizes": "sequence<MLDimension>"},
        options={"strides": "sequence<unsigned long>"})
def slice_(c, input, starts, sizes, options):
    strides = options.get("strides")
    if strides is not None:
        strides = _ints(c, strides, "strides")
        c.check(len(strides) == c.spec(input).rank,
                f"strides must have {c.spec(input).rank} entries (the input rank), got {strides}")
    if c.spec(input).rank == 0:  # a scalar: nothing to slice
        c.check(not starts and not sizes, "starts and sizes must be empty for a scalar input")
        return c.op("identity", [input])
    return c.op("slice", [input], starts=_dims(c, starts, "starts"), sizes=_dims(c, sizes, "sizes"),
                strides=strides)


@OPS.op("split", params={"input": "MLOperand", "splits": "(unsigned long or sequence<unsigned long>)"},
        options={"axis": "unsigned long = 0"})
def split(c, input, splits, options):
    axis = _int(c, options.get("axis", 0), "axis")
    shape = c.spec(input).shape
    c.check(0 <= axis < len(shape), f"axis {axis} out of range for rank {len(shape)}")
    c.check(not dims.is_dynamic(shape[axis]), f"axis {axis} is the dynamic dimension {shape[axis]}; split needs a "
                                               "fixed size along its axis")
    if isinstance(splits, int) and not isinstance(splits, bool):
        c.check(splits > 0 and shape[axis] % splits == 0,
                f"splits {splits} must evenly divide dimension {axis} of size {shape[axis]}")
        splits = [shape[axis] // splits] * splits
    result = c.op("split", [input], splits=_ints(c, splits, "splits"), axis=axis)
    return result if isinstance(result, list) else [result]


@OPS.op("pad", params={"input": "MLOperand", "beginningPadding": "sequence<unsigned long>",
                        "endingPadding": "sequence<unsigned long>"},
        options={"mode": 'MLPaddingMode = "constant"', "value": "MLNumber = 0"})
def pad(c, input, beginning, ending, options):
    return c.op("pad", [input], beginning_padding=_ints(c, beginning, "beginningPadding"),
                ending_padding=_ints(c, ending, "endingPadding"), mode=options.get("mode", "constant"),
                value=_number(c, options.get("value", 0), "value"))


@OPS.op("expand", params={"input": "MLOperand", "newShape": "sequence<MLDimension>"}, options={})
def expand(c, input, new_shape, options):
    return c.op("expand", [input], new_shape=_dims(c, new_shape, "newShape"))


@OPS.op("gather", params={"input": "MLOperand", "indices": "MLOperand"}, options={"axis": "unsigned long = 0"})
def gather(c, input, indices, options):
    return c.op("gather", [input, indices], axis=_int(c, options.get("axis", 0), "axis"))


@OPS.op("triangular", params={"input": "MLOperand"}, options={"upper": "boolean = true", "diagonal": "long = 0"})
def triangular(c, input, options):
    upper = options.get("upper", True)
    c.check(isinstance(upper, bool), f"upper must be a boolean, got {upper!r}")
    diagonal = _int(c, options.get("diagonal", 0), "diagonal", -(1 << 31), (1 << 31) - 1)  # a WebIDL long
    return c.op("triangular", [input], upper=upper, diagonal=diagonal)
