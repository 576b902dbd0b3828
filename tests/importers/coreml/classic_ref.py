"""Float64 numpy implementations of classic Core ML layer formulas (independent test oracles)."""
import numpy as np


def conv2d(x, w, b=None, stride=(1, 1), dil=(1, 1), pads=(0, 0, 0, 0), groups=1):
    """x [N,C,H,W], w [O,C/groups,kh,kw], pads (top, bottom, left, right)."""
    x = np.pad(x.astype(np.float64), [(0, 0), (0, 0), (pads[0], pads[1]), (pads[2], pads[3])])
    n, cin, h, wd = x.shape
    o, kc, kh, kw = w.shape
    oh = (h - (kh - 1) * dil[0] - 1) // stride[0] + 1
    ow = (wd - (kw - 1) * dil[1] - 1) // stride[1] + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for g in range(groups):
        xs = x[:, g * kc:(g + 1) * kc]
        ws = w[g * og:(g + 1) * og].astype(np.float64)
        for a in range(kh):
            for bb in range(kw):
                patch = xs[:, :, a * dil[0]:a * dil[0] + (oh - 1) * stride[0] + 1:stride[0],
                           bb * dil[1]:bb * dil[1] + (ow - 1) * stride[1] + 1:stride[1]]
                out[:, g * og:(g + 1) * og] += np.einsum("nkhw,ok->nohw", patch, ws[:, :, a, bb])
    if b is not None:
        out += np.asarray(b, np.float64).reshape(1, -1, 1, 1)
    return out


def deconv2d(x, w, b=None, stride=(1, 1), dil=(1, 1), groups=1):
    """Full transposed convolution (no cropping): x [N,C,H,W], w [C, O/groups, kh, kw]."""
    n, cin, h, wd = x.shape
    _, og, kh, kw = w.shape
    oh = (h - 1) * stride[0] + (kh - 1) * dil[0] + 1
    ow = (wd - 1) * stride[1] + (kw - 1) * dil[1] + 1
    out = np.zeros((n, og * groups, oh, ow))
    cg = cin // groups
    for ci in range(cin):
        g = ci // cg
        for i in range(h):
            for j in range(wd):
                for a in range(kh):
                    for bb in range(kw):
                        out[:, g * og:(g + 1) * og, i * stride[0] + a * dil[0], j * stride[1] + bb * dil[1]] += \
                            x[:, ci, i, j, None] * w[ci, :, a, bb]
    if b is not None:
        out += np.asarray(b, np.float64).reshape(1, -1, 1, 1)
    return out


def pool2d(x, kind, k, s, pads, out, exclude_padding=False):
    """Core ML pooling: windows at i*s - pad_top of size k; padding ignored for MAX, counted as zeros
    for AVERAGE unless exclude_padding (then only real elements are averaged); L2 = sqrt(sum x^2)."""
    n, c, h, w = x.shape
    y = np.zeros((n, c, out[0], out[1]))
    for i in range(out[0]):
        for j in range(out[1]):
            r0, c0 = i * s[0] - pads[0], j * s[1] - pads[2]
            rs, cs = max(r0, 0), max(c0, 0)
            re, ce = min(r0 + k[0], h), min(c0 + k[1], w)
            win = x[:, :, rs:re, cs:ce].astype(np.float64)
            if kind == "MAX":
                y[:, :, i, j] = win.max(axis=(2, 3))
            elif kind == "L2":
                y[:, :, i, j] = np.sqrt((win ** 2).sum(axis=(2, 3)))
            else:
                cnt = (re - rs) * (ce - cs) if exclude_padding else k[0] * k[1]
                y[:, :, i, j] = win.sum(axis=(2, 3)) / cnt
    return y
