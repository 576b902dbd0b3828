"""Classic Core ML image layers: upsample (nearest / bilinear, align-corners modes, fractional
scales) and resizeBilinear (all SamplingMode methods).

Bilinear resampling is separable with grid points fixed at compile time, so it is composed exactly
from gathers of the two neighbouring rows/columns and constant weights:
y = x[i0] * (1 - f) + x[i1] * f with i0 = floor(p), i1 = min(i0 + 1, X - 1), f = p - i0.
"""
import math
from typing import Any

import numpy as np

from estuary.base import dims
from estuary.importers.coreml.classic import as_nchw, restore
from estuary.importers.coreml.ops import OPS


def grid(method, x_in, n_out):
    """Sampling positions (float64) of n_out points on an input axis of x_in pixels."""
    i = np.arange(n_out, dtype=np.float64)
    if method in ("STRICT_ALIGN_ENDPOINTS_MODE", "ALIGN_ENDPOINTS_MODE", "ALIGN_CORNERS_TRUE"):
        if n_out == 1:
            p = np.full(1, (x_in - 1) / 2.0 if method == "STRICT_ALIGN_ENDPOINTS_MODE" else 0.0)
        else:
            p = i * (x_in - 1) / (n_out - 1)
    elif method in ("UPSAMPLE_MODE", "DEFAULT"):
        p = i * x_in / n_out
    elif method in ("ROI_ALIGN_MODE", "ALIGN_CORNERS_FALSE"):
        p = (i + 0.5) * x_in / n_out - 0.5
    else:
        raise ValueError(method)
    return np.clip(p, 0, x_in - 1)


def _lerp_axis(c, x, axis, points):
    size = c.spec(x).shape[axis]
    i0 = np.floor(points).astype(np.int64)
    i1 = np.minimum(i0 + 1, size - 1)
    f = (points - i0).astype(np.float32)
    if np.all(f == 0):
        return c.op("gather", [x, c.const(i0.astype(np.int32))], axis=axis)
    shape = [1] * c.spec(x).rank
    shape[axis] = len(points)
    a = c.op("gather", [x, c.const(i0.astype(np.int32))], axis=axis)
    b = c.op("gather", [x, c.const(i1.astype(np.int32))], axis=axis)
    wa = c.const((1 - f).reshape(shape))
    wb = c.const(f.reshape(shape))
    return c.op("add", [c.op("mul", [a, wa]), c.op("mul", [b, wb])])


def bilinear(c, x, method, out_h, out_w):
    """Resize the last two axes of x to (out_h, out_w) with the given grid method."""
    rank = c.spec(x).rank
    h, w = c.spec(x).shape[-2:]
    y = _lerp_axis(c, x, rank - 2, grid(method, h, out_h))
    return _lerp_axis(c, y, rank - 1, grid(method, w, out_w))


_SAMPLING = {0: "STRICT_ALIGN_ENDPOINTS_MODE", 1: "ALIGN_ENDPOINTS_MODE", 2: "UPSAMPLE_MODE", 3: "ROI_ALIGN_MODE"}


def repeat_pixels(c: Any, x: Any, sh: int, sw: int) -> Any:
    """Nearest-neighbour upsampling by whole factors (each pixel repeated sh x sw times) as a
    broadcast, for any size of the last two axes (dynamic ones too)."""
    *lead, h, w = c.spec(x).shape
    y = c.reshape(x, lead + [h, 1, w, 1])
    y = c.op("expand", [y], new_shape=lead + [h, sh, w, sw])
    return c.reshape(y, lead + [h * sh, w * sw])


