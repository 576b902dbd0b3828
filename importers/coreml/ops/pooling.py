"""Core ML pooling (classic, [.., C, H, W]): max, average, L2, global."""
import numpy as np

from estuary.base import dims
from estuary.importers.coreml.classic import as_nchw, border, restore, same_pads
from estuary.importers.coreml.converter import params
from estuary.importers.coreml.ops import OPS
from estuary.importers.coreml.ops.convolution import pairs


_LOWEST = -3.4028234663852886e38


@OPS.op("pooling")
def pooling(c, layer):
    p = params(layer)
    x, lead = as_nchw(c, c.input(layer))
    n, ch, h, w = c.spec(x).shape
    kind = {0: "MAX", 1: "AVERAGE", 2: "L2"}.get(p.type)
    c.check(kind is not None, f"unknown pooling type {p.type}")
    if p.globalPooling:
        red = {"MAX": "reduce_max", "AVERAGE": "reduce_mean", "L2": "reduce_l2"}[kind]
        return restore(c, c.op(red, [x], axes=[2, 3], keep_dimensions=True), lead)
    k = pairs(p.kernelSize, (3, 3))
    s = pairs(p.stride, (1, 1))
    c.check(len(k) == 2 and len(s) == 2 and min(k + s) >= 1,
            f"kernelSize {k} and stride {s} need 2 values, each at least 1")
    pk = p.WhichOneof("PoolingPaddingType")
    size = [h, w]
    if pk == "same":
        tl = p.same.asymmetryMode == 1
        pads = list(same_pads(h, k[0], s[0], tl) + same_pads(w, k[1], s[1], tl))
        out = [-(-size[i] // s[i]) for i in range(2)]
    elif pk == "includeLastPixel":
        pa = pairs(p.includeLastPixel.paddingAmounts, (0, 0))
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
    c.check(all(dims.upper(o) > 0 for o in out),
            f"the pooling window {k} does not fit the input {size} with padding {pads}")
    # extend the end padding so that every window lies inside the padded input (only
    # includeLastPixel's windows can run past it: valid and same windows never do)
    for i in range(2 if pk == "includeLastPixel" else 0):
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
