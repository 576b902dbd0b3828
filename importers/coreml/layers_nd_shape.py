"""Core ML ND layers: ranges, fills, broadcasts, shapes, reshapes, slices, concat/split, transpose,
constant padding, loadConstantND, embeddingND.

Shapes are static, so getShape, fill* and range* become constants. "Dynamic" layers (rangeDynamic,
sliceDynamic, reshapeDynamic, fillDynamic, broadcastToDynamic, constantPad with a second input)
are supported when their shape/index inputs are known at compile time (loadConstantND, getShape,
or nn ops over those, evaluated with the ops' numpy references); a runtime value is a clear error. Rank-0 results become shape (1,) (Core ML has no scalars).
"""
import math

import numpy as np
from iree.compiler import ir

from estuary.dialects import core, graph
from estuary.importers.coreml.layers_nd_math import axis_of
from estuary.importers.coreml.registry import coreml_layer


def shape_of(c, v):
    return list(c.spec(v).shape)


_FOLD_LIMIT = 1 << 16  # elements: shape arithmetic is small


def constant_array(v, depth=32):
    """The numpy value of `v` when it is known at compile time: an nn.constant, or an nn op (with a
    numpy reference) whose operands all are (e.g. getShape -> sliceStatic -> concatND); else None."""
    owner = v.owner
    if not isinstance(owner, ir.OpView) or not owner.operation.name.startswith("nn.") or depth == 0:
        return None
    op = owner.operation
    if op.name == "nn.constant":
        return graph.constant_value(op.attributes["value"])
    opdef = core.get(op.name[3:])
    if opdef is None or opdef.reference is None or graph.spec_of(v).size > _FOLD_LIMIT:
        return None
    args = []
    for g in graph.operand_groups(opdef, op):
        vals = None if g is None else [constant_array(x, depth - 1) for x in (g if isinstance(g, list) else [g])]
        if vals is not None and any(a is None for a in vals):
            return None
        args.append(vals if isinstance(g, list) else vals and vals[0])
    try:
        result = opdef.reference(*args, **graph.op_attrs(opdef, op))
    except Exception:  # a reference that cannot evaluate this case: not a constant for us
        return None
    results = list(result) if isinstance(result, (list, tuple)) else [result]
    index = list(op.results).index(v) if len(results) > 1 else 0
    return np.asarray(results[index]).reshape(graph.spec_of(v).shape)


def constant_input(c, layer, k, what):
    """The numpy value of input k, which must be known at compile time."""
    value = constant_array(c.input(layer, k))
    if value is None:
        c.fail(f"{what} (input {k}, '{layer.input[k]}') must be a compile-time constant: "
               f"data-dependent shapes are not supported")
    return np.asarray(value)


def _int_list(c, array, what):
    flat = np.asarray(array, dtype=np.float64).reshape(-1)
    c.check(np.all(flat == np.round(flat)), f"{what} {flat.tolist()} must hold integers")
    return [int(v) for v in flat]


def _fill_value(c, value, shape, dtype="float32"):
    shape = [int(d) for d in shape]
    c.check(len(shape) > 0 and all(d > 0 for d in shape), f"target shape {shape} must be non-empty and positive")
    return c.const(np.full(shape, value, dtype=np.dtype(dtype)))


# ------------------------------------------------------------------ constants: range, fill, shape

def _range(c, start, end, step):
    c.check(step != 0, "stepSizeValue must not be 0")
    count = math.ceil((end - start) / step)
    c.check(count > 0, f"range from {start} to {end} by {step} is empty")
    return c.const((np.float64(start) + np.arange(count) * np.float64(step)).astype(np.float32))


@coreml_layer("rangeStatic")
def convert_range_static(c, layer):
    p = layer.rangeStatic
    return _range(c, float(np.float32(p.startValue)), float(np.float32(p.endValue)),
                  float(np.float32(p.stepSizeValue)))


@coreml_layer("rangeDynamic")
def convert_range_dynamic(c, layer):
    """end from input 0; start and step from inputs 1 and 2 when present, else the parameters."""
    p = layer.rangeDynamic
    values = [float(np.float32(p.startValue)), float(np.float32(p.stepSizeValue))]
    names = ["endValue", "startValue", "stepSizeValue"]
    got = []
    for k in range(min(len(layer.input), 3)):
        a = constant_input(c, layer, k, names[k])
        c.check(a.size == 1 and a.ndim <= 1, f"{names[k]} must be a scalar or of shape (1,), got {list(a.shape)}")
        got.append(float(a.reshape(-1)[0]))
    c.check(len(got) >= 1, "needs the endValue input")
    end = got[0]
    start = got[1] if len(got) > 1 else values[0]
    step = got[2] if len(got) > 2 else values[1]
    return _range(c, start, end, step)


