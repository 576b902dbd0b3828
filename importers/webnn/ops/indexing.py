"""WebNN mappings: gatherElements, gatherND, scatterElements, scatterND, tile, reverse, cumulativeSum."""
from estuary.importers.webnn.ops import OPS


def _uint(c, value, what):
    """A WebIDL [EnforceRange] unsigned long."""
    c.check(isinstance(value, int) and not isinstance(value, bool) and 0 <= value < (1 << 32),
            f"{what} must be an unsigned integer, got {value!r}")
    return value


def _flag(c, options, name):
    value = options.get(name, False)
    c.check(isinstance(value, bool), f"{name} must be a boolean, got {value!r}")
    return value


@OPS.op("gatherElements", params={"input": "MLOperand", "indices": "MLOperand"}, options={"axis": "unsigned long = 0"})
def gather_elements(c, input, indices, options):
    axis = _uint(c, options.get("axis", 0), "axis")
    return c.op("gather_elements", [input, indices], axis=axis)


@OPS.op("gatherND", params={"input": "MLOperand", "indices": "MLOperand"}, options={})
def gather_nd(c, input, indices, options):
    return c.op("gather_nd", [input, indices])


@OPS.op("scatterElements", params={"input": "MLOperand", "indices": "MLOperand", "updates": "MLOperand"},
        options={"axis": "unsigned long = 0"})
def scatter_elements(c, input, indices, updates, options):
    axis = _uint(c, options.get("axis", 0), "axis")
    shape, ishape = c.spec(input).shape, c.spec(indices).shape
    # The spec asks for the input's shape outside `axis` (the nn op allows smaller).
    c.check(len(ishape) != len(shape) or all(a == b for d, (a, b) in enumerate(zip(ishape, shape)) if d != axis),
            f"indices shape {list(ishape)} must equal the input shape {list(shape)} outside axis {axis}")
    return c.op("scatter_elements", [input, indices, updates], axis=axis, reduction="none")


@OPS.op("scatterND", params={"input": "MLOperand", "indices": "MLOperand", "updates": "MLOperand"}, options={})
def scatter_nd(c, input, indices, updates, options):
    return c.op("scatter_nd", [input, indices, updates], reduction="none")


@OPS.op("tile", params={"input": "MLOperand", "repetitions": "sequence<unsigned long>"}, options={})
def tile(c, input, repetitions, options):
    ok = isinstance(repetitions, (list, tuple))
    c.check(ok, f"repetitions must be a list of unsigned integers, got {repetitions!r}")
    reps = [_uint(c, r, "repetitions entry") for r in repetitions]
    if c.spec(input).rank == 0:
        c.check(not reps, f"repetitions {reps} must have 0 entries (the input rank)")
        return c.op("identity", [input])
    return c.op("tile", [input], repetitions=reps)


@OPS.op("reverse", params={"input": "MLOperand"}, options={"axes": "sequence<unsigned long>"})
def reverse(c, input, options):
    rank = c.spec(input).rank
    axes = options.get("axes")
    if axes is None:  # the default reverses every dimension
        axes = list(range(rank))
    c.check(isinstance(axes, (list, tuple)), f"axes must be a list of unsigned integers, got {axes!r}")
    axes = [_uint(c, a, "axes entry") for a in axes]
    c.check(len(set(axes)) == len(axes), f"axes {axes} must not repeat")
    if not axes:
        return c.op("identity", [input])
    return c.op("reverse", [input], axes=axes)


@OPS.op("cumulativeSum", params={"input": "MLOperand", "axis": "unsigned long"},
        options={"exclusive": "boolean = false", "reversed": "boolean = false"})
def cumulative_sum(c, input, axis, options):
    return c.op("cumulative_sum", [input], axis=_uint(c, axis, "axis"),
                exclusive=_flag(c, options, "exclusive"), reversed=_flag(c, options, "reversed"))
