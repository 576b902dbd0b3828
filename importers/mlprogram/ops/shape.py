"""MIL ops moving data: reshape, reshape_like, transpose, concat, split, stack, squeeze,
expand_dims, flatten2d, slice_by_index, slice_by_size, pad, tile, reverse, shape, fill,
fill_like, range_1d, identity, depth_to_space, space_to_depth, pixel_shuffle, pixel_unshuffle.

Constant inputs give numpy results (shape arithmetic is folded at import), inputs known up to
dynamic dimensions SymArrays (symbolic.py): a reshape target, a slice's bounds or a fill's shape
may hold dimension expressions. Shapes, axes and slice bounds must be known at compile time (a
clear error otherwise).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from estuary.base import dims
from estuary.base.dims import Dim
from estuary.importers.coreml.nd import constant_array
from estuary.importers.coreml.ops.shape import strided_slice
from estuary.importers.mlprogram import dynamic_slice, symbolic, values
from estuary.importers.mlprogram.ops import OPS
from estuary.importers.mlprogram.symbolic import NotSymbolic, SymArray


def is_const(v: Any) -> bool:
    return isinstance(v, np.ndarray)


def shape_of(c: Any, v: Any) -> list[dims.Value]:
    if isinstance(v, SymArray):
        return list(v.shape)
    return list(np.shape(v)) if is_const(v) else list(c.spec(v).shape)


def axis_of(c: Any, axis: int, rank: int, what: str = "axis") -> int:
    c.check(-rank <= axis < rank, f"{what} {axis} is out of range for rank {rank}")
    return axis % rank


def reshape_to(c: Any, x: Any, shape: list[dims.Value]) -> Any:
    if is_const(x):
        return x.reshape(shape)
    if isinstance(x, SymArray):
        return x.map(lambda v: v.reshape(shape))
    return c.reshape(x, shape)


def transpose(c: Any, x: Any, perm: list[int]) -> Any:
    if is_const(x):
        return np.transpose(x, perm)
    if isinstance(x, SymArray):
        return x.map(lambda v: np.transpose(v, perm))
    if perm == list(range(len(perm))):
        return x
    return c.op("transpose", [x], permutation=perm)


@OPS.op("identity")
def convert_identity(c: Any, op: Any) -> Any:
    x = c.arg(op, "x")
    return x if symbolic.known(x) else c.op("identity", [x])


def resolve_shape(c: Any, src: list[dims.Value], target: list[dims.Value], zero_copies: bool) -> list[dims.Value]:
    """`target` with its 0 (copy, before iOS17) and -1 (the rest) placeholders resolved; with
    dynamic dimensions -1 is the element count divided exactly by the other entries."""
    src, out = [symbolic.resolve(d) for d in src], [symbolic.resolve(d) for d in target]
    if zero_copies and len(out) == len(src):
        out = [s if t == 0 else t for t, s in zip(out, src)]
    total = dims.size(src)
    if out.count(-1) == 1:
        rest = dims.size(d for d in out if d != -1)
        try:
            out[out.index(-1)] = symbolic.exact_div(total, rest)
        except NotSymbolic:
            c.fail(f"cannot reshape {src} to {target}: {rest} does not divide {total}")
    fixed = [d for d in out if not isinstance(d, Dim)]
    c.check(all(d >= 0 for d in fixed) and dims.size(out) == total, f"cannot reshape {src} to {target}")
    return out


@OPS.op("reshape")
def convert_reshape(c: Any, op: Any) -> Any:
    x = c.arg(op, "x")
    shape = resolve_shape(c, shape_of(c, x), c.dims(op, "shape"), zero_copies=c.opset < 17)
    return reshape_to(c, x if symbolic.known(x) else c.value(x), shape)


@OPS.op("reshape_like", since=16)
def convert_reshape_like(c: Any, op: Any) -> Any:
    """x reshaped to the concatenation of ref_tensors[i].shape[begins[i]:ends[i]] (or to the end)."""
    x = c.arg(op, "x")
    refs = [c._resolve(b) for b in op.bindings("ref_tensors")]
    begins, ends = c.ints(op, "begins"), c.ints(op, "ends")
    end_masks = [bool(v) for v in np.asarray(c.val(op, "end_masks")).reshape(-1)]
    shape: list[dims.Value] = []
    for r, b, e, m in zip(refs, begins, ends, end_masks):
        s = shape_of(c, r)
        shape += s[b:] if m else s[b:e]
    return reshape_to(c, x, resolve_shape(c, shape_of(c, x), shape, False))


@OPS.op("transpose")
def convert_transpose(c: Any, op: Any) -> Any:
    x = c.arg(op, "x")
    rank = len(shape_of(c, x))
    perm = [axis_of(c, p, rank, "perm entry") for p in c.ints(op, "perm")]
    c.check(sorted(perm) == list(range(rank)), f"perm {perm} is not a permutation of {rank} axes")
    return transpose(c, x, perm)


def known_data(vals: list[Any], fn: Any) -> Any:
    """`fn` (a numpy function of a list of arrays) of values known at import: a numpy result, or
    a SymArray when one of them is."""
    if all(is_const(v) for v in vals):
        return fn(vals)
    dtype = np.result_type(*[v.dtype for v in vals])
    return symbolic.make(fn([symbolic.objects(v) for v in vals]), dtype)


@OPS.op("concat")
def convert_concat(c: Any, op: Any) -> Any:
    vals = [c._resolve(b) for b in op.bindings("values")]
    c.check(vals, "concat needs at least one value")
    if all(len(shape_of(c, v)) == 0 for v in vals):  # scalars (shape arithmetic): MIL joins them as [1]s
        vals = [reshape_to(c, v, [1]) for v in vals]
    rank = len(shape_of(c, vals[0]))
    axis = axis_of(c, int(c.scalar(op, "axis")), max(rank, 1))
    interleave = bool(c.scalar(op, "interleave", False))
    if all(symbolic.known(v) for v in vals) and not interleave:
        return known_data(vals, lambda vs: np.concatenate(vs, axis=axis))
    xs = [c.value(v) for v in vals]
    if interleave:  # x0[0], x1[0], ..., x0[1], x1[1], ...: stack after the axis, then merge
        shape = shape_of(c, xs[0])
        parts = [c.reshape(v, shape[:axis + 1] + [1] + shape[axis + 1:]) for v in xs]
        y = c.op("concat", [parts], axis=axis + 1)
        return c.reshape(y, shape[:axis] + [shape[axis] * len(xs)] + shape[axis + 1:])
    if len(xs) == 1:
        return c.op("identity", xs)
    return c.op("concat", [xs], axis=axis)


@OPS.op("stack")
def convert_stack(c: Any, op: Any) -> Any:
    vals = [c._resolve(b) for b in op.bindings("values")]
    c.check(vals, "stack needs at least one value")
    shape = shape_of(c, vals[0])
    axis = axis_of(c, int(c.scalar(op, "axis")), len(shape) + 1)
    if all(symbolic.known(v) for v in vals):
        return known_data(vals, lambda vs: np.stack(vs, axis=axis))
    parts = [c.reshape(c.value(v), shape[:axis] + [1] + shape[axis:]) for v in vals]
    return parts[0] if len(parts) == 1 else c.op("concat", [parts], axis=axis)


@OPS.op("split")
def convert_split(c: Any, op: Any) -> Any:
    x = c.arg(op, "x")
    shape = shape_of(c, x)
    axis = axis_of(c, int(c.scalar(op, "axis")), len(shape))
    sizes = c.ints(op, "split_sizes", None)
    c.check(not isinstance(shape[axis], Dim), f"cannot split the dynamic dimension {shape[axis]} (axis {axis})")
    dim = int(shape[axis])  # static (checked above)
    if sizes is None:
        n = int(c.scalar(op, "num_splits"))
        c.check(n > 0, f"num_splits must be positive, got {n}")
        size = -(-dim // n)
        sizes = [size] * (dim // size) + ([dim % size] if dim % size else [])
    c.check(sum(sizes) == dim and all(s > 0 for s in sizes), f"split sizes {sizes} do not add up to {dim}")
    if is_const(x):
        return np.split(x, np.cumsum(sizes)[:-1], axis=axis)
    if isinstance(x, SymArray):
        return [symbolic.make(part, x.dtype) for part in np.split(x.values, np.cumsum(sizes)[:-1], axis=axis)]
    if len(sizes) == 1:
        return [c.op("identity", [x])]
    return list(c.op("split", [x], splits=sizes, axis=axis))


@OPS.op("squeeze")
def convert_squeeze(c: Any, op: Any) -> Any:
    x = c.arg(op, "x")
    shape = shape_of(c, x)
    axes = c.ints(op, "axes", None)
    if axes is None:
        keep = [d for d in shape if d != 1]
    else:
        drop = {axis_of(c, a, len(shape)) for a in axes}
        for a in drop:
            c.check(shape[a] == 1, f"cannot squeeze axis {a} of size {shape[a]}")
        keep = [d for i, d in enumerate(shape) if i not in drop]
    return reshape_to(c, x, keep)


@OPS.op("expand_dims")
def convert_expand_dims(c: Any, op: Any) -> Any:
    x = c.arg(op, "x")
    shape = shape_of(c, x)
    axes = c.ints(op, "axes")
    rank = len(shape) + len(axes)
    new = sorted(axis_of(c, a, rank) for a in axes)
    c.check(len(set(new)) == len(new), f"axes {axes} repeat an axis")
    out = list(shape)
    for a in new:
        out.insert(a, 1)
    return reshape_to(c, x, out)


@OPS.op("flatten2d")
def convert_flatten2d(c: Any, op: Any) -> Any:
    x = c.arg(op, "x")
    shape = shape_of(c, x)
    axis = int(c.scalar(op, "axis", 1))
    c.check(-len(shape) <= axis <= len(shape), f"axis {axis} is out of range for rank {len(shape)}")
    axis = axis + len(shape) if axis < 0 else axis
    return reshape_to(c, x, [dims.size(shape[:axis]), dims.size(shape[axis:])])


def _masks(c: Any, op: Any, key: str, rank: int) -> list[bool]:
    v = c.val(op, key, None)
    return [False] * rank if v is None else [bool(b) for b in np.asarray(v).reshape(-1)]


def _declared_static(c: Any, op: Any) -> list[int]:
    """The static shape the program declares for the op's result (a run-time window's size)."""
    tt = values.tensor_type(op.proto.outputs[0].type, c.pb)
    static = [] if tt is None else [d for d in tt[1] if d is not None]
    if tt is None or len(static) != len(tt[1]):
        c.fail("with a run-time begin, the result's shape must be static")
    return static


def _bound(c: Any, op: Any, key: str) -> Any:
    """A slice's begin/end/size known at import (numpy or SymArray), or None for run-time data."""
    v = c.arg(op, key)
    return v if symbolic.known(v) else constant_array(v)


