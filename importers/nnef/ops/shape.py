"""Tensor shape operations (§4.5): reshape, squeeze/unsqueeze, transpose, split/concat,
stack/unstack, slice (with the parser's optional `stride`), pad (every border mode) and tile.

tile is composed exactly: reshape to [1, d0, 1, d1, ...], expand to [r0, d0, r1, d1, ...], reshape
to [r0*d0, r1*d1, ...] (no nn tile op was declared when this was written).
"""
import numpy as np

from estuary.base.dims import Dim
from estuary.importers.nnef.ops import OPS


_PAD_MODES = {"constant": "constant", "replicate": "edge", "reflect": "reflection", "reflect-even": "symmetric"}


def _out_shape(c, inv, key="output"):
    return c.shape(inv.outputs[key])


@OPS.op("reshape", "squeeze", "unsqueeze")
def reshape(c, inv):
    # the parser's shape inference already resolved 0 / -1 items, axis_start and axis_count
    return c.reshape(c.tensor(inv.inputs["input"]), _out_shape(c, inv))


@OPS.op("transpose")
def transpose(c, inv):
    x = c.tensor(inv.inputs["input"])
    axes = list(inv.attribs["axes"])
    rank = c.spec(x).rank
    c.check(sorted(axes) == list(range(len(axes))) and len(axes) <= rank,
            f"axes {axes} must be a permutation of 0..{len(axes) - 1} (at most the rank {rank})")
    perm = axes + list(range(len(axes), rank))
    if perm == list(range(rank)):
        return c.op("identity", [x])
    return c.op("transpose", [x], permutation=perm)


def _split(c, x, axis, sizes):
    if len(sizes) == 1:
        return [c.op("identity", [x])]
    out = c.op("split", [x], splits=list(sizes), axis=axis)
    return list(out) if isinstance(out, (list, tuple)) else [out]


@OPS.op("split")
def split(c, inv):
    x = c.tensor(inv.inputs["value"])
    axis = inv.attribs["axis"]
    return _split(c, x, axis, [s[axis] for s in _out_shape(c, inv, "values")])


def _concat(c, values, axis):
    values = list(values)
    dtypes = {c.spec(v).dtype for v in values}
    c.check(len(dtypes) == 1, f"values must share one type, got {sorted(dtypes)}")
    if len(values) == 1:
        return c.op("identity", values)
    return c.op("concat", [values], axis=axis)


@OPS.op("concat")
def concat(c, inv):
    return _concat(c, c.tensors(inv.inputs["values"]), inv.attribs["axis"])


@OPS.op("stack")
def stack(c, inv):
    axis = inv.attribs["axis"]
    values = c.tensors(inv.inputs["values"])
    shape = list(c.spec(values[0]).shape)
    return _concat(c, [c.reshape(v, shape[:axis] + [1] + shape[axis:]) for v in values], axis)


@OPS.op("unstack")
def unstack(c, inv):
    x = c.tensor(inv.inputs["value"])
    axis = inv.attribs["axis"]
    shape = list(c.spec(x).shape)
    pieces = _split(c, x, axis, [1] * shape[axis])
    return [c.reshape(p, shape[:axis] + shape[axis + 1:]) for p in pieces]


def _normalize(offset, extent):
    return min(max(offset + extent if offset < 0 else offset, -1), extent)


@OPS.op("slice")
def slice_(c, inv):
    x = c.tensor(inv.inputs["input"])
    shape = list(c.spec(x).shape)
    axes, begin, end = (list(inv.attribs[k]) for k in ("axes", "begin", "end"))
    stride = list(inv.attribs.get("stride") or [1] * len(axes))
    c.check(len(axes) == len(begin) == len(end) == len(stride),
            "axes, begin, end (and stride) must have the same length")
    c.check(all(0 <= a < len(shape) for a in axes), f"axes {axes} out of range for rank {len(shape)}")
    c.check(all(s != 0 for s in stride), f"stride {stride} must be non-zero")
    starts, sizes = [0] * len(shape), list(shape)
    gathers = []
    for a, b, e, s in zip(axes, begin, end, stride):
        if any(isinstance(v, Dim) for v in (b, e, shape[a])):
            starts[a], sizes[a] = _dynamic_window(c, shape[a], b, e, s, all(t == 1 for t in stride))
            continue
        if s == 1 and all(t == 1 for t in stride) and e == 0:
            e = shape[a]  # end 0 means "up to the extent" (§4.5.4)
        first, last = _normalize(b, shape[a]), _normalize(e, shape[a])
        idx = list(range(first, last, s))
        c.check(len(idx) > 0 and all(0 <= i < shape[a] for i in idx),
                f"slice {b}:{e}:{s} of axis {a} (extent {shape[a]}) is empty or out of range")
        if s == 1:
            starts[a], sizes[a] = idx[0], len(idx)
        else:
            gathers.append((a, idx))
    if starts != [0] * len(shape) or sizes != shape:
        x = c.op("slice", [x], starts=starts, sizes=sizes)
    orig = c.tensor(inv.inputs["input"])
    for a, idx in gathers:
        x = c.op("gather", [x, c.const(np.asarray(idx, np.int32), "int32")], axis=a)
    if x is orig:
        x = c.op("identity", [x])
    return x


