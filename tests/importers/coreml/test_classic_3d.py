"""Core ML convolution3d / pooling3d / globalPooling3d vs float64 numpy loops over the spec's
definitions (custom / valid / same padding)."""
import itertools

import numpy as np
import pytest

pytest.importorskip("coremltools")
from coremltools.models import datatypes  # noqa: E402
from coremltools.models.neural_network import NeuralNetworkBuilder  # noqa: E402

from tests.importers.coreml.util import run, save  # noqa: E402
from helpers import assert_exact  # noqa: E402


def same(size, k, s):
    tot = max(0, (-(-size // s) - 1) * s + k - size)
    return tot // 2, tot - tot // 2


def windows(x, k, s, d, pads, fill):
    """Yield (output index, window [N, C, kd, kh, kw]) over a padded x [N, C, D, H, W]."""
    xp = np.pad(x, [(0, 0), (0, 0)] + list(pads), constant_values=fill)
    keff = [(k[i] - 1) * d[i] + 1 for i in range(3)]
    out = [(xp.shape[2 + i] - keff[i]) // s[i] + 1 for i in range(3)]
    for o in itertools.product(*[range(n) for n in out]):
        sl = tuple(slice(o[i] * s[i], o[i] * s[i] + keff[i], d[i]) for i in range(3))
        yield o, xp[(slice(None), slice(None)) + sl], out


def conv3d(x, w, b, k, s, d, pads, groups):
    res = None
    og, kc = w.shape[0] // groups, w.shape[1]
    for o, win, out in windows(x, k, s, d, pads, 0.0):
        if res is None:
            res = np.zeros((x.shape[0], w.shape[0]) + tuple(out))
        for g in range(groups):
            res[(slice(None), slice(g * og, (g + 1) * og)) + o] = np.einsum(
                "nkabc,okabc->no", win[:, g * kc:(g + 1) * kc], w[g * og:(g + 1) * og])
    return res + b.reshape(1, -1, 1, 1, 1)


def pool3d(x, kind, k, s, pads, exclude):
    res = None
    mask = np.ones(x.shape)
    ones = {o: win for o, win, _ in windows(mask, k, s, (1, 1, 1), pads, 0.0)}
    for o, win, out in windows(x, k, s, (1, 1, 1), pads, -np.inf if kind == "MAX" else 0.0):
        if res is None:
            res = np.zeros(x.shape[:2] + tuple(out))
        if kind == "MAX":
            res[(slice(None), slice(None)) + o] = win.max(axis=(2, 3, 4))
        else:
            cnt = ones[o][0, 0].sum() if exclude else np.prod(k)
            res[(slice(None), slice(None)) + o] = win.sum(axis=(2, 3, 4)) / cnt
    return res


def test_volumetric_layers(tmp_path, rng):
    x = rng.standard_normal((1, 4, 5, 6, 7)).astype(np.float32)
    x64 = x.astype(np.float64)
    b = NeuralNetworkBuilder([("x", datatypes.Array(*x.shape))], [(n, None) for n in
                             ("c_custom", "c_same", "c_valid", "p_max", "p_avg", "p_avg_ex", "g_max", "g_avg")],
                             disable_rank5_shape_mapping=True)
    expect = {}
    convs = {"c_custom": (3, 2, (2, 3, 2), (1, 2, 1), (1, 1, 2), "custom", ((1, 0), (0, 2), (1, 1))),
             "c_same": (2, 1, (3, 3, 3), (2, 2, 2), (1, 1, 1), "same", None),
             "c_valid": (4, 4, (2, 2, 3), (1, 1, 2), (2, 1, 1), "valid", ((0, 0),) * 3)}
    for name, (o, g, k, s, d, mode, pads) in convs.items():
        w = rng.standard_normal((o * 2, 4 // g) + k).astype(np.float32)
        bias = rng.standard_normal(o * 2).astype(np.float32)
        pp = pads or ((0, 0),) * 3
        b.add_convolution3d(name, 4, o * 2, k[0], k[1], k[2], w, bias, True, groups=g, stride_depth=s[0],
                            stride_height=s[1], stride_width=s[2], dilation_depth=d[0], dilation_height=d[1],
                            dilation_width=d[2], padding_mode=mode, padding_front=pp[0][0], padding_back=pp[0][1],
                            padding_top=pp[1][0], padding_bottom=pp[1][1], padding_left=pp[2][0],
                            padding_right=pp[2][1], input_name="x", output_name=name)
        if mode == "same":
            pads = [same(n, k[i], s[i]) for i, n in enumerate(x.shape[2:])]
        expect[name] = conv3d(x64, w.astype(np.float64), bias.astype(np.float64), k, s, d, pads, g)
    pools = {"p_max": ("MAX", (2, 3, 2), (2, 1, 2), "same", None, False),
             "p_avg": ("AVERAGE", (3, 2, 2), (1, 2, 2), "custom", ((1, 1), (1, 0), (0, 1)), False),
             "p_avg_ex": ("AVERAGE", (3, 2, 2), (1, 2, 2), "custom", ((1, 1), (1, 0), (0, 1)), True)}
    for name, (kind, k, s, mode, pads, ex) in pools.items():
        pp = pads or ((0, 0),) * 3
        b.add_pooling3d(name, "x", name, kind, k[0], k[1], k[2], s[0], s[1], s[2], padding_mode=mode,
                        custom_padding_front=pp[0][0], custom_padding_back=pp[0][1], custom_padding_top=pp[1][0],
                        custom_padding_bottom=pp[1][1], custom_padding_left=pp[2][0], custom_padding_right=pp[2][1],
                        average_pooling_count_excludes_padding=ex)
        if mode == "same":
            pads = [same(n, k[i], s[i]) for i, n in enumerate(x.shape[2:])]
        expect[name] = pool3d(x64, kind, k, s, pads, ex)
    b.add_global_pooling3d("g_max", "x", "g_max", "MAX")
    b.add_global_pooling3d("g_avg", "x", "g_avg", "AVERAGE")
    expect["g_max"] = x64.max(axis=(2, 3, 4), keepdims=True)
    expect["g_avg"] = x64.mean(axis=(2, 3, 4), keepdims=True)
    got = run(save(b, tmp_path), {"x": x})
    for name, e in expect.items():
        assert got[name].shape == e.shape, name
        if name in ("p_max", "g_max"):
            assert_exact(got[name], e.astype(np.float32))
        else:
            np.testing.assert_allclose(got[name], e, rtol=1e-5, atol=1e-5, err_msg=name)