def _slice_op(c: Any, x: Any, shape: list[dims.Value], starts: list[dims.Value], sizes: list[dims.Value],
              strides: list[int]) -> Any:
    """nn.slice of x (nothing when the window is all of x)."""
    y = c.value(x)
    whole = all(s == 0 for s in starts) and [symbolic.resolve(n) for n in sizes] == shape and set(strides) == {1}
    if whole:
        return c.op("identity", [y])
    return c.op("slice", [y], starts=starts, sizes=sizes, strides=None if set(strides) == {1} else strides)


def _symbolic_slice(c: Any, x: Any, shape: list[dims.Value], begin: Any, end: Any, stride: list[int],
                    bm: list[bool], em: list[bool], sm: list[bool]) -> Any:
    """x[begin:end:stride] where a bound or a dimension is dynamic: one nn.slice with dimension
    expressions; NotSymbolic where the symbols' bounds do not decide how a bound clamps."""
    begin, end = symbolic.as_dims(begin, "begin"), symbolic.as_dims(end, "end")
    starts: list[dims.Value] = []
    sizes: list[dims.Value] = []
    kept: list[dims.Value] = []
    for i, d in enumerate(shape):
        if sm[i]:
            starts.append(symbolic.element_at(d, begin[i]))
            sizes.append(1)
            continue
        start, size = symbolic.slice_window(d, begin[i], end[i], stride[i], bm[i], em[i])
        starts.append(start)
        sizes.append(size)
        kept.append(dims.ceil_div(size, stride[i]))
    return c.reshape(_slice_op(c, x, shape, starts, sizes, stride), kept)


