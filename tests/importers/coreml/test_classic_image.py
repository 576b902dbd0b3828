"""Classic Core ML upsample / resizeBilinear vs a float64 numpy bilinear interpolation on the grid
formulas of coremltools' documentation (builder.add_upsample) and the SamplingMode methods."""
import math

import numpy as np
import pytest

pytest.importorskip("coremltools")
from coremltools.models import datatypes  # noqa: E402
from coremltools.models.neural_network import NeuralNetworkBuilder  # noqa: E402

from tests.importers.coreml.util import run, save  # noqa: E402
from helpers import assert_exact  # noqa: E402


def points(kind, x_in, x_out):
    out = []
    for i in range(x_out):
        if kind == "DEFAULT":
            g = i * ((x_in - x_in / x_out) / (x_out - 1)) if x_out > 1 else 0.0
        elif kind in ("ALIGN_CORNERS_TRUE", "ALIGN_ENDPOINTS_MODE"):
            g = i * (x_in - 1) / (x_out - 1) if x_out > 1 else 0.0
        elif kind == "STRICT_ALIGN_ENDPOINTS_MODE":
            g = i * (x_in - 1) / (x_out - 1) if x_out > 1 else (x_in - 1) / 2
        elif kind == "UPSAMPLE_MODE":
            g = i * x_in / x_out
        else:  # ALIGN_CORNERS_FALSE, ROI_ALIGN_MODE
            s = x_in / x_out
            g = i * s + 0.5 * s - 0.5
        out.append(min(x_in - 1, max(0.0, g)))
    return out


def interpolate(x, kind, oh, ow):
    c, h, w = x.shape
    y = np.zeros((c, oh, ow))
    for a, py in enumerate(points(kind, h, oh)):
        for b, px in enumerate(points(kind, w, ow)):
            y0, x0 = int(math.floor(py)), int(math.floor(px))
            y1, x1 = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
            fy, fx = py - y0, px - x0
            y[:, a, b] = ((1 - fy) * (1 - fx) * x[:, y0, x0] + (1 - fy) * fx * x[:, y0, x1]
                          + fy * (1 - fx) * x[:, y1, x0] + fy * fx * x[:, y1, x1])
    return y


def close(got, want):
    """float32 weights and products of O(1) values: a few float32 ULP of the operands' scale."""
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=4e-7 * np.abs(want).max())


def test_upsample_and_resize(tmp_path, rng):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    x64 = x.astype(np.float64)
    ups = {  # name: (sh, sw, mode, linear mode)
        "nn": (2, 3, "NN", "DEFAULT"), "bl_default": (2, 2, "BILINEAR", "DEFAULT"),
        "bl_true": (3, 2, "BILINEAR", "ALIGN_CORNERS_TRUE"), "bl_false": (2, 3, "BILINEAR", "ALIGN_CORNERS_FALSE"),
        "frac_true": (1.5, 2.5, "BILINEAR", "ALIGN_CORNERS_TRUE"),
        "frac_false": (2.5, 1.75, "BILINEAR", "ALIGN_CORNERS_FALSE"),
    }
    resizes = {"STRICT_ALIGN_ENDPOINTS_MODE": (5, 1), "ALIGN_ENDPOINTS_MODE": (1, 6), "UPSAMPLE_MODE": (5, 7),
               "ROI_ALIGN_MODE": (2, 9)}
    b = NeuralNetworkBuilder([("x", datatypes.Array(*x.shape))], [(n, None) for n in list(ups) + list(resizes)])
    for name, (sh, sw, mode, lm) in ups.items():
        b.add_upsample(name, sh, sw, "x", name, mode=mode, linear_upsample_mode=lm)
    for mode, (oh, ow) in resizes.items():
        b.add_resize_bilinear(mode, "x", mode, oh, ow, mode=mode)
    got = run(save(b, tmp_path), {"x": x})
    assert_exact(got["nn"], np.repeat(np.repeat(x, 2, axis=1), 3, axis=2))
    for name, (sh, sw, mode, lm) in list(ups.items())[1:]:
        oh, ow = int(math.floor(3 * sh)), int(math.floor(4 * sw))
        assert got[name].shape == (2, oh, ow), name
        close(got[name], interpolate(x64, lm, oh, ow))
    for mode, (oh, ow) in resizes.items():
        assert got[mode].shape == (2, oh, ow), mode
        close(got[mode], interpolate(x64, mode, oh, ow))


def sample_box(img, y1, x1, y2, x2, oh, ow, strict):
    """Float64 bilinear samples of img [C, H, W] at evenly spaced points of [y1, y2] x [x1, x2]."""
    def pts(a, b, n, size):
        p = [a + (b - a) * (0.5 if strict else 0.0)] if n == 1 else [a + (b - a) * i / (n - 1) for i in range(n)]
        return [min(size - 1, max(0.0, v)) for v in p]

    c, h, w = img.shape
    out = np.zeros((c, oh, ow))
    for i, py in enumerate(pts(y1, y2, oh, h)):
        for j, px in enumerate(pts(x1, x2, ow, w)):
            y0, x0 = int(math.floor(py)), int(math.floor(px))
            ya, xa = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
            fy, fx = py - y0, px - x0
            out[:, i, j] = ((1 - fy) * (1 - fx) * img[:, y0, x0] + (1 - fy) * fx * img[:, y0, xa]
                            + fy * (1 - fx) * img[:, ya, x0] + fy * fx * img[:, ya, xa])
    return out


def test_crop_resize(tmp_path, rng):
    x = rng.standard_normal((1, 2, 3, 6, 7)).astype(np.float32)
    corners = np.float32([[0.5, 1.0, 4.0, 5.5], [2.0, 0.0, 5.0, 6.0]]).reshape(2, 1, 4, 1, 1)
    centre = np.float32([[1, 0.5, 0.5, 0.6, 0.4], [0, 0.3, 0.6, 0.4, 0.8]]).reshape(2, 1, 5, 1, 1)  # id, xc, yc, w, h
    b = NeuralNetworkBuilder([("x", datatypes.Array(*x.shape)), ("corners", datatypes.Array(*corners.shape)),
                              ("centre", datatypes.Array(*centre.shape))], [("a", None), ("b", None)])
    b.add_crop_resize("a", ["x", "corners"], "a", 3, 4, mode="STRICT_ALIGN_ENDPOINTS_MODE")
    b.add_crop_resize("b", ["x", "centre"], "b", 1, 3, mode="STRICT_ALIGN_ENDPOINTS_MODE", normalized_roi=True,
                      box_indices_mode="CENTER_SIZE_WIDTH_FIRST")
    got = run(save(b, tmp_path), {"x": x, "corners": corners, "centre": centre})
    x64 = x.astype(np.float64)[0]
    want_a = np.stack([np.stack([sample_box(x64[bi], *corners[n, 0, :, 0, 0].astype(np.float64), 3, 4, True)
                                 for bi in range(2)]) for n in range(2)])
    want_b = []
    for n in range(2):
        bid, xc, yc, bw, bh = centre[n, 0, :, 0, 0].astype(np.float64)
        y1, y2, x1, x2 = (yc - bh / 2) * 5, (yc + bh / 2) * 5, (xc - bw / 2) * 6, (xc + bw / 2) * 6
        want_b.append(sample_box(x64[int(bid)], y1, x1, y2, x2, 1, 3, True)[None])
    for name, want in (("a", want_a), ("b", np.stack(want_b))):
        assert got[name].size == want.size, name
        np.testing.assert_allclose(got[name].reshape(want.shape), want, rtol=1e-5, atol=1e-5, err_msg=name)
