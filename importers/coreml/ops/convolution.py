"""Core ML convolution / deconvolution (classic, [.., C, H, W])."""
import numpy as np

from estuary.importers.coreml.classic import as_nchw, border, restore, same_pads
from estuary.importers.coreml.converter import params
from estuary.importers.coreml.ops import OPS


def pairs(values, default):
    v = [int(x) for x in values]
    return v if v else list(default)


@OPS.op("convolution")
def convolution(c, layer):
    p = params(layer)
    x, lead = as_nchw(c, c.input(layer))
    _, cin, h, w = c.spec(x).shape
    groups = int(p.nGroups) or 1
    k = pairs(p.kernelSize, (3, 3))
    s = pairs(p.stride, (1, 1))
    d = pairs(p.dilationFactor, (1, 1))
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