@OPS.op("slice_by_index")
def convert_slice_by_index(c: Any, op: Any) -> Any:
    x = c.arg(op, "x")
    shape = [symbolic.resolve(d) for d in shape_of(c, x)]
    rank = len(shape)
    stride = c.ints(op, "stride", None) or [1] * rank
    bm, em, sm = _masks(c, op, "begin_mask", rank), _masks(c, op, "end_mask", rank), _masks(c, op, "squeeze_mask", rank)
    known_begin, known_end = _bound(c, op, "begin"), _bound(c, op, "end")
    symbolic_begin = isinstance(known_begin, SymArray)
    if known_begin is not None and known_end is not None and \
            (symbolic_begin or isinstance(known_end, SymArray) or not dims.is_static(shape)):
        try:
            return _symbolic_slice(c, x, shape, known_begin, known_end, stride, bm, em, sm)
        except NotSymbolic as e:
            c.check(symbolic_begin, f"{e}; compile for a fixed shape (--shape / shapes=)")
    begin_value = dynamic_slice.runtime_begin(c, op)
    if begin_value is not None:  # a window at a run-time position: its size is the declared result's
        kept = iter(_declared_static(c, op))
        sizes: list[dims.Value] = [1 if sm[i] else next(kept, 0) for i in range(rank)]
        y = dynamic_slice.gather_window(c, c.value(x), dynamic_slice.window(c, begin_value, shape, sizes, stride, bm),
                                        shape)
        return c.reshape(y, [n for i, n in enumerate(sizes) if not sm[i]])
    begin, end = c.ints(op, "begin"), c.ints(op, "end")
    if symbolic.known(x):
        index = []
        for i in range(rank):
            if sm[i]:
                index.append(begin[i])
            else:
                index.append(slice(None if bm[i] else begin[i], None if em[i] else end[i], stride[i]))
        return x.map(lambda v: v[tuple(index)]) if isinstance(x, SymArray) else np.asarray(x[tuple(index)])
    y = strided_slice(c, x, begin, end, stride, bm, em, sm)
    if all(sm):  # MIL keeps a rank-0 result where Core ML's layer gives [1]
        return c.reshape(y, [])
    return y