def _dynamic_window(c, extent, begin, end, stride, unit_strides):
    """(start, size) of begin:end along an axis when a bound or the extent is a dynamic dimension
    (the tract reader's symbols); the symbols' bounds must decide where the window falls."""
    from estuary.importers.mlprogram import symbolic

    c.check(stride == 1, f"a slice with stride {stride} of a dynamic dimension")
    if unit_strides and isinstance(end, int) and end == 0:
        end = extent
    try:
        return symbolic.slice_window(extent, begin, end, 1, False, False)
    except symbolic.NotSymbolic as e:
        c.fail(f"slice {begin}:{end} of an axis of size {extent}: {e}")


def pad_value(c, x, padding, border, value=0.0):
    """Pad `x` by [(before, after)] per axis with an NNEF border mode; negative items crop."""
    shape = list(c.spec(x).shape)
    c.check(len(padding) == len(shape), f"padding has {len(padding)} pairs, the rank is {len(shape)}")
    crop = [(max(-p, 0), max(-q, 0)) for p, q in padding]
    if any(p or q for p, q in crop):
        sizes = [d - p - q for d, (p, q) in zip(shape, crop)]
        c.check(all(s > 0 for s in sizes), f"negative padding {padding} crops the whole tensor {shape}")
        x = c.op("slice", [x], starts=[p for p, _ in crop], sizes=sizes)
        shape = sizes
    grow = [(max(p, 0), max(q, 0)) for p, q in padding]
    if not any(p or q for p, q in grow):
        return x
    c.check(border in _PAD_MODES, f"border {border!r} is not supported for padding "
                                  f"(one of {', '.join(_PAD_MODES)})")
    if border == "reflect":
        c.check(all(p < d and q < d for d, (p, q) in zip(shape, grow)),
                f"'reflect' padding {grow} must be smaller than the extents {shape}")
    if border == "reflect-even":
        c.check(all(p <= d and q <= d for d, (p, q) in zip(shape, grow)),
                f"'reflect-even' padding {grow} must not exceed the extents {shape}")
    return c.op("pad", [x], beginning_padding=[p for p, _ in grow], ending_padding=[q for _, q in grow],
                mode=_PAD_MODES[border], value=float(value) if border == "constant" else None)


@OPS.op("pad")
def pad(c, inv):
    x = c.tensor(inv.inputs["input"])
    y = pad_value(c, x, [tuple(p) for p in inv.attribs["padding"]], inv.attribs.get("border", "constant"),
                  inv.attribs.get("value", 0.0))
    return c.op("identity", [y]) if y is x else y


@OPS.op("tile")
def tile(c, inv):
    x = c.tensor(inv.inputs["input"])
    shape = list(c.spec(x).shape)
    repeats = list(inv.attribs["repeats"])
    c.check(len(repeats) == len(shape) and all(r > 0 for r in repeats),
            f"repeats {repeats} must have {len(shape)} positive items")
    if all(r == 1 for r in repeats):
        return c.op("identity", [x])
    if all(isinstance(d, int) and d == 1 for d, r in zip(shape, repeats) if r != 1):
        return c.op("expand", [x], new_shape=[d * r for d, r in zip(shape, repeats)])  # only unit axes grow
    # a unit axis before each repeated axis, expanded to the repeat count, merged back
    inter = [v for d, r in zip(shape, repeats) for v in ((1, d) if r != 1 else (d,))]
    wide = [v for d, r in zip(shape, repeats) for v in ((r, d) if r != 1 else (d,))]
    y = c.op("expand", [c.reshape(x, inter)], new_shape=wide)
    return c.reshape(y, [d * r for d, r in zip(shape, repeats)])
