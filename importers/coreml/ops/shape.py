"""Core ML layers moving data: reshape, flatten, permute, concat, split, slice, sequenceRepeat,
reorganizeData, padding, crop (classic); broadcasts, reshapes, squeeze, expandDims, transpose,
concatND, splitND, slices, constantPad (ND).

"Dynamic" layers (sliceDynamic, reshapeDynamic, broadcastToDynamic, constantPad with a second
input) are supported when their shape/index inputs are known at compile time (importers/coreml/nd.py
`constant_input`); a runtime value is a clear error. Rank-0 results become shape (1,) (Core ML has
no scalars).
"""
import math

import numpy as np

from estuary.base import dims
from estuary.importers.coreml.classic import as_nchw, border, restore
from estuary.importers.coreml.converter import params
from estuary.importers.coreml.nd import axis_of, constant_array, constant_input, int_list, shape_of
from estuary.importers.coreml.ops import OPS


def _perm(c, x, perm):
    return c.op("transpose", [x], permutation=list(perm))


def _channel_last(c, x):
    """[..., C, H, W] -> [..., H, W, C]"""
    r = c.spec(x).rank
    return _perm(c, x, list(range(r - 3)) + [r - 2, r - 1, r - 3])


@OPS.op("reshape")
def reshape(c, layer):
    p = layer.reshape
    x = c.input(layer)
    shape = list(c.spec(x).shape)
    target = [int(v) for v in p.targetShape]
    c.check(len(target) in (3, 4), f"targetShape must be [C,H,W] or [Seq,C,H,W], got {target}")
    c.check(len(shape) >= 3, f"expects an input of rank >= 3, got {shape}")
    if len(target) == 4:
        c.check(len(shape) == 5, f"a 4-value targetShape needs a rank-5 input, got {shape}")
        out = [target[0], shape[1]] + target[1:]
    else:
        out = shape[:-3] + target
    c.check(dims.size(out) == dims.size(shape), f"cannot reshape {shape} to {out}")
    if p.mode == 0:
        return c.reshape(x, out)
    y = c.reshape(_channel_last(c, x), out[:-3] + [out[-2], out[-1], out[-3]])
    r = len(out)
    return _perm(c, y, list(range(r - 3)) + [r - 1, r - 3, r - 2])


@OPS.op("flatten")
def flatten(c, layer):
    x = c.input(layer)
    shape = list(c.spec(x).shape)
    c.check(len(shape) >= 3, f"expects an input of rank >= 3, got {shape}")
    out = shape[:-3] + [dims.size(shape[-3:]), 1, 1]
    if layer.flatten.mode == 1:
        x = _channel_last(c, x)
    return c.reshape(x, out)


@OPS.op("permute")
def permute(c, layer):
    x = c.input(layer)
    shape = list(c.spec(x).shape)
    c.check(len(shape) == 5, f"expects a rank-5 input [Seq, B, C, H, W], got {shape}")
    axes = [int(a) for a in layer.permute.axis] or [0, 1, 2, 3]
    c.check(sorted(axes) == [0, 1, 2, 3], f"axis must be a permutation of [0, 1, 2, 3], got {axes}")
    m = [0, 2, 3, 4]  # Seq, C, H, W -> rank-5 positions (batch stays)
    return _perm(c, x, [m[axes[0]], 1, m[axes[1]], m[axes[2]], m[axes[3]]])


@OPS.op("concat")
def concat(c, layer):
    xs = c.inputs(layer)
    rank = c.spec(xs[0]).rank
    seq = layer.concat.sequenceConcat
    c.check(rank >= (5 if seq else 3), f"inputs of rank {rank} have no {'sequence' if seq else 'channel'} axis")
    return c.op("concat", [xs], axis=rank - (5 if seq else 3))