@OPS.op("slice_by_size")
def convert_slice_by_size(c: Any, op: Any) -> Any:
    """x[begin[i] : begin[i] + size[i]] per axis; size -1 runs to the end."""
    x = c.arg(op, "x")
    shape = [symbolic.resolve(d) for d in shape_of(c, x)]
    known_begin, size_v = _bound(c, op, "begin"), c.known(op, "size")
    if known_begin is not None and (isinstance(known_begin, SymArray) or isinstance(size_v, SymArray)
                                    or not dims.is_static(shape)):
        try:
            windows = [symbolic.sized_window(d, b, n) for d, b, n in
                       zip(shape, symbolic.as_dims(known_begin, "begin"), symbolic.as_dims(size_v, "size"))]
            c.check(len(windows) == len(shape), f"begin/size must have {len(shape)} entries")
            return _slice_op(c, x, shape, [w[0] for w in windows], [w[1] for w in windows], [1] * len(shape))
        except NotSymbolic as e:
            c.check(isinstance(known_begin, SymArray), f"{e}; compile for a fixed shape (--shape / shapes=)")
    begin_value = dynamic_slice.runtime_begin(c, op)
    if begin_value is not None:
        size = c.dims(op, "size")
        c.check(len(size) == len(shape) and -1 not in size,
                "with a run-time begin, size must give every axis's size (no -1)")
        return dynamic_slice.gather_window(
            c, c.value(x), dynamic_slice.window(c, begin_value, shape, size, [1] * len(shape), [False] * len(shape)),
            shape)
    begin, size = c.ints(op, "begin"), c.ints(op, "size")
    c.check(len(begin) == len(shape) == len(size), f"begin/size must have {len(shape)} entries")
    starts, sizes = [], []
    for b, s, d in zip(begin, size, shape):
        b = b + d if b < 0 else b
        s = d - b if s == -1 else s
        c.check(0 <= b and s >= 0 and b + s <= d, f"slice [{b}, {b + s}) is outside a dimension of size {d}")
        starts.append(b)
        sizes.append(s)
    if is_const(x):
        return x[tuple(slice(b, b + s) for b, s in zip(starts, sizes))]
    if sizes == shape:
        return c.op("identity", [x])
    return c.op("slice", [x], starts=starts, sizes=sizes)


