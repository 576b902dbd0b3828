"""Core ML volumetric layers: convolution3d, pooling3d, globalPooling3d on [B, C, D, H, W].

Composed exactly from 2-D ops: the input is zero padded (or lowest-value padded for max pooling),
then for each kernel depth tap kd the depth slices od * stride + kd * dilation (all od at once, a
gather) are folded into the batch and handled by conv2d / pool2d; the taps are summed (or maxed).
Padding: CUSTOM (front/back/top/bottom/left/right), VALID (none) or SAME (output = ceil(in / stride),
the odd unit of padding at the back/bottom/right).
"""
import numpy as np

from estuary.importers.coreml.ops import OPS


_LOWEST = -3.4028234663852886e38


def _pads(c, p, size, kernel, stride):
    """[(begin, end)] for D, H, W."""
    if p.paddingType == 0:
        return [(p.customPaddingFront, p.customPaddingBack), (p.customPaddingTop, p.customPaddingBottom),
                (p.customPaddingLeft, p.customPaddingRight)]
    if p.paddingType == 1:
        return [(0, 0)] * 3
    out = []
    for n, k, s in zip(size, kernel, stride):
        total = max(0, (-(-n // s) - 1) * s + k - n)
        out.append((total // 2, total - total // 2))
    return out


def _prepare(c, layer, kernel, stride, dil, fill):
    """Padded input, output sizes and the per-tap depth-folded views builder."""
    x = c.input(layer)
    shape = list(c.spec(x).shape)
    c.check(len(shape) == 5, f"expects a rank-5 input [B, C, D, H, W], got {shape}")
    p = getattr(layer, layer.WhichOneof("layer"))
    c.check(min(kernel) >= 1 and min(stride) >= 1 and min(dil) >= 1, "kernel, stride and dilation must be >= 1")
    keff = [(k - 1) * d + 1 for k, d in zip(kernel, dil)]
    pads = _pads(c, p, shape[2:], keff, stride)
    c.check(all(a >= 0 and b >= 0 for a, b in pads), f"negative padding {pads}")
    if any(a or b for a, b in pads):
        x = c.op("pad", [x], beginning_padding=[0, 0] + [a for a, _ in pads],
                 ending_padding=[0, 0] + [b for _, b in pads], mode="constant", value=fill)
    padded = list(c.spec(x).shape)
    out = [(padded[2 + i] - keff[i]) // stride[i] + 1 for i in range(3)]
    c.check(min(out) >= 1, f"the kernel {kernel} does not fit the padded input {padded[2:]}")
    n, ch = shape[0], shape[1]

    def tap(kd):
        """[N * D_out, C, H_pad, W_pad] of depth slices od * s + kd * d."""
        idx = np.arange(out[0]) * stride[0] + kd * dil[0]
        v = c.op("gather", [x, c.const(idx.astype(np.int32))], axis=2)
        v = c.op("transpose", [v], permutation=[0, 2, 1, 3, 4])
        return c.reshape(v, [n * out[0], ch, padded[3], padded[4]])

    def unfold(y):
        """[N * D_out, C', H', W'] -> [N, C', D_out, H', W']"""
        s = list(c.spec(y).shape)
        y = c.reshape(y, [n, out[0]] + s[1:])
        return c.op("transpose", [y], permutation=[0, 2, 1, 3, 4])

    return tap, unfold, out, pads, shape


@OPS.op("convolution3d")
def convolution3d(c, layer):
    p = layer.convolution3d
    c.check(not getattr(p, "isDeconvolution", False), "3-D deconvolution (isDeconvolution, a coremltools "
            "extension absent from the specification) is not supported")
    k = [p.kernelDepth, p.kernelHeight, p.kernelWidth]
    s = [p.strideDepth or 1, p.strideHeight or 1, p.strideWidth or 1]
    d = [p.dilationDepth or 1, p.dilationHeight or 1, p.dilationWidth or 1]
    groups = p.nGroups or 1
    tap, unfold, out, _, shape = _prepare(c, layer, k, s, d, 0.0)
    cin, cout = int(p.inputChannels), int(p.outputChannels)
    c.check(shape[1] == cin, f"the input has {shape[1]} channels, inputChannels is {cin}")
    c.check(cin % groups == 0 and cout % groups == 0, f"nGroups {groups} must divide {cin} and {cout}")
    w = c.weights(p.weights, [cout, cin // groups] + k)
    acc = None
    for kd in range(k[0]):
        y = c.op("conv2d", [tap(kd), c.const(np.ascontiguousarray(w[:, :, kd]))], strides=s[1:], dilations=d[1:],
                 groups=groups)
        acc = y if acc is None else c.op("add", [acc, y])
    y = unfold(acc)
    if p.hasBias:
        bias = c.weights(p.bias, [cout], "bias")
        y = c.op("add", [y, c.const(bias.reshape(1, cout, 1, 1, 1))])
    return y


@OPS.op("pooling3d")
def pooling3d(c, layer):
    p = layer.pooling3d
    k = [p.kernelDepth, p.kernelHeight, p.kernelWidth]
    s = [p.strideDepth or 1, p.strideHeight or 1, p.strideWidth or 1]
    is_max = p.type == 0
    tap, unfold, out, pads, shape = _prepare(c, layer, k, s, [1, 1, 1], _LOWEST if is_max else 0.0)
    acc = None
    for kd in range(k[0]):
        y = c.op("max_pool2d" if is_max else "average_pool2d", [tap(kd)], window_dimensions=k[1:], strides=s[1:])
        acc = y if acc is None else c.op("max" if is_max else "add", [acc, y])
    y = unfold(acc)
    if is_max:
        return y
    if p.countExcludePadding and any(a or b for a, b in pads):
        mask = np.pad(np.ones(shape[2:]), pads)
        count = np.zeros(out)
        for i in range(out[0]):
            for j in range(out[1]):
                for l_ in range(out[2]):
                    count[i, j, l_] = mask[i * s[0]:i * s[0] + k[0], j * s[1]:j * s[1] + k[1],
                                           l_ * s[2]:l_ * s[2] + k[2]].sum()
        c.check(count.min() > 0, "a pooling window holds only padding")
        return c.op("mul", [y, c.const((k[1] * k[2] / count).astype(np.float32))])
    return c.op("div", [y, c.const(np.float32(k[0]))])


@OPS.op("globalPooling3d")
def global_pooling3d(c, layer):
    x = c.input(layer)
    rank = c.spec(x).rank
    c.check(rank == 5, f"expects a rank-5 input [B, C, D, H, W], got rank {rank}")
    kind = "reduce_max" if layer.globalPooling3d.type == 0 else "reduce_mean"
    return c.op(kind, [x], axes=[2, 3, 4], keep_dimensions=True)