@coreml_layer("getShape")
def convert_get_shape(c, layer):
    return c.const(np.asarray(shape_of(c, c.input(layer)), dtype=np.float32))


@coreml_layer("fillLike")
def convert_fill_like(c, layer):
    return _fill_value(c, layer.fillLike.value, shape_of(c, c.input(layer)))


@coreml_layer("fillStatic")
def convert_fill_static(c, layer):
    return _fill_value(c, layer.fillStatic.value, layer.fillStatic.targetShape)


@coreml_layer("fillDynamic")
def convert_fill_dynamic(c, layer):
    shape = _int_list(c, constant_input(c, layer, 0, "the target shape"), "target shape")
    return _fill_value(c, layer.fillDynamic.value, shape)


@coreml_layer("loadConstantND")
def convert_load_constant_nd(c, layer):
    shape = tuple(int(d) for d in layer.loadConstantND.shape)
    c.check(len(shape) > 0 and all(d > 0 for d in shape), f"shape {list(shape)} must be non-empty and positive")
    return c.const(c.weights(layer.loadConstantND.data, shape, what="data"))


# ------------------------------------------------------------------ broadcast and reshape

def _broadcast(c, x, target):
    target = [int(d) for d in target]
    c.check(len(target) > 0 and all(d > 0 for d in target), f"target shape {target} must be positive")
    shape = shape_of(c, x)
    c.check(len(shape) <= len(target), f"cannot broadcast shape {shape} to the lower rank of {target}")
    if shape == target:
        return x
    return c.op("expand", [x], new_shape=target)


@coreml_layer("broadcastToLike")
def convert_broadcast_to_like(c, layer):
    return _broadcast(c, c.input(layer), shape_of(c, c.input(layer, 1)))


@coreml_layer("broadcastToStatic")
def convert_broadcast_to_static(c, layer):
    return _broadcast(c, c.input(layer), layer.broadcastToStatic.targetShape)


@coreml_layer("broadcastToDynamic")
def convert_broadcast_to_dynamic(c, layer):
    target = _int_list(c, constant_input(c, layer, 1, "the target shape"), "target shape")
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


@coreml_layer("reshapeStatic")
def convert_reshape_static(c, layer):
    return reshape_to(c, c.input(layer), layer.reshapeStatic.targetShape)


@coreml_layer("reshapeLike")
def convert_reshape_like(c, layer):
    return reshape_to(c, c.input(layer), shape_of(c, c.input(layer, 1)))


@coreml_layer("reshapeDynamic")
def convert_reshape_dynamic(c, layer):
    target = _int_list(c, constant_input(c, layer, 1, "the target shape"), "target shape")
    return reshape_to(c, c.input(layer), target)


@coreml_layer("rankPreservingReshape")
def convert_rank_preserving_reshape(c, layer):
    x = c.input(layer)
    target = list(layer.rankPreservingReshape.targetShape)
    c.check(len(target) == len(shape_of(c, x)),
            f"targetShape {target} must have the input's rank {len(shape_of(c, x))}")
    return reshape_to(c, x, target, copy_zero=True)


@coreml_layer("flattenTo2D")
def convert_flatten_to_2d(c, layer):
    x = c.input(layer)
    shape = shape_of(c, x)
    axis = int(layer.flattenTo2D.axis)
    c.check(-len(shape) <= axis <= len(shape), f"axis {axis} is out of range for rank {len(shape)}")
    axis = axis + len(shape) if axis < 0 else axis
    return reshape_to(c, x, [math.prod(shape[:axis]), math.prod(shape[axis:])])


@coreml_layer("squeeze")
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


@coreml_layer("expandDims")
def convert_expand_dims(c, layer):
    x = c.input(layer)
    shape = shape_of(c, x)
    rank = len(shape) + len(layer.expandDims.axes)
    c.check(len(layer.expandDims.axes) > 0, "axes is empty")
    axes = {axis_of(c, int(a), rank) for a in layer.expandDims.axes}
    c.check(len(axes) == len(layer.expandDims.axes), f"axes {list(layer.expandDims.axes)} repeat an axis")
    dims = iter(shape)
    return reshape_to(c, x, [1 if i in axes else next(dims) for i in range(rank)])


