"""Classic Core ML layers moving data: reshape, flatten, permute, concat, split, slice,
sequenceRepeat, reorganizeData."""
import numpy as np

from estuary.importers.coreml.layers_classic_common import as_nchw, restore
from estuary.importers.coreml.registry import coreml_layer


def _perm(c, x, perm):
    return c.op("transpose", [x], permutation=list(perm))


def _channel_last(c, x):
    """[..., C, H, W] -> [..., H, W, C]"""
    r = c.spec(x).rank
    return _perm(c, x, list(range(r - 3)) + [r - 2, r - 1, r - 3])


@coreml_layer("reshape")
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
    c.check(int(np.prod(out)) == int(np.prod(shape)), f"cannot reshape {shape} to {out}")
    if p.mode == 0:
        return c.reshape(x, out)
    y = c.reshape(_channel_last(c, x), out[:-3] + [out[-2], out[-1], out[-3]])
    r = len(out)
    return _perm(c, y, list(range(r - 3)) + [r - 1, r - 3, r - 2])


@coreml_layer("flatten")
def flatten(c, layer):
    x = c.input(layer)
    shape = list(c.spec(x).shape)
    c.check(len(shape) >= 3, f"expects an input of rank >= 3, got {shape}")
    out = shape[:-3] + [int(np.prod(shape[-3:])), 1, 1]
    if layer.flatten.mode == 1:
        x = _channel_last(c, x)
    return c.reshape(x, out)


@coreml_layer("permute")
def permute(c, layer):
    x = c.input(layer)
    shape = list(c.spec(x).shape)
    c.check(len(shape) == 5, f"expects a rank-5 input [Seq, B, C, H, W], got {shape}")
    axes = [int(a) for a in layer.permute.axis] or [0, 1, 2, 3]
    c.check(sorted(axes) == [0, 1, 2, 3], f"axis must be a permutation of [0, 1, 2, 3], got {axes}")
    m = [0, 2, 3, 4]  # Seq, C, H, W -> rank-5 positions (batch stays)
    return _perm(c, x, [m[axes[0]], 1, m[axes[1]], m[axes[2]], m[axes[3]]])


@coreml_layer("concat")
def concat(c, layer):
    xs = c.inputs(layer)
    rank = c.spec(xs[0]).rank
    seq = layer.concat.sequenceConcat
    c.check(rank >= (5 if seq else 3), f"inputs of rank {rank} have no {'sequence' if seq else 'channel'} axis")
    return c.op("concat", [xs], axis=rank - (5 if seq else 3))


@coreml_layer("split")
def split(c, layer):
    x = c.input(layer)
    shape = list(c.spec(x).shape)
    c.check(len(shape) >= 3, f"expects an input of rank >= 3, got {shape}")
    n = int(layer.split.nOutputs) or len(layer.output)
    c.check(n == len(layer.output), f"nOutputs {n} differs from the {len(layer.output)} outputs")
    c.check(shape[-3] % n == 0, f"{shape[-3]} channels do not split into {n} equal parts")
    return c.op("split", [x], splits=[shape[-3] // n] * n, axis=len(shape) - 3)


@coreml_layer("slice")
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


@coreml_layer("sequenceRepeat")
def sequence_repeat(c, layer):
    x = c.input(layer)
    rank = c.spec(x).rank
    c.check(rank >= 5, "expects an input of rank >= 5 (repeats axis -5)")
    reps = [1] * rank
    reps[rank - 5] = int(layer.sequenceRepeat.nRepetitions) or 1
    return c.op("tile", [x], repetitions=reps)


@coreml_layer("reorganizeData")
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