@OPS.op("pad")
def convert_pad(c: Any, op: Any) -> Any:
    """pad [begin, end] pairs for the last len(pad)/2 axes; constant, reflect or replicate."""
    x = c.x(op)
    shape = shape_of(c, x)
    pad = c.ints(op, "pad")
    c.check(len(pad) % 2 == 0 and len(pad) // 2 <= len(shape), f"pad {pad} does not fit rank {len(shape)}")
    pairs = [(0, 0)] * (len(shape) - len(pad) // 2) + [(pad[2 * i], pad[2 * i + 1]) for i in range(len(pad) // 2)]
    mode = str(c.val(op, "mode", "constant"))
    modes = {"constant": "constant", "reflect": "reflection", "replicate": "edge"}
    c.check(mode in modes, f"unknown pad mode {mode!r}")
    value = float(c.scalar(op, "constant_val", 0.0))
    return c.op("pad", [x], beginning_padding=[p[0] for p in pairs], ending_padding=[p[1] for p in pairs],
                mode=modes[mode], value=value)


@OPS.op("tile")
def convert_tile(c: Any, op: Any) -> Any:
    """x repeated reps[i] times along each axis. A dynamic repetition count (the torch frontend's
    `expand` to another tensor's shape: the target shape divided by x's) must repeat an axis of
    size 1: a broadcast."""
    x = c.arg(op, "x")
    shape = shape_of(c, x)
    reps = c.dims(op, "reps")
    c.check(len(reps) == len(shape), f"reps {reps} must have one entry per axis")
    if not dims.is_static(reps):
        for d, r in zip(shape, reps):
            c.check(d == 1 or not isinstance(r, Dim), f"the dynamic repetition count {r} repeats an axis of size {d}; "
                                                      f"only axes of size 1 may repeat a dynamic number of times")
        return c.op("expand", [c.value(x)], new_shape=[r if d == 1 else d for d, r in zip(shape, reps)])
    if symbolic.known(x):
        return x.map(lambda v: np.tile(v, reps)) if isinstance(x, SymArray) else np.tile(x, reps)
    return c.op("tile", [x], repetitions=reps)


@OPS.op("reverse")
def convert_reverse(c: Any, op: Any) -> Any:
    x = c.x(op)
    rank = len(shape_of(c, x))
    axes = c.ints(op, "axes", None)
    axes = list(range(rank)) if axes is None else [axis_of(c, a, rank) for a in axes]
    return c.op("reverse", [x], axes=axes)


@OPS.op("shape")
def convert_shape(c: Any, op: Any) -> Any:
    """The shape as int32 data known at import (a SymArray when a dimension is dynamic)."""
    return symbolic.make(shape_of(c, c.arg(op, "x")), np.int32)


def _fill(c: Any, shape: list[dims.Value], value: Any) -> Any:
    """A constant, or a scalar broadcast to a dynamic shape."""
    c.check(all(d >= 0 for d in shape if not isinstance(d, Dim)), f"shape {shape} has a negative dimension")
    v = np.asarray(value)
    if dims.is_static(shape):
        return np.full(shape, v, dtype=v.dtype)
    return c.op("expand", [c.value(v.reshape([1] * len(shape)))], new_shape=[symbolic.resolve(d) for d in shape])


@OPS.op("fill")
def convert_fill(c: Any, op: Any) -> Any:
    return _fill(c, c.dims(op, "shape"), c.val(op, "value", np.float32(0)))


@OPS.op("fill_like", since=16)
def convert_fill_like(c: Any, op: Any) -> Any:
    return _fill(c, shape_of(c, c.arg(op, "ref_tensor")), c.val(op, "value", np.float32(0)))


@OPS.op("range_1d")
def convert_range_1d(c: Any, op: Any) -> Any:
    """start, start + step, ... below end (above it for a negative step). With a dynamic start or
    end (a position range `past .. past + new`) the values are computed at run time."""
    bounds = [c.known(op, k) for k in ("start", "end", "step")]
    if all(is_const(b) for b in bounds):
        a_start, a_end, a_step = (np.asarray(b).reshape(()) for b in bounds)
        c.check(a_step != 0, "step must not be 0")
        return np.arange(a_start.item(), a_end.item(), a_step.item()).astype(np.result_type(a_start, a_end, a_step))
    try:
        start, end, by = (symbolic.as_dims(b, k)[0] for b, k in zip(bounds, ("start", "end", "step")))
        c.check(isinstance(by, int) and by != 0, f"step must be a fixed number other than 0, got {by}")
        step = int(by)  # fixed (checked above)
        count = dims.ceil_div(end - start, step) if step > 0 else dims.ceil_div(start - end, -step)
    except NotSymbolic as e:
        c.fail(f"{e}; compile for a fixed shape (--shape / shapes=)")
    values = symbolic.iota(c, count)
    if step != 1:
        values = c.op("mul", [values, symbolic.dims_tensor(c, [step])])
    values = c.op("add", [values, symbolic.dims_tensor(c, [start])])
    return values if all(b.dtype.kind != "f" for b in bounds) else c.op("cast", [values], to="float32")


def _depth_to_space(c: Any, x: Any, b: int) -> Any:
    """[N, C*b*b, H, W] -> [N, C, H*b, W*b] (DCR order, as MIL's depth_to_space)."""
    n, ch, h, w = shape_of(c, x)
    c.check(ch % (b * b) == 0, f"channels {ch} are not divisible by block_size^2 = {b * b}")
    y = c.reshape(x, [n, b, b, ch // (b * b), h, w])
    y = c.op("transpose", [y], permutation=[0, 3, 4, 1, 5, 2])
    return c.reshape(y, [n, ch // (b * b), h * b, w * b])


def _pixel_shuffle(c: Any, x: Any, b: int) -> Any:
    """[N, C*b*b, H, W] -> [N, C, H*b, W*b] (CRD order, as torch.pixel_shuffle)."""
    n, ch, h, w = shape_of(c, x)
    c.check(ch % (b * b) == 0, f"channels {ch} are not divisible by upscale_factor^2 = {b * b}")
    y = c.reshape(x, [n, ch // (b * b), b, b, h, w])
    y = c.op("transpose", [y], permutation=[0, 1, 4, 2, 5, 3])
    return c.reshape(y, [n, ch // (b * b), h * b, w * b])


def _space_to_depth(c: Any, x: Any, b: int, crd: bool) -> Any:
    n, ch, h, w = shape_of(c, x)
    c.check(h % b == 0 and w % b == 0, f"height {h} and width {w} must be divisible by {b}")
    y = c.reshape(x, [n, ch, h // b, b, w // b, b])
    perm = [0, 1, 3, 5, 2, 4] if crd else [0, 3, 5, 1, 2, 4]
    y = c.op("transpose", [y], permutation=perm)
    return c.reshape(y, [n, ch * b * b, h // b, w // b])


def _rank4(c: Any, x: Any) -> Any:
    c.check(len(shape_of(c, x)) == 4, f"x must have rank 4, got shape {shape_of(c, x)}")
    return x


@OPS.op("depth_to_space")
def convert_depth_to_space(c: Any, op: Any) -> Any:
    return _depth_to_space(c, _rank4(c, c.x(op)), int(c.scalar(op, "block_size")))


@OPS.op("space_to_depth")
def convert_space_to_depth(c: Any, op: Any) -> Any:
    return _space_to_depth(c, _rank4(c, c.x(op)), int(c.scalar(op, "block_size")), crd=False)


@OPS.op("pixel_shuffle")
def convert_pixel_shuffle(c: Any, op: Any) -> Any:
    return _pixel_shuffle(c, _rank4(c, c.x(op)), int(c.scalar(op, "upscale_factor")))


@OPS.op("pixel_unshuffle", since=16)
def convert_pixel_unshuffle(c: Any, op: Any) -> Any:
    return _space_to_depth(c, _rank4(c, c.x(op)), int(c.scalar(op, "downscale_factor")), crd=True)


@OPS.op("space_to_batch")
def convert_space_to_batch(c: Any, op: Any) -> Any:
    """[n, C, H, W] padded, cut into bh x bw blocks moved to the batch: batch index (i * bw + j) * n + b."""
    x = _rank4(c, c.x(op))
    bh, bw = c.ints(op, "block_shape")
    pads = c.ints(op, "paddings")
    c.check(len(pads) == 4 and min(pads) >= 0 and bh >= 1 and bw >= 1, f"bad block_shape/paddings {pads}")
    if any(pads):
        x = c.op("pad", [x], beginning_padding=[0, 0, pads[0], pads[2]], ending_padding=[0, 0, pads[1], pads[3]],
                 mode="constant", value=0.0)
    n, ch, h, w = shape_of(c, x)
    c.check(h % bh == 0 and w % bw == 0, f"the padded size {h} x {w} is not divisible by the block {bh} x {bw}")
    y = c.reshape(x, [n, ch, h // bh, bh, w // bw, bw])
    y = c.op("transpose", [y], permutation=[3, 5, 0, 1, 2, 4])
    return c.reshape(y, [bh * bw * n, ch, h // bh, w // bw])


@OPS.op("batch_to_space")
def convert_batch_to_space(c: Any, op: Any) -> Any:
    """The inverse of space_to_batch, then `crops` [[top, bottom], [left, right]] removed."""
    x = _rank4(c, c.x(op))
    bh, bw = c.ints(op, "block_shape")
    crops = c.ints(op, "crops")
    nb, ch, h, w = shape_of(c, x)
    c.check(len(crops) == 4 and min(crops) >= 0 and nb % (bh * bw) == 0, f"bad block_shape/crops {crops}")
    n = nb // (bh * bw)
    y = c.reshape(x, [bh, bw, n, ch, h, w])
    y = c.op("transpose", [y], permutation=[2, 3, 4, 0, 5, 1])
    y = c.reshape(y, [n, ch, h * bh, w * bw])
    hh, ww = h * bh - crops[0] - crops[1], w * bw - crops[2] - crops[3]
    c.check(hh > 0 and ww > 0, "the crops leave nothing")
    if any(crops):
        y = c.op("slice", [y], starts=[0, 0, crops[0], crops[2]], sizes=[n, ch, hh, ww])
    return y


@OPS.op("slice_update", since=18)
def convert_slice_update(c: Any, op: Any) -> Any:
    """x with x[begin:end:stride] (slice_by_index's masks) replaced by update: the update spread
    over each sliced axis by a gather, selected by a mask (dynamic_slice.scatter_window)."""
    x, upd = c.x(op), c.x(op, "update")
    shape = shape_of(c, x)
    rank = len(shape)
    stride = c.ints(op, "stride", None) or [1] * rank
    bm, em, sm = _masks(c, op, "begin_mask", rank), _masks(c, op, "end_mask", rank), _masks(c, op, "squeeze_mask", rank)
    begin_value = dynamic_slice.runtime_begin(c, op)
    if begin_value is None and not dims.is_static(shape + shape_of(c, upd)):
        begin_value = c.value(c.known(op, "begin"))  # a window of dynamic size: computed as at a run-time begin
    if begin_value is not None:  # written at a run-time position: the window has the update's shape
        upd_shape = shape_of(c, upd)
        if len(upd_shape) == rank:
            sizes = upd_shape
        else:
            c.check(len(upd_shape) == rank - sum(sm), f"update of rank {len(upd_shape)} does not fit the slice")
            rest = iter(upd_shape)
            sizes = [1 if sm[i] else next(rest) for i in range(rank)]
        return dynamic_slice.scatter_window(c, x, upd, dynamic_slice.window(c, begin_value, shape, sizes, stride, bm),
                                             stride)
    begin, end = c.ints(op, "begin"), c.ints(op, "end")
    ranges = []
    for i in range(rank):
        if sm[i]:
            b = begin[i] % shape[i]
            ranges.append(range(b, b + 1))
        else:
            ranges.append(range(shape[i])[slice(None if bm[i] else begin[i], None if em[i] else end[i], stride[i])])
    c.check(all(len(r) for r in ranges), "the slice is empty")
    kept = [len(r) for i, r in enumerate(ranges) if not sm[i]]
    c.check(int(dims.prod(shape_of(c, upd))) == int(np.prod([len(r) for r in ranges])),
            f"update of shape {shape_of(c, upd)} does not fit the slice {kept}")
    return dynamic_slice.scatter_window(c, x, upd, [np.asarray(r, np.int64) for r in ranges], stride)