@OPS.op("upsample")
def upsample(c, layer):
    p = layer.upsample
    x, lead = as_nchw(c, c.input(layer))
    _, _, h, w = c.spec(x).shape
    frac = [float(v) for v in p.fractionalScalingFactor]
    ints = [int(v) for v in p.scalingFactor] or ([] if frac else [1, 1])
    mode = {0: "DEFAULT", 1: "ALIGN_CORNERS_TRUE", 2: "ALIGN_CORNERS_FALSE"}.get(p.linearUpsampleMode)
    c.check(mode is not None, f"unknown linearUpsampleMode {p.linearUpsampleMode}")
    if frac:
        c.check(len(frac) == 2 and p.mode == 1 and mode != "DEFAULT",
                "fractionalScalingFactor needs 2 values, BILINEAR mode and an ALIGN_CORNERS_* linearUpsampleMode")
        out = [int(math.floor(h * frac[0])), int(math.floor(w * frac[1]))]
    else:
        c.check(len(ints) == 2 and min(ints) >= 1, f"scalingFactor must hold 2 positive values, got {ints}")
        out = [h * ints[0], w * ints[1]]
    if p.mode == 0 and not dims.is_static(out):  # nearest neighbour on dynamic sizes: a broadcast
        y = repeat_pixels(c, x, ints[0], ints[1])
    elif p.mode == 0:  # nearest neighbour: every input pixel repeated scale times
        y = c.op("gather", [x, c.const((np.arange(out[0]) // ints[0]).astype(np.int32))], axis=2)
        y = c.op("gather", [y, c.const((np.arange(out[1]) // ints[1]).astype(np.int32))], axis=3)
    elif p.mode == 1:
        y = bilinear(c, x, mode, out[0], out[1])
    else:
        c.fail(f"unknown interpolation mode {p.mode}")
    return restore(c, y, lead)


@OPS.op("resizeBilinear")
def resize_bilinear(c, layer):
    p = layer.resizeBilinear
    x, lead = as_nchw(c, c.input(layer))
    size = [int(v) for v in p.targetSize]
    c.check(len(size) == 2 and min(size) >= 1, f"targetSize must hold 2 positive values, got {size}")
    method = _SAMPLING.get(p.mode.samplingMethod)
    c.check(method is not None, f"unknown sampling method {p.mode.samplingMethod}")
    return restore(c, bilinear(c, x, method, size[0], size[1]), lead)


_BOX = {0: "CORNERS_HEIGHT_FIRST", 1: "CORNERS_WIDTH_FIRST", 2: "CENTER_SIZE_HEIGHT_FIRST",
        3: "CENTER_SIZE_WIDTH_FIRST"}


def _box_axis(c, x, axis, lo, hi, n_out, method):
    """Bilinear sampling of n_out points on [lo, hi] (rank-0/1 runtime Values, pixel units) along `axis`
    of x; the points are clamped to [0, size - 1]."""
    size = c.spec(x).shape[axis]
    if n_out == 1:
        frac = np.asarray([0.5 if method == "STRICT_ALIGN_ENDPOINTS_MODE" else 0.0], np.float32)
    else:
        frac = (np.arange(n_out) / (n_out - 1)).astype(np.float32)
    pts = c.op("add", [lo, c.op("mul", [c.op("sub", [hi, lo]), c.const(frac)])])
    pts = c.op("clamp", [pts], min_value=0.0, max_value=float(size - 1))
    base = c.op("floor", [pts])
    f = c.op("sub", [pts, base])
    i0 = c.op("cast", [base], to="int32")
    i1 = c.op("cast", [c.op("clamp", [c.op("add", [base, c.const(np.float32(1))])], min_value=0.0,
                                      max_value=float(size - 1))], to="int32")
    shape = [1] * c.spec(x).rank
    shape[axis] = n_out
    f = c.reshape(f, shape)
    a = c.op("gather", [x, i0], axis=axis)
    b = c.op("gather", [x, i1], axis=axis)
    return c.op("add", [a, c.op("mul", [c.op("sub", [b, a]), f])])


@OPS.op("cropResize")
def crop_resize(c, layer):
    """Boxes are runtime values. Sampling: the ALIGN_ENDPOINTS methods place the target points
    evenly on [start, end] of the box (a single point: the centre for STRICT, the start otherwise).
    Normalized coordinates are multiplied by (size - 1); pixel coordinates by spatialScale."""
    p = layer.cropResize
    x, rois = c.input(layer, 0), c.input(layer, 1)
    xs, rs = list(c.spec(x).shape), list(c.spec(rois).shape)
    c.check(len(xs) == 5 and xs[0] == 1, f"expects a feature map [1, Batch, C, H, W], got {xs}")
    c.check(len(rs) == 5 and rs[1] == 1 and rs[2] in (4, 5) and rs[3:] == [1, 1],
            f"expects boxes [N, 1, 4 or 5, 1, 1], got {rs}")
    method = _SAMPLING.get(p.mode.samplingMethod)
    c.check(method in ("STRICT_ALIGN_ENDPOINTS_MODE", "ALIGN_ENDPOINTS_MODE"),
            f"sampling method {method} is not supported for crop-resize boxes (the specification defines it "
            f"only for whole axes); use STRICT_ALIGN_ENDPOINTS_MODE or ALIGN_ENDPOINTS_MODE")
    box_mode = _BOX.get(p.boxIndicesMode.boxMode)
    c.check(box_mode is not None, f"unknown box mode {p.boxIndicesMode.boxMode}")
    size = [int(v) for v in p.targetSize]
    c.check(len(size) == 2 and min(size) >= 1, f"targetSize must hold 2 positive values, got {size}")
    n, batch, ch, h, w = rs[0], xs[1], xs[2], xs[3], xs[4]
    table = c.reshape(rois, [n, rs[2]])
    fmap = c.reshape(x, [batch, ch, h, w])
    outs = []
    for i in range(n):
        row = c.op("slice", [table], starts=[i, 0], sizes=[1, rs[2]])
        vals = [c.reshape(c.op("slice", [row], starts=[0, j], sizes=[1, 1]), [1]) for j in range(rs[2])]
        coords = vals[-4:]
        if box_mode.endswith("WIDTH_FIRST"):
            coords = [coords[1], coords[0], coords[3], coords[2]]
        a0, a1, b0, b1 = coords  # y, x, then y2/x2 or h/w
        if box_mode.startswith("CENTER"):
            half_h = c.op("mul", [b0, c.const(np.float32(0.5))])
            half_w = c.op("mul", [b1, c.const(np.float32(0.5))])
            y1, x1 = c.op("sub", [a0, half_h]), c.op("sub", [a1, half_w])
            y2, x2 = c.op("add", [a0, half_h]), c.op("add", [a1, half_w])
        else:
            y1, x1, y2, x2 = a0, a1, b0, b1
        if p.normalizedCoordinates:
            sy, sx = c.const(np.float32(h - 1)), c.const(np.float32(w - 1))
        else:
            scale = p.spatialScale or 1.0
            sy = sx = c.const(np.float32(scale))
        y1, y2 = c.op("mul", [y1, sy]), c.op("mul", [y2, sy])
        x1, x2 = c.op("mul", [x1, sx]), c.op("mul", [x2, sx])
        src = fmap
        if rs[2] == 5:
            src = c.op("gather", [fmap, c.op("cast", [vals[0]], to="int32")], axis=0)
        y = _box_axis(c, src, 2, y1, y2, size[0], method)
        y = _box_axis(c, y, 3, x1, x2, size[1], method)
        outs.append(c.reshape(y, [1, c.spec(src).shape[0], ch, size[0], size[1]]))
    return outs[0] if n == 1 else c.op("concat", [outs], axis=0)
