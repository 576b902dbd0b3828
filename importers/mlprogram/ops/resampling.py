"""MIL image resizing on the last two axes: upsample_nearest_neighbor, resize_nearest_neighbor,
upsample_bilinear (align_corners, iOS16 half_pixel_centers), resize_bilinear (all five sampling
modes), crop.

Grid points follow coremltools' op documentation and are fixed at compile time, so bilinear
resizing is composed exactly from gathers of the two neighbouring rows/columns and constant
weights (importers/coreml/ops/resampling.py `_lerp_axis`); nearest neighbour takes
floor(i * in / out).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from estuary.base import dims
from estuary.importers.coreml.ops.resampling import _lerp_axis, repeat_pixels
from estuary.importers.mlprogram.ops import OPS
from estuary.importers.mlprogram.ops.shape import shape_of


def grid(mode: str, x_in: int, n_out: int) -> np.ndarray:
    """Sampling positions (float64) of n_out points on an axis of x_in pixels (MIL sampling modes)."""
    i = np.arange(n_out, dtype=np.float64)
    if mode in ("STRICT_ALIGN_CORNERS", "ALIGN_CORNERS"):
        if n_out == 1:
            p = np.full(1, (x_in - 1) / 2.0 if mode == "ALIGN_CORNERS" else 0.0)
        else:
            p = i * (x_in - 1) / (n_out - 1)
    elif mode == "DEFAULT":
        p = i * ((x_in - x_in / n_out) / (n_out - 1)) if n_out > 1 else np.zeros(1)
    elif mode == "OFFSET_CORNERS":
        delta = max(1, x_in - 1) / n_out
        p = 0.5 * delta + i * delta
    elif mode == "UNALIGN_CORNERS":
        p = (i + 0.5) * x_in / n_out - 0.5
    elif mode == "ASYMMETRIC":  # iOS16 upsample_bilinear without half-pixel centres
        p = i * x_in / n_out
    else:
        raise ValueError(f"unknown sampling mode {mode!r}")
    return np.clip(p, 0, x_in - 1)


def bilinear(c: Any, x: Any, mode: str, out_h: int, out_w: int) -> Any:
    shape = shape_of(c, x)
    c.check(len(shape) >= 3, f"x must have rank >= 3, got {shape}")
    c.check(out_h >= 1 and out_w >= 1, f"the output size {out_h} x {out_w} must be positive")
    y = _lerp_axis(c, x, len(shape) - 2, grid(mode, int(shape[-2]), out_h))
    return _lerp_axis(c, y, len(shape) - 1, grid(mode, int(shape[-1]), out_w))


def nearest(c: Any, x: Any, out_h: int, out_w: int) -> Any:
    shape = shape_of(c, x)
    c.check(len(shape) >= 3, f"x must have rank >= 3, got {shape}")
    c.check(out_h >= 1 and out_w >= 1, f"the output size {out_h} x {out_w} must be positive")
    for axis, n in ((len(shape) - 2, out_h), (len(shape) - 1, out_w)):
        size = int(shape[axis])
        idx = np.minimum(np.floor(np.arange(n) * size / n).astype(np.int64), size - 1)
        if n != size or np.any(idx != np.arange(n)):
            x = c.op("gather", [x, c.const(idx.astype(np.int32), "int32")], axis=axis)
    return x


def _scaled(c: Any, op: Any, x: Any) -> tuple[int, int]:
    h, w = shape_of(c, x)[-2:]
    sh, sw = _factors(c, op)
    return int(np.floor(int(h) * sh)), int(np.floor(int(w) * sw))


def _factors(c: Any, op: Any) -> tuple[float, float]:
    return float(c.scalar(op, "scale_factor_height", 1)), float(c.scalar(op, "scale_factor_width", 1))


@OPS.op("upsample_nearest_neighbor")
def convert_upsample_nearest(c: Any, op: Any) -> Any:
    x = c.x(op)
    if not dims.is_static(shape_of(c, x)[-2:]):
        sh, sw = _factors(c, op)
        c.check(sh.is_integer() and sw.is_integer() and sh >= 1 and sw >= 1,
                f"scale factors {sh} x {sw} on dynamic dimensions must be whole numbers")
        return repeat_pixels(c, x, int(sh), int(sw))
    return nearest(c, x, *_scaled(c, op, x))


@OPS.op("resize_nearest_neighbor")
def convert_resize_nearest(c: Any, op: Any) -> Any:
    return nearest(c, c.x(op), int(c.scalar(op, "target_size_height")), int(c.scalar(op, "target_size_width")))


@OPS.op("upsample_bilinear")
def convert_upsample_bilinear(c: Any, op: Any) -> Any:
    x = c.x(op)
    align = bool(c.scalar(op, "align_corners", True))
    half = bool(c.scalar(op, "half_pixel_centers", not align)) if c.opset >= 16 else not align
    c.check(not (align and half), "align_corners and half_pixel_centers cannot both be true")
    mode = "STRICT_ALIGN_CORNERS" if align else ("UNALIGN_CORNERS" if half else "ASYMMETRIC")
    return bilinear(c, x, mode, *_scaled(c, op, x))


@OPS.op("resize_bilinear")
def convert_resize_bilinear(c: Any, op: Any) -> Any:
    mode = str(c.val(op, "sampling_mode", "DEFAULT"))
    c.check(mode in ("STRICT_ALIGN_CORNERS", "ALIGN_CORNERS", "DEFAULT", "OFFSET_CORNERS", "UNALIGN_CORNERS"),
            f"unknown sampling_mode {mode!r}")
    x = c.x(op)
    h, w = shape_of(c, x)[-2:]
    return bilinear(c, x, mode, int(c.scalar(op, "target_size_height", h)), int(c.scalar(op, "target_size_width", w)))


@OPS.op("crop")
def convert_crop(c: Any, op: Any) -> Any:
    """Drop crop_height [top, bottom] and crop_width [left, right] from the last two axes."""
    x = c.x(op)
    shape = shape_of(c, x)
    c.check(len(shape) >= 3, f"x must have rank >= 3, got {shape}")
    ch, cw = c.ints(op, "crop_height", [0, 0]), c.ints(op, "crop_width", [0, 0])
    c.check(len(ch) == 2 and len(cw) == 2 and min(ch + cw) >= 0, "crop_height/crop_width need 2 non-negative values")
    h, w = shape[-2] - ch[0] - ch[1], shape[-1] - cw[0] - cw[1]
    c.check(dims.upper(h) > 0 and dims.upper(w) > 0, f"the crop leaves nothing of {shape[-2:]}")
    starts = [0] * (len(shape) - 2) + [ch[0], cw[0]]
    return c.op("slice", [x], starts=starts, sizes=shape[:-2] + [h, w])


@OPS.op("resize", since=17)
def convert_resize(c: Any, op: Any) -> Any:
    """iOS17: the last `resized_dims` (1 or 2) axes take their sizes from the tail of `shape`
    (0 keeps the input's size), linear or nearest-neighbour with resize_bilinear's sampling modes."""
    x = c.x(op)
    xs = shape_of(c, x)
    target = c.ints(op, "shape")
    n = int(c.scalar(op, "resized_dims"))
    c.check(1 <= n <= 2 and n <= len(target) <= len(xs), f"resized_dims {n} / shape {target} do not fit {xs}")
    sizes = [t if t != 0 else xs[len(xs) - len(target) + k] for k, t in enumerate(target)][-n:]
    h, w = ([xs[-2]] if n == 1 else []) + sizes
    mode = str(c.val(op, "interpolation_mode", "LINEAR"))
    c.check(mode in ("LINEAR", "NEAREST_NEIGHBOR"), f"unknown interpolation_mode {mode!r}")
    if mode == "NEAREST_NEIGHBOR":
        return nearest(c, x, h, w) if len(xs) >= 3 else c.fail("x must have rank >= 3")
    sampling = str(c.val(op, "sampling_mode", "DEFAULT"))
    c.check(sampling in ("STRICT_ALIGN_CORNERS", "ALIGN_CORNERS", "DEFAULT", "OFFSET_CORNERS", "UNALIGN_CORNERS"),
            f"unknown sampling_mode {sampling!r}")
    if n == 1:
        from estuary.importers.coreml.ops.resampling import _lerp_axis as lerp

        return lerp(c, x, len(xs) - 1, grid(sampling, int(xs[-1]), w))
    return bilinear(c, x, sampling, h, w)


def _pixel(c: Any, coord: Any, size: int, mode: str, align: bool) -> Any:
    """Coordinates in `mode` as pixel positions along an axis of `size` pixels."""
    def affine(scale: float, shift: float) -> Any:
        return c.op("add", [c.op("mul", [coord, f32(c, scale)]), f32(c, shift)])

    if mode == "unnormalized":
        return coord
    if mode == "normalized_minus_one_to_one":
        return affine((size - 1) / 2, (size - 1) / 2) if align else affine(size / 2, (size - 1) / 2)
    c.check(mode == "normalized_zero_to_one", f"unknown coordinates_mode {mode!r}")
    return affine(size - 1, 0.0) if align else affine(size, -0.5)


def f32(c: Any, v: float) -> Any:
    return c.const(np.asarray(v, dtype=np.float32))


def _wrap(c: Any, i: Any, size: int, mode: str) -> tuple[Any, Any]:
    """(index into the axis as float, 1.0/0.0 in-range mask) for integer-valued float positions i."""
    inside = c.op("cast", [c.op("logical_and", [c.op("greater_or_equal", [i, f32(c, 0.0)]),
                                               c.op("lesser_or_equal", [i, f32(c, size - 1)])])], to="float32")
    if mode in ("constant", "border"):
        return c.op("clamp", [i], min_value=0.0, max_value=float(size - 1)), inside
    if size == 1:
        return c.op("mul", [i, f32(c, 0.0)]), inside
    period = 2 * (size - 1) if mode == "reflection" else 2 * size
    m = c.op("mod", [i, f32(c, period)])
    if mode == "reflection":  # |1 2 3| -> 2 3 2 1 2 3 2 1
        far = c.op("sub", [f32(c, period), m])
    else:  # symmetric: |1 2 3| -> 3 2 1 1 2 3 3 2 1
        far = c.op("sub", [f32(c, period - 1), m])
    return c.op("where", [c.op("greater_or_equal", [m, f32(c, size)]), far, m]), inside


@OPS.op("resample")
def convert_resample(c: Any, op: Any) -> Any:
    return resample(c, op, c.x(op), c.x(op, "coordinates"))


@OPS.op("affine")
def convert_affine(c: Any, op: Any) -> Any:
    """resample at x' = a0 x + a1 y + a2, y' = b0 x + b1 y + b2 over the output grid (normalized
    [-1, 1] coordinates with aligned corners, the only mode MIL defines)."""
    x = c.x(op)
    b = shape_of(c, x)[0]
    m = c.x(op, "transform_matrix")
    d = shape_of(c, m)[0]
    c.check(shape_of(c, m) == [d, 6] and d in (1, b), f"transform_matrix must be [1 or {b}, 6], got {shape_of(c, m)}")
    ho, wo = int(c.scalar(op, "output_height")), int(c.scalar(op, "output_width"))
    c.check(ho >= 1 and wo >= 1, f"the output size {ho} x {wo} must be positive")
    ys, xs = np.meshgrid(np.linspace(-1, 1, ho) if ho > 1 else np.zeros(1),
                         np.linspace(-1, 1, wo) if wo > 1 else np.zeros(1), indexing="ij")
    base = np.stack([xs.reshape(-1), ys.reshape(-1), np.ones(ho * wo)], -1).astype(np.float32)  # [N, 3]
    mt = c.op("transpose", [c.reshape(m, [d, 2, 3])], permutation=[0, 2, 1])  # [D, 3, 2]
    coords = c.op("matmul", [c.const(base[None]), mt])  # [D, N, 2]
    if d != b:
        coords = c.op("expand", [coords], new_shape=[b, ho * wo, 2])
    return resample(c, op, x, c.reshape(coords, [b, ho, wo, 2]))


def resample(c: Any, op: Any, x: Any, coords: Any) -> Any:
    """Samples x [B, C, H, W] at run-time (x, y) coordinates [B, H2, W2, 2]: the corner indices and
    weights are computed in the graph and the pixels read with one gather_elements per corner."""
    b, ch, h, w = shape_of(c, x)
    cb, ho, wo, two = shape_of(c, coords)
    c.check(cb == b and two == 2, f"coordinates must be [{b}, H, W, 2], got {shape_of(c, coords)}")
    sampling = str(c.val(op, "sampling_mode", "bilinear")).lower()
    padding = str(c.val(op, "padding_mode", "constant")).lower()
    c.check(sampling in ("bilinear", "nearest"), f"unknown sampling_mode {sampling!r}")
    c.check(padding in ("constant", "border", "reflection", "symmetric"), f"unknown padding_mode {padding!r}")
    pad_value = float(c.scalar(op, "padding_value", 0.0))
    mode = str(c.val(op, "coordinates_mode", "normalized_minus_one_to_one")).lower()
    align = bool(c.scalar(op, "align_corners", op.type == "affine"))
    n = ho * wo
    cx, cy = (c.reshape(v, [b, 1, n]) for v in c.op("split", [coords], splits=[1, 1], axis=3))
    h, w = int(h), int(w)  # pixel arithmetic on the image's sizes: a dynamic one raises DimError
    px, py = _pixel(c, cx, w, mode, align), _pixel(c, cy, h, mode, align)
    flat = c.reshape(x, [b, ch, h * w])

    def sample(ix: Any, iy: Any) -> Any:
        jx, okx = _wrap(c, ix, w, padding)
        jy, oky = _wrap(c, iy, h, padding)
        idx = c.op("cast", [c.op("add", [c.op("mul", [jy, f32(c, w)]), jx])], to="int32")
        idx = c.op("expand", [idx], new_shape=[b, ch, n])
        v = c.op("gather_elements", [flat, idx], axis=2)
        if padding == "constant":
            ok = c.op("mul", [okx, oky])
            v = c.op("add", [c.op("mul", [v, ok]), c.op("mul", [c.op("sub", [f32(c, 1.0), ok]), f32(c, pad_value)])])
        return v

    if sampling == "nearest":
        y = sample(c.op("floor", [c.op("add", [px, f32(c, 0.5)])]), c.op("floor", [c.op("add", [py, f32(c, 0.5)])]))
    else:
        x0, y0 = c.op("floor", [px]), c.op("floor", [py])
        fx, fy = c.op("sub", [px, x0]), c.op("sub", [py, y0])
        x1, y1 = c.op("add", [x0, f32(c, 1.0)]), c.op("add", [y0, f32(c, 1.0)])
        gx, gy = c.op("sub", [f32(c, 1.0), fx]), c.op("sub", [f32(c, 1.0), fy])
        y = c.op("add", [c.op("add", [c.op("mul", [sample(x0, y0), c.op("mul", [gx, gy])]),
                                      c.op("mul", [sample(x1, y0), c.op("mul", [fx, gy])])]),
                         c.op("add", [c.op("mul", [sample(x0, y1), c.op("mul", [gx, fy])]),
                                      c.op("mul", [sample(x1, y1), c.op("mul", [fx, fy])])])])
    return c.reshape(y, [b, ch, ho, wo])


_BOX_SAMPLING = {"STRICT_ALIGN_CORNERS": "STRICT", "ALIGN_CORNERS": "ALIGN"}


def _box_points(c: Any, x: Any, axis: int, lo: Any, hi: Any, n: int, mode: str, pad: float | None) -> Any:
    """Bilinear samples of x at n points placed evenly on [lo, hi] (run-time pixel positions) along
    `axis` (one point: the centre for STRICT_ALIGN_CORNERS, the start for ALIGN_CORNERS). Points
    outside the image give `pad` (iOS16+), or are clamped to it (iOS15, as the NeuralNetwork layer)."""
    size = int(shape_of(c, x)[axis])
    frac = np.asarray([0.5 if mode == "STRICT" else 0.0] if n == 1 else np.arange(n) / (n - 1), np.float32)
    pts = c.op("add", [lo, c.op("mul", [c.op("sub", [hi, lo]), c.const(frac)])])
    clamped = c.op("clamp", [pts], min_value=0.0, max_value=float(size - 1))
    base = c.op("floor", [clamped])
    f = c.op("sub", [clamped, base])
    i0 = c.op("cast", [base], to="int32")
    i1 = c.op("cast", [c.op("clamp", [c.op("add", [base, f32(c, 1.0)])], min_value=0.0,
                                      max_value=float(size - 1))], to="int32")
    shape = [1] * len(shape_of(c, x))
    shape[axis] = n
    a, b = c.op("gather", [x, i0], axis=axis), c.op("gather", [x, i1], axis=axis)
    y = c.op("add", [a, c.op("mul", [c.op("sub", [b, a]), c.reshape(f, shape)])])
    if pad is None:
        return y
    inside = c.op("logical_and", [c.op("greater_or_equal", [pts, f32(c, 0.0)]),
                                  c.op("lesser_or_equal", [pts, f32(c, size - 1)])])
    return c.op("where", [c.reshape(inside, shape), y, f32(c, pad)])


@OPS.op("crop_resize")
def convert_crop_resize(c: Any, op: Any) -> Any:
    """Each box (run-time coordinates) resampled to target_height x target_width with the corner-
    aligned sampling modes (STRICT_ALIGN_CORNERS, ALIGN_CORNERS: the target points evenly on the
    box's [start, end]); other sampling modes are refused. iOS15/16 take rois [N, 1, 4|5, 1, 1]
    (4: every image of the batch is cropped; 5: a leading batch index, for a batch of one) and give
    [N, B, C, h, w]; iOS17 takes boxes [N, 4] and box_indices and gives [N, C, h, w]."""
    x = c.x(op)
    bsz, ch, h, w = shape_of(c, x)
    sampling = str(c.val(op, "sampling_mode", "DEFAULT"))
    c.check(sampling in _BOX_SAMPLING, f"sampling_mode {c.val(op, 'sampling_mode', 'DEFAULT')!r} is not supported for boxes "
                              f"(only STRICT_ALIGN_CORNERS and ALIGN_CORNERS place points inside a box unambiguously)")
    mode = _BOX_SAMPLING[sampling]
    th, tw = int(c.scalar(op, "target_height", 1)), int(c.scalar(op, "target_width", 1))
    c.check(th >= 1 and tw >= 1, f"the target size {th} x {tw} must be positive")
    box_mode = str(c.val(op, "box_coordinate_mode", "CORNERS_HEIGHT_FIRST"))
    c.check(box_mode in ("CORNERS_HEIGHT_FIRST", "CORNERS_WIDTH_FIRST", "CENTER_SIZE_HEIGHT_FIRST",
                         "CENTER_SIZE_WIDTH_FIRST"), f"unknown box_coordinate_mode {box_mode!r}")
    pad = float(c.scalar(op, "pad_value", 0.0)) if c.opset >= 16 else None
    if c.opset >= 17:
        table = c.x(op, "boxes")
        rows = shape_of(c, table)[0]
        c.check(shape_of(c, table) == [rows, 4], f"boxes must be [N, 4], got {shape_of(c, table)}")
        n = int(rows)  # the boxes are cropped one by one: a fixed count (a dynamic one raises DimError)
        idx = c.x(op, "box_indices") if c.has(op, "box_indices") else c.const(np.arange(n, dtype=np.int32), "int32")
        width = 4
    else:
        roi = c.x(op, "roi")
        rs = shape_of(c, roi)
        c.check(len(rs) == 5 and rs[1] == 1 and rs[2] in (4, 5) and rs[3:] == [1, 1],
                f"roi must be [N, 1, 4 or 5, 1, 1], got {rs}")
        width = int(rs[2])  # 4 or 5 (checked above)
        c.check(width == 4 or bsz == 1, "a box batch index with a batch of more than one image is ambiguous "
                                        "(coremltools declares the result [N, B, C, h, w] all the same)")
        n = int(rs[0])  # the boxes are cropped one by one: a fixed count (a dynamic one raises DimError)
        table = c.reshape(roi, [n, width])
        idx = None
    outs = []
    for i in range(n):
        vals = [c.reshape(c.op("slice", [table], starts=[i, j], sizes=[1, 1]), [1]) for j in range(width)]
        if c.opset >= 17:
            src = c.op("gather", [x, c.reshape(c.op("slice", [c.reshape(idx, [n])], starts=[i], sizes=[1]), [1])],
                       axis=0)
        elif width == 5:
            src = c.op("gather", [x, c.op("cast", [vals[0]], to="int32")], axis=0)
        else:
            src = x
        a0, a1, b0, b1 = vals[-4:]
        if box_mode.endswith("WIDTH_FIRST"):
            a0, a1, b0, b1 = a1, a0, b1, b0
        if box_mode.startswith("CENTER"):
            hh, hw = c.op("mul", [b0, f32(c, 0.5)]), c.op("mul", [b1, f32(c, 0.5)])
            y1, x1, y2, x2 = c.op("sub", [a0, hh]), c.op("sub", [a1, hw]), c.op("add", [a0, hh]), c.op("add", [a1, hw])
        else:
            y1, x1, y2, x2 = a0, a1, b0, b1
        if bool(c.scalar(op, "normalized_coordinates", False)):
            sy, sx = f32(c, int(h) - 1), f32(c, int(w) - 1)
        else:
            sy = sx = f32(c, float(c.scalar(op, "spatial_scale", 1.0)))
        y1, y2, x1, x2 = (c.op("mul", [v, s]) for v, s in ((y1, sy), (y2, sy), (x1, sx), (x2, sx)))
        y = _box_points(c, src, 2, y1, y2, th, mode, pad)
        y = _box_points(c, y, 3, x1, x2, tw, mode, pad)
        outs.append(c.reshape(y, [1] + shape_of(c, y)))
    out = outs[0] if n == 1 else c.op("concat", [outs], axis=0)
    return c.reshape(out, [n, ch, th, tw]) if c.opset >= 17 else out