@OPS.op("split")
def split(c, layer):
    x = c.input(layer)
    shape = list(c.spec(x).shape)
    c.check(len(shape) >= 3, f"expects an input of rank >= 3, got {shape}")
    n = int(layer.split.nOutputs) or len(layer.output)
    c.check(n == len(layer.output), f"nOutputs {n} differs from the {len(layer.output)} outputs")
    c.check(shape[-3] % n == 0, f"{shape[-3]} channels do not split into {n} equal parts")
    return c.op("split", [x], splits=[shape[-3] // n] * n, axis=len(shape) - 3)


@OPS.op("slice")
def slice_(c, layer):
    p = layer.slice
    x = c.input(layer)
    shape = list(c.spec(x).shape)
    ax = {0: -3, 1: -2, 2: -1}.get(p.axis)
    c.check(ax is not None and len(shape) >= -ax, f"cannot slice axis {p.axis} of an input of shape {shape}")
    ax += len(shape)
    n = shape[ax]
    start = p.startIndex + n if p.startIndex < 0 else p.startIndex
    end = p.endIndex + n if p.endIndex < 0 else p.endIndex
    stride = int(p.stride) or 1
    idx = list(range(max(start, 0), min(end, n), stride))
    c.check(len(idx) > 0, f"slice [{p.startIndex}:{p.endIndex}:{stride}] of a dimension of {n} is empty")
    if stride == 1:
        starts = [0] * len(shape)
        sizes = list(shape)
        starts[ax], sizes[ax] = idx[0], len(idx)
        return c.op("slice", [x], starts=starts, sizes=sizes)
    return c.op("gather", [x, c.const(np.asarray(idx, np.int32))], axis=ax)


@OPS.op("sequenceRepeat")
def sequence_repeat(c, layer):
    x = c.input(layer)
    rank = c.spec(x).rank
    c.check(rank >= 5, "expects an input of rank >= 5 (repeats axis -5)")
    reps = [1] * rank
    reps[rank - 5] = int(layer.sequenceRepeat.nRepetitions) or 1
    return c.op("tile", [x], repetitions=reps)


@OPS.op("reorganizeData")
def reorganize_data(c, layer):
    p = layer.reorganizeData
    bs = int(p.blockSize)
    c.check(bs >= 2, f"blockSize must be >= 2, got {bs}")
    x, lead = as_nchw(c, c.input(layer))
    n, ch, h, w = c.spec(x).shape
    if p.mode == 0:  # SPACE_TO_DEPTH
        c.check(h % bs == 0 and w % bs == 0, f"blockSize {bs} must divide H {h} and W {w}")
        y = c.reshape(x, [n, ch, h // bs, bs, w // bs, bs])
        y = _perm(c, y, [0, 3, 5, 1, 2, 4])
        return restore(c, c.reshape(y, [n, ch * bs * bs, h // bs, w // bs]), lead)
    c.check(ch % (bs * bs) == 0, f"blockSize^2 = {bs * bs} must divide C {ch}")
    co = ch // (bs * bs)
    if p.mode == 1:  # DEPTH_TO_SPACE: channel (i * bs + j) * C_out + c
        y = _perm(c, c.reshape(x, [n, bs, bs, co, h, w]), [0, 3, 4, 1, 5, 2])
    elif p.mode == 2:  # PIXEL_SHUFFLE: channel c * bs * bs + i * bs + j
        y = _perm(c, c.reshape(x, [n, co, bs, bs, h, w]), [0, 1, 4, 2, 5, 3])
    else:
        c.fail(f"unknown reorganizeData mode {p.mode}")
    return restore(c, c.reshape(y, [n, co, h * bs, w * bs]), lead)


@OPS.op("padding")
def padding(c, layer):
    p = params(layer)
    x = c.input(layer)
    rank = c.spec(x).rank
    c.check(rank >= 2, "expects an input of rank >= 2")
    t, b, l_, r = border(c, p.paddingAmounts)
    begin = [0] * (rank - 2) + [t, l_]
    end = [0] * (rank - 2) + [b, r]
    kind = p.WhichOneof("PaddingType")
    if kind == "reflection":
        return c.op("pad", [x], beginning_padding=begin, ending_padding=end, mode="reflection")
    if kind == "replication":
        return c.op("pad", [x], beginning_padding=begin, ending_padding=end, mode="edge")
    value = float(p.constant.value) if kind == "constant" else 0.0
    return c.op("pad", [x], beginning_padding=begin, ending_padding=end, mode="constant", value=value)


@OPS.op("crop")
def crop(c, layer):
    p = params(layer)
    x = c.input(layer)
    shape = list(c.spec(x).shape)
    rank = len(shape)
    if len(layer.input) > 1:
        like = list(c.spec(c.input(layer, 1)).shape)
        off = [int(v) for v in p.offset]
        c.check(len(off) == 2, f"crop with a reference input needs offset [H, W], got {off}")
        sizes = shape[:-2] + like[-2:]
        starts = [0] * (rank - 2) + off
    else:
        t, b, l_, r = border(c, p.cropAmounts)
        sizes = shape[:-2] + [shape[-2] - t - b, shape[-1] - l_ - r]
        starts = [0] * (rank - 2) + [t, l_]
    c.check(all(v > 0 for v in sizes) and all(st + sz <= d for st, sz, d in zip(starts, sizes, shape)),
            f"crop of {sizes} at {starts} does not fit the input {shape}")
    return c.op("slice", [x], starts=starts, sizes=sizes)


def _broadcast(c, x, target):
    target = [int(d) for d in target]
    c.check(len(target) > 0 and all(d > 0 for d in target), f"target shape {target} must be positive")
    shape = shape_of(c, x)
    c.check(len(shape) <= len(target), f"cannot broadcast shape {shape} to the lower rank of {target}")
    if shape == target:
        return x
    return c.op("expand", [x], new_shape=target)


@OPS.op("broadcastToLike")
def convert_broadcast_to_like(c, layer):
    return _broadcast(c, c.input(layer), shape_of(c, c.input(layer, 1)))


@OPS.op("broadcastToStatic")
def convert_broadcast_to_static(c, layer):
    return _broadcast(c, c.input(layer), layer.broadcastToStatic.targetShape)


@OPS.op("broadcastToDynamic")
def convert_broadcast_to_dynamic(c, layer):
    target = int_list(c, constant_input(c, layer, 1, "the target shape"), "target shape")
    return _broadcast(c, c.input(layer), target)


def reshape_to(c, x, target, copy_zero=False):
    """Reshape to `target`: one -1 is inferred; with copy_zero, 0 copies the input's dimension."""
    shape = shape_of(c, x)
    target = [int(d) for d in target]
    if copy_zero:
        target = [shape[i] if d == 0 and i < len(shape) else d for i, d in enumerate(target)]
    c.check(len(target) > 0, "the target shape is empty")
    c.check(target.count(-1) <= 1 and all(d > 0 or d == -1 for d in target),
            f"invalid target shape {target} (dimensions must be positive, at most one -1)")
    size = math.prod(shape)
    if -1 in target:
        known = -math.prod(target)
        c.check(size % known == 0, f"cannot reshape {shape} ({size} elements) to {target}")
        target[target.index(-1)] = size // known
    c.check(math.prod(target) == size, f"cannot reshape {shape} ({size} elements) to {target}")
    return x if target == shape else c.op("reshape", [x], new_shape=target)


@OPS.op("reshapeStatic")
def convert_reshape_static(c, layer):
    return reshape_to(c, c.input(layer), layer.reshapeStatic.targetShape)


@OPS.op("reshapeLike")
def convert_reshape_like(c, layer):
    return reshape_to(c, c.input(layer), shape_of(c, c.input(layer, 1)))


@OPS.op("reshapeDynamic")
def convert_reshape_dynamic(c, layer):
    target = int_list(c, constant_input(c, layer, 1, "the target shape"), "target shape")
    return reshape_to(c, c.input(layer), target)


@OPS.op("rankPreservingReshape")
def convert_rank_preserving_reshape(c, layer):
    x = c.input(layer)
    target = list(layer.rankPreservingReshape.targetShape)
    c.check(len(target) == len(shape_of(c, x)),
            f"targetShape {target} must have the input's rank {len(shape_of(c, x))}")
    return reshape_to(c, x, target, copy_zero=True)


@OPS.op("flattenTo2D")
def convert_flatten_to_2d(c, layer):
    x = c.input(layer)
    shape = shape_of(c, x)
    axis = int(layer.flattenTo2D.axis)
    c.check(-len(shape) <= axis <= len(shape), f"axis {axis} is out of range for rank {len(shape)}")
    axis = axis + len(shape) if axis < 0 else axis
    return reshape_to(c, x, [math.prod(shape[:axis]), math.prod(shape[axis:])])


@OPS.op("squeeze")
def convert_squeeze(c, layer):
    p = layer.squeeze
    x = c.input(layer)
    shape = shape_of(c, x)
    if p.squeezeAll:
        axes = {i for i, d in enumerate(shape) if d == 1}
    else:
        c.check(len(p.axes) > 0, "axes is empty and squeezeAll is false")
        axes = {axis_of(c, int(a), len(shape)) for a in p.axes}
        bad = [a for a in sorted(axes) if shape[a] != 1]
        c.check(not bad, f"cannot squeeze axes {bad} of shape {shape}: their size is not 1")
    out = [d for i, d in enumerate(shape) if i not in axes] or [1]
    return reshape_to(c, x, out)


@OPS.op("expandDims")
def convert_expand_dims(c, layer):
    x = c.input(layer)
    shape = shape_of(c, x)
    rank = len(shape) + len(layer.expandDims.axes)
    c.check(len(layer.expandDims.axes) > 0, "axes is empty")
    axes = {axis_of(c, int(a), rank) for a in layer.expandDims.axes}
    c.check(len(axes) == len(layer.expandDims.axes), f"axes {list(layer.expandDims.axes)} repeat an axis")
    dims = iter(shape)
    return reshape_to(c, x, [1 if i in axes else next(dims) for i in range(rank)])


@OPS.op("transpose")
def convert_transpose(c, layer):
    x = c.input(layer)
    rank = len(shape_of(c, x))
    perm = [axis_of(c, int(a), rank, "transpose axis") for a in layer.transpose.axes]
    c.check(sorted(perm) == list(range(rank)),
            f"axes {list(layer.transpose.axes)} are not a permutation of rank {rank}")
    return c.op("transpose", [x], permutation=perm)


@OPS.op("concatND")
def convert_concat_nd(c, layer):
    """Concatenate along `axis`; with interleave, alternate the inputs' slices along `axis`
    (x1[0], x2[0], ..., x1[1], x2[1], ...: every input has the same shape)."""
    xs = c.inputs(layer)
    shape = shape_of(c, xs[0])
    axis = axis_of(c, int(layer.concatND.axis), len(shape))
    if len(xs) == 1:
        return xs[0]
    if not layer.concatND.interleave:
        return c.op("concat", [xs], axis=axis)
    c.check(all(shape_of(c, x) == shape for x in xs),
            f"interleave needs inputs of one shape, got {[shape_of(c, x) for x in xs]}")
    split = shape[:axis + 1] + [1] + shape[axis + 1:]
    y = c.op("concat", [[c.op("reshape", [x], new_shape=split) for x in xs]], axis=axis + 1)
    out = list(shape)
    out[axis] *= len(xs)
    return c.op("reshape", [y], new_shape=out)


@OPS.op("splitND")
def convert_split_nd(c, layer):
    p = layer.splitND
    x = c.input(layer)
    shape = shape_of(c, x)
    axis = axis_of(c, int(p.axis), len(shape))
    if len(p.splitSizes):
        sizes = [int(s) for s in p.splitSizes]
    else:
        n = int(p.numSplits) or len(layer.output)
        c.check(shape[axis] % n == 0, f"dimension {axis} of size {shape[axis]} does not split into {n} equal parts")
        sizes = [shape[axis] // n] * n
    c.check(len(sizes) == len(layer.output), f"{len(sizes)} splits but {len(layer.output)} outputs")
    c.check(sum(sizes) == shape[axis], f"split sizes {sizes} do not sum to dimension {axis} of size {shape[axis]}")
    if len(sizes) == 1:
        return [x]
    return list(c.op("split", [x], splits=sizes, axis=axis))


def _slice_axis(c, x, axis, indices):
    """Keep `indices` (a python range) of `axis`: a contiguous window or a constant gather."""
    shape = shape_of(c, x)
    if indices.step == 1 or len(indices) == 1:
        if len(indices) == shape[axis]:
            return x
        starts = [0] * len(shape)
        sizes = list(shape)
        starts[axis], sizes[axis] = indices[0], len(indices)
        return c.op("slice", [x], starts=starts, sizes=sizes)
    return c.op("gather", [x, c.const(np.asarray(list(indices), dtype=np.int32))], axis=axis)


def strided_slice(c, x, begin, end, strides, begin_masks, end_masks, squeeze_masks):
    """Python slicing per axis (masked begin/end run from the start/to the end in the stride's
    direction, out-of-range ids clamp); a squeezed axis keeps only begin[i] and is dropped."""
    shape = shape_of(c, x)
    rank = len(shape)
    for what, vals in (("beginIds", begin), ("endIds", end), ("strides", strides)):
        c.check(len(vals) == rank, f"{what} has {len(vals)} entries, the input has rank {rank}")
    pad = lambda m: list(m) + [False] * (rank - len(m))  # noqa: E731
    begin_masks, end_masks, squeeze_masks = pad(begin_masks), pad(end_masks), pad(squeeze_masks)
    out_shape = []
    for i in range(rank):
        if squeeze_masks[i]:
            b = int(begin[i])
            c.check(-shape[i] <= b < shape[i], f"beginIds[{i}] = {b} is out of range for dimension of size {shape[i]}")
            idx = range(b % shape[i], b % shape[i] + 1)
        else:
            s = int(strides[i])
            c.check(s != 0, f"strides[{i}] must not be 0")
            idx = range(shape[i])[slice(None if begin_masks[i] else int(begin[i]),
                                        None if end_masks[i] else int(end[i]), s)]
            c.check(len(idx) > 0, f"the slice of axis {i} is empty")
            out_shape.append(len(idx))
        x = _slice_axis(c, x, i, idx)
    return reshape_to(c, x, out_shape or [1])


@OPS.op("sliceStatic")
def convert_slice_static(c, layer):
    p = layer.sliceStatic
    return strided_slice(c, c.input(layer), p.beginIds, p.endIds, p.strides, p.beginMasks, p.endMasks,
                         p.squeezeMasks)


@OPS.op("sliceDynamic")
def convert_slice_dynamic(c, layer):
    """Inputs 2-7 (begin, end, strides, begin/end/squeeze masks) must be constants."""
    p = layer.sliceDynamic
    n = len(layer.input)
    c.check(n >= 2, "needs the beginIds input")
    names = ["beginIds", "endIds", "strides", "beginMasks", "endMasks", "squeezeMasks"]
    vals = [None, list(p.endIds), list(p.strides), list(p.beginMasks), list(p.endMasks), list(p.squeezeMasks)]
    for k in range(1, min(n, 7)):
        vals[k - 1] = int_list(c, constant_input(c, layer, k, names[k - 1]), names[k - 1])
    rank = len(shape_of(c, c.input(layer)))
    begin, end, strides, bm, em, sm = vals
    if not strides:
        strides = [1] * rank
    if not end:
        end, em = [0] * rank, [True] * rank
    return strided_slice(c, c.input(layer), begin, end, strides, [bool(v) for v in bm], [bool(v) for v in em],
                         [bool(v) for v in sm])


@OPS.op("sliceBySize")
def convert_slice_by_size(c, layer):
    """x[..., begin:begin + size, ...] along `axis`. The output shape is static (size), so a
    `begin` computed at run time is fine: a gather of begin + 0..size-1, begin clamped so that the
    window stays inside the axis (negative begin counts from the end)."""
    p = layer.sliceBySize
    x = c.input(layer)
    shape = shape_of(c, x)
    axis = axis_of(c, int(p.axis), len(shape))
    if constant_array(c.input(layer, 1)) is None:
        return _slice_by_size_at_run_time(c, layer, x, shape, axis, int(p.size))
    b = int_list(c, constant_input(c, layer, 1, "begin"), "begin")
    c.check(len(b) == 1, f"begin must hold one value, got {b}")
    begin = b[0] + shape[axis] if b[0] < 0 else b[0]
    size = int(p.size)
    c.check(size > 0 and 0 <= begin and begin + size <= shape[axis],
            f"window {b[0]}..{b[0] + size} is outside dimension {axis} of size {shape[axis]}")
    return _slice_axis(c, x, axis, range(begin, begin + size))


def _slice_by_size_at_run_time(c, layer, x, shape, axis, size):
    c.check(0 < size <= shape[axis], f"size {size} does not fit dimension {axis} of size {shape[axis]}")
    begin = c.input(layer, 1)
    c.check(c.spec(begin).size == 1, f"begin must hold one value, got shape {list(c.spec(begin).shape)}")
    begin = c.reshape(begin if c.spec(begin).dtype == "float32" else c.op("cast", [begin], to="float32"), [1])
    wrapped = c.op("add", [begin, c.const(np.float32([shape[axis]]))])
    begin = c.op("where", [c.op("lesser", [begin, c.const(np.float32([0]))]), wrapped, begin])
    begin = c.op("clamp", [begin], min_value=0.0, max_value=float(shape[axis] - size))
    start = c.op("cast", [begin], to="int32")
    return c.op("gather", [x, c.op("add", [start, c.const(np.arange(size, dtype=np.int32))])], axis=axis)


@OPS.op("constantPad")
def convert_constant_pad(c, layer):
    """Pad each axis i by padAmounts[2i] before and [2i+1] after; with padToGivenOutputSizeMode,
    a non-zero amount is the wanted output size, reached by padding on that side."""
    p = layer.constantPad
    x = c.input(layer)
    shape = shape_of(c, x)
    if len(layer.input) >= 2:
        amounts = int_list(c, constant_input(c, layer, 1, "padAmounts"), "padAmounts")
    else:
        amounts = [int(a) for a in p.padAmounts]
    c.check(len(amounts) == 2 * len(shape), f"padAmounts has {len(amounts)} entries, needs {2 * len(shape)}")
    c.check(all(a >= 0 for a in amounts), f"padAmounts {amounts} must be non-negative")
    before, after = amounts[0::2], amounts[1::2]
    if p.padToGivenOutputSizeMode:
        for i, d in enumerate(shape):
            c.check(before[i] == 0 or after[i] == 0,
                    f"padToGivenOutputSizeMode: axis {i} gives an output size on both sides")
            before[i], after[i] = max(0, before[i] - d), max(0, after[i] - d)
    if not any(before) and not any(after):
        return x
    return c.op("pad", [x], beginning_padding=before, ending_padding=after, mode="constant",
                value=float(np.float32(p.value)))
