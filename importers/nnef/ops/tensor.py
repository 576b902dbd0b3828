"""Tensor-introducing operations (§4.1) and variable updates (§4.8).

`update` in a compiled (stateless) function: the result is the new value (as the spec says,
"the new value returned for convenience"); the variable keeps reading its stored data (the .dat
file) in every call, because a compiled Estuary function holds no state between invocations. A
caller that wants recurrence feeds the returned value back itself (make it a graph output).
"""
import numpy as np

from estuary.importers.nnef.converter import DTYPES, NUMPY
from estuary.importers.nnef.ops import OPS


@OPS.op("external")
def external(c, inv):
    name = inv.outputs["output"]
    c.check(name in c.parsed.inputs, f"external tensor {name!r} must be listed among the graph's inputs")
    return c.values[name]


def _dtype(c, inv):
    c.check(inv.dtype in DTYPES, f"unsupported tensor type {inv.dtype!r} (scalar, integer or logical)")
    return inv.dtype


@OPS.op("constant")
def constant(c, inv):
    dtype = _dtype(c, inv)
    shape = c.shape(inv.outputs["output"])
    values = inv.attribs["value"]
    values = values if isinstance(values, list) else [values]
    volume = int(np.prod(shape))
    c.check(len(values) in (1, volume), f"value has {len(values)} items; the shape {shape} needs {volume} or 1")
    array = np.asarray(values, dtype=NUMPY[dtype])
    array = np.full(shape, array[0], dtype=array.dtype) if len(values) == 1 else array.reshape(shape)
    return c.const(array, DTYPES[dtype])


_KINDS = {"scalar": "f", "integer": "iu", "logical": "biu"}


@OPS.op("variable")
def variable(c, inv):
    dtype = _dtype(c, inv)
    label, shape = inv.attribs["label"], list(inv.attribs["shape"])
    c.check(bool(label), "variable label must not be empty")
    cache = c.__dict__.setdefault("_variables", {})
    key = label.lower()  # labels are compared case-insensitively (§4.1.3)
    if key in cache:
        value, first = cache[key]
        c.check(first == shape, f"variable {label!r} shares its data with a variable of shape {first}, "
                                f"but is declared with shape {shape}")
        return value
    data = c.files.read_variable(label, shape)
    c.check(data.dtype.kind in _KINDS[dtype],
            f"variable {label!r} is declared {dtype} but its data file holds {data.dtype} items")
    if dtype == "logical":
        data = data != 0
    value = c.const(np.asarray(data).astype(NUMPY[dtype]).reshape(shape), DTYPES[dtype])
    cache[key] = (value, shape)
    return value


@OPS.op("update")
def update(c, inv):
    var, new = inv.inputs["variable"], inv.inputs["value"]
    c.check(c.shape(var) == c.shape(new), f"value shape {c.shape(new)} must equal the variable's {c.shape(var)}")
    return c.tensor(new)
