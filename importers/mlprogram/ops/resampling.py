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

from estuary.importers.coreml.ops.resampling import _lerp_axis
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
    y = _lerp_axis(c, x, len(shape) - 2, grid(mode, shape[-2], out_h))
    return _lerp_axis(c, y, len(shape) - 1, grid(mode, shape[-1], out_w))


def nearest(c: Any, x: Any, out_h: int, out_w: int) -> Any:
    shape = shape_of(c, x)
    c.check(len(shape) >= 3, f"x must have rank >= 3, got {shape}")
    c.check(out_h >= 1 and out_w >= 1, f"the output size {out_h} x {out_w} must be positive")
    for axis, n in ((len(shape) - 2, out_h), (len(shape) - 1, out_w)):
        size = shape[axis]
        idx = np.minimum(np.floor(np.arange(n) * size / n).astype(np.int64), size - 1)
        if n != size or np.any(idx != np.arange(n)):
            x = c.op("gather", [x, c.const(idx.astype(np.int32), "int32")], axis=axis)
    return x


def _scaled(c: Any, op: Any, x: Any) -> tuple[int, int]:
    h, w = shape_of(c, x)[-2:]
    sh, sw = float(c.scalar(op, "scale_factor_height", 1)), float(c.scalar(op, "scale_factor_width", 1))
    return int(np.floor(h * sh)), int(np.floor(w * sw))


@OPS.op("upsample_nearest_neighbor")
def convert_upsample_nearest(c: Any, op: Any) -> Any:
    x = c.x(op)
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
    c.check(h > 0 and w > 0, f"the crop leaves nothing of {shape[-2:]}")
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

        return lerp(c, x, len(xs) - 1, grid(sampling, xs[-1], w))
    return bilinear(c, x, sampling, h, w)
