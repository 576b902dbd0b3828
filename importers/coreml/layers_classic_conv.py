"""Classic Core ML layers: convolution / deconvolution, pooling, padding, crop."""
import numpy as np

from estuary.importers.coreml.layers_classic_common import as_nchw, border, params, restore, same_pads
from estuary.importers.coreml.registry import coreml_layer


def _pairs(values, default):
    v = [int(x) for x in values]
    return v if v else list(default)


@coreml_layer("convolution")
def convolution(c, layer):
    p = params(layer)
    x, lead = as_nchw(c, c.input(layer))
    _, cin, h, w = c.spec(x).shape
    groups = int(p.nGroups) or 1
    k = _pairs(p.kernelSize, (3, 3))
    s = _pairs(p.stride, (1, 1))
    d = _pairs(p.dilationFactor, (1, 1))
    c.check(len(k) == 2 and len(s) == 2 and len(d) == 2, "kernelSize, stride and dilationFactor need 2 values")
    c.check(min(k + s + d) >= 1, f"kernelSize {k}, stride {s} and dilationFactor {d} must be at least 1")
    keff = [(k[i] - 1) * d[i] + 1 for i in range(2)]
    cout, kc = int(p.outputChannels), int(p.kernelChannels)
    if p.isDeconvolution:
        c.check(len(layer.input) == 1, "deconvolution takes its weights from the layer, not a second input")
        c.check(kc == cin, f"kernelChannels {kc} differs from the input's {cin} channels")
        wts = c.const(c.weights(p.weights, [kc, cout // groups, k[0], k[1]], axis=1))
    elif len(layer.input) > 1:
        wv = c.input(layer, 1)
        ws = list(c.spec(wv).shape)
        c.check(int(np.prod(ws)) == cout * kc * k[0] * k[1], f"weight input of shape {ws} does not hold "
                f"[{cout}, {kc}, {k[0]}, {k[1]}]")
        wts = c.reshape(wv, [cout, kc, k[0], k[1]])
    else:
        wts = c.const(c.weights(p.weights, [cout, kc, k[0], k[1]]))
    if not p.isDeconvolution:
        c.check(kc * groups == cin, f"kernelChannels {kc} x nGroups {groups} differs from the input's {cin} channels")
    bias = c.const(c.weights(p.bias, [cout], "bias")) if p.hasBias else None
    kind = p.WhichOneof("ConvolutionPaddingType")
    if kind == "same":
        tl = p.same.asymmetryMode == 1
    else:
        pads = border(c, p.valid.paddingAmounts) if kind == "valid" else [0, 0, 0, 0]
    if not p.isDeconvolution:
        if kind == "same":
            pads = list(same_pads(h, keff[0], s[0], tl) + same_pads(w, keff[1], s[1], tl))
        y = c.op("conv2d", [x, wts, bias], padding=pads, strides=s, dilations=d, groups=groups)
        return restore(c, y, lead)
    # deconvolution: full output (H-1)*s + keff, cropped by the padding to the wanted size
    full = [(h - 1) * s[0] + keff[0], (w - 1) * s[1] + keff[1]]
    if len(p.outputShape):
        want = [int(v) for v in p.outputShape]
        c.check(len(want) == 2, f"outputShape needs 2 values (H, W), got {want}")
        totals = [full[i] - want[i] for i in range(2)]
        pads = [totals[0] // 2, totals[0] - totals[0] // 2, totals[1] // 2, totals[1] - totals[1] // 2]
    elif kind == "same":
        want = [h * s[0], w * s[1]]
        totals = [full[i] - want[i] for i in range(2)]
        split = [(t - t // 2, t // 2) if tl else (t // 2, t - t // 2) for t in totals]
        pads = [split[0][0], split[0][1], split[1][0], split[1][1]]
    else:
        want = [full[0] - pads[0] - pads[1], full[1] - pads[2] - pads[3]]
    out_pad = [0, 0]
    for i in range(2):  # an output larger than the full one: zeros at the end
        if pads[2 * i + 1] < 0:
            out_pad[i] = -pads[2 * i + 1]
            pads[2 * i + 1] = 0
        c.check(pads[2 * i] >= 0, f"outputShape {want} is larger than the deconvolution can produce")
    y = c.op("conv_transpose2d", [x, wts, bias], padding=pads, strides=s, dilations=d, groups=groups,
             output_padding=out_pad if any(out_pad) else None,
             output_sizes=want if any(out_pad) else None)
    return restore(c, y, lead)


_LOWEST = -3.4028234663852886e38


@coreml_layer("pooling")
def pooling(c, layer):
    p = params(layer)
    x, lead = as_nchw(c, c.input(layer))
    n, ch, h, w = c.spec(x).shape
    kind = {0: "MAX", 1: "AVERAGE", 2: "L2"}.get(p.type)
    c.check(kind is not None, f"unknown pooling type {p.type}")
    if p.globalPooling:
        red = {"MAX": "reduce_max", "AVERAGE": "reduce_mean", "L2": "reduce_l2"}[kind]
        return restore(c, c.op(red, [x], axes=[2, 3], keep_dimensions=True), lead)
    k = _pairs(p.kernelSize, (3, 3))
    s = _pairs(p.stride, (1, 1))
    c.check(len(k) == 2 and len(s) == 2 and min(k + s) >= 1,
            f"kernelSize {k} and stride {s} need 2 values, each at least 1")
    pk = p.WhichOneof("PoolingPaddingType")
    size = [h, w]
    if pk == "same":
        tl = p.same.asymmetryMode == 1
        pads = list(same_pads(h, k[0], s[0], tl) + same_pads(w, k[1], s[1], tl))
        out = [-(-size[i] // s[i]) for i in range(2)]
    elif pk == "includeLastPixel":
        pa = _pairs(p.includeLastPixel.paddingAmounts, (0, 0))
        out = []
        for i in range(2):
            o = -(-(size[i] + 2 * pa[i] - k[i]) // s[i]) + 1
            if (pa[0] > 0 or pa[1] > 0) and (o - 1) * s[i] >= size[i] + pa[i]:
                o -= 1
            out.append(o)
        pads = [pa[0], pa[0], pa[1], pa[1]]
    else:
        pads = border(c, p.valid.paddingAmounts) if pk == "valid" else [0, 0, 0, 0]
        out = [(size[i] + pads[2 * i] + pads[2 * i + 1] - k[i]) // s[i] + 1 for i in range(2)]
    c.check(all(o > 0 for o in out), f"the pooling window {k} does not fit the input {size} with padding {pads}")
    # extend the end padding so that every window lies inside the padded input (includeLastPixel)
    for i in range(2):
        extra = (out[i] - 1) * s[i] + k[i] - (size[i] + pads[2 * i] + pads[2 * i + 1])
        if extra > 0:
            pads[2 * i + 1] += extra
    begin, end = [0, 0, pads[0], pads[2]], [0, 0, pads[1], pads[3]]
    padded = any(pads)
    fill = _LOWEST if kind == "MAX" else 0.0
    xp = c.op("pad", [x], beginning_padding=begin, ending_padding=end, mode="constant", value=fill) if padded else x
    pooled = {"MAX": "max_pool2d", "AVERAGE": "average_pool2d", "L2": "l2_pool2d"}[kind]
    y = c.op(pooled, [xp], window_dimensions=k, strides=s)
    y = c.reshape(y, [n, ch, out[0], out[1]]) if list(c.spec(y).shape[2:]) == out else \
        c.op("slice", [y], starts=[0, 0, 0, 0], sizes=[n, ch, out[0], out[1]])
    if kind == "AVERAGE" and padded and p.avgPoolExcludePadding:
        mask = np.pad(np.ones(size), [(pads[0], pads[1]), (pads[2], pads[3])])
        count = np.zeros(out)
        for i in range(out[0]):
            for j in range(out[1]):
                count[i, j] = mask[i * s[0]:i * s[0] + k[0], j * s[1]:j * s[1] + k[1]].sum()
        c.check(count.min() > 0, "a pooling window holds only padding")
        y = c.op("mul", [y, c.const((k[0] * k[1] / count).astype(np.float32))])
    return restore(c, y, lead)


@coreml_layer("padding")
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


@coreml_layer("crop")
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