# ------------------------------------------------------------------ transpose, concat, split

@coreml_layer("transpose")
def convert_transpose(c, layer):
    x = c.input(layer)
    rank = len(shape_of(c, x))
    perm = [axis_of(c, int(a), rank, "transpose axis") for a in layer.transpose.axes]
    c.check(sorted(perm) == list(range(rank)),
            f"axes {list(layer.transpose.axes)} are not a permutation of rank {rank}")
    return c.op("transpose", [x], permutation=perm)


@coreml_layer("concatND")
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


@coreml_layer("splitND")
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


# ------------------------------------------------------------------ slices

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


@coreml_layer("sliceStatic")
def convert_slice_static(c, layer):
    p = layer.sliceStatic
    return strided_slice(c, c.input(layer), p.beginIds, p.endIds, p.strides, p.beginMasks, p.endMasks,
                         p.squeezeMasks)


@coreml_layer("sliceDynamic")
def convert_slice_dynamic(c, layer):
    """Inputs 2-7 (begin, end, strides, begin/end/squeeze masks) must be constants."""
    p = layer.sliceDynamic
    n = len(layer.input)
    c.check(n >= 2, "needs the beginIds input")
    names = ["beginIds", "endIds", "strides", "beginMasks", "endMasks", "squeezeMasks"]
    vals = [None, list(p.endIds), list(p.strides), list(p.beginMasks), list(p.endMasks), list(p.squeezeMasks)]
    for k in range(1, min(n, 7)):
        vals[k - 1] = _int_list(c, constant_input(c, layer, k, names[k - 1]), names[k - 1])
    rank = len(shape_of(c, c.input(layer)))
    begin, end, strides, bm, em, sm = vals
    if not strides:
        strides = [1] * rank
    if not end:
        end, em = [0] * rank, [True] * rank
    return strided_slice(c, c.input(layer), begin, end, strides, [bool(v) for v in bm], [bool(v) for v in em],
                         [bool(v) for v in sm])


@coreml_layer("sliceBySize")
def convert_slice_by_size(c, layer):
    """x[..., begin:begin + size, ...] along `axis`; begin (input 1) must be a constant."""
    p = layer.sliceBySize
    x = c.input(layer)
    shape = shape_of(c, x)
    axis = axis_of(c, int(p.axis), len(shape))
    b = _int_list(c, constant_input(c, layer, 1, "begin"), "begin")
    c.check(len(b) == 1, f"begin must hold one value, got {b}")
    begin = b[0] + shape[axis] if b[0] < 0 else b[0]
    size = int(p.size)
    c.check(size > 0 and 0 <= begin and begin + size <= shape[axis],
            f"window {b[0]}..{b[0] + size} is outside dimension {axis} of size {shape[axis]}")
    return _slice_axis(c, x, axis, range(begin, begin + size))


# ------------------------------------------------------------------ constant padding, embeddingND

@coreml_layer("constantPad")
def convert_constant_pad(c, layer):
    """Pad each axis i by padAmounts[2i] before and [2i+1] after; with padToGivenOutputSizeMode,
    a non-zero amount is the wanted output size, reached by padding on that side."""
    p = layer.constantPad
    x = c.input(layer)
    shape = shape_of(c, x)
    if len(layer.input) >= 2:
        amounts = _int_list(c, constant_input(c, layer, 1, "padAmounts"), "padAmounts")
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


@coreml_layer("embeddingND")
def convert_embedding_nd(c, layer):
    """Rows of the [embeddingSize, vocabSize] weights picked by the indices in the last (size-1)
    dimension of the input, plus the optional bias. Out-of-range indices are clamped."""
    p = layer.embeddingND
    x = c.input(layer)
    shape = shape_of(c, x)
    vocab, size = int(p.vocabSize), int(p.embeddingSize)
    c.check(vocab > 0 and size > 0, f"vocabSize {vocab} and embeddingSize {size} must be positive")
    c.check(len(shape) >= 2 and shape[-1] == 1, f"input shape {shape} must have rank >= 2 and last dimension 1")
    table = np.ascontiguousarray(c.weights(p.weights, (size, vocab)).T)
    idx = c.op("reshape", [x], new_shape=shape[:-1])
    if c.spec(idx).dtype != "int32":
        idx = c.op("cast", [idx], to="int32")
    y = c.op("gather", [c.const(table), idx], axis=0)
    if p.hasBias:
        y = c.op("add", [y, c.const(c.weights(p.bias, (size,), what="bias"))])
    return y
