"""`cpu-tiles`: the tile rules; small-image convolutions (3x3 stride 1 and 2, 1x1, a width IREE
keeps) and a batch-1 LSTM agree with onnxruntime with the retiling on and off."""
import os
import sys

import numpy as np
import pytest

import estuary
from estuary import cpu_tiles

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import models  # noqa: E402
import onnx_to_webnn  # noqa: E402
from helpers import onnx_model_case  # noqa: E402

IREE_7x7 = ([0, 1, 7, 64, 0, 0, 0], [1, 1, 7, 16, 0, 0, 0], [0, 0, 0, 0, 1, 1, 8])


def test_rule_widens_small_image_tiles():
    assert cpu_tiles.conv_tiles([1, 7, 7, 512], *IREE_7x7) == (
        [0, 1, 7, 64, 0, 0, 0], [1, 1, 7, 64, 0, 0, 0], [0, 0, 0, 0, 1, 1, 4])
    d, v, r = [0, 2, 14, 64, 0, 0, 0], [1, 1, 7, 16, 0, 0, 0], [0, 0, 0, 0, 1, 1, 8]
    assert cpu_tiles.conv_tiles([1, 14, 14, 256], d, v, r)[1] == [1, 1, 7, 64, 0, 0, 0]


@pytest.mark.parametrize("shape, tiles", [
    ([1, 28, 28, 128], IREE_7x7),                                    # wide images keep IREE's tiles
    ([1, 7, 7, 96], IREE_7x7),                                       # channels not a multiple of 64
    ([1, 7, 7, 512], (IREE_7x7[0], [1, 1, 7, 8, 0, 0, 0], IREE_7x7[2])),  # 8 lanes: not AVX-512
    ([1, 8, 8, 512], (IREE_7x7[0], [1, 1, 8, 16, 0, 0, 0], IREE_7x7[2])),  # 8x64 would spill
    ([1, 7, 7, 512], ([0, 1, 7, 64, 0, 0], [1, 1, 7, 16, 0, 0], [0, 0, 0, 0, 1, 3])),  # depthwise
])
def test_rule_keeps_iree_tiles(shape, tiles):
    assert cpu_tiles.conv_tiles(shape, *tiles) is None


def test_matvec_rule_vectorizes_the_reduction():
    assert cpu_tiles.matvec_tiles(256, [32, 0], [4, 0], [0, 16]) == ([32, 0], [1, 0], [0, 256])
    assert cpu_tiles.matvec_tiles(1024, [1, 32, 0], [1, 4, 0], [0, 0, 16]) == ([1, 32, 0], [1, 1, 0], [0, 0, 256])
    assert cpu_tiles.matvec_tiles(40, [8, 0], [4, 0], [0, 16])[2] == [0, 40]
    assert cpu_tiles.matvec_tiles(256, [32, 0, 0], [4, 0, 0], [0, 16, 16]) is None  # two reductions


def _conv_net(hw, c, f, k, stride):
    net, rng = models.Net(11), np.random.default_rng(111)
    x = rng.standard_normal((1, c, hw, hw)).astype(np.float32)
    y = net.node("Relu", [net.conv("x", c, f, k, hw // stride, stride=stride, bias=True)])
    net.nodes[-1].output[0] = "y"
    return net.model({"x": x}, ["y"], {"x": x})


def _has_avx512():
    try:
        with open("/proc/cpuinfo") as f:
            return " avx512f" in f.read()
    except OSError:
        return False


@pytest.mark.parametrize("hw, c, f, k, stride, retuned", [
    (7, 64, 64, 3, 1, 1),
    (14, 32, 128, 3, 2, 1),   # 7x7 output from a stride-2 window
    (14, 64, 128, 3, 1, 1),
    (7, 64, 64, 1, 1, 0),     # a 1x1 convolution is a matmul for IREE
    (28, 16, 64, 3, 1, 0),    # 28 wide: IREE's tiles stay
])
def test_convolution_matches_onnxruntime(tmp_path, hw, c, f, k, stride, retuned):
    import onnxruntime as ort

    model, feeds, _ = _conv_net(hw, c, f, k, stride)
    path = onnx_to_webnn.convert(model, str(tmp_path / "conv.json"))
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(["y"], feeds)[0]
    on = estuary.compile(path)
    off = estuary.compile(path, disable_passes=["cpu-tiles"])
    assert on.stats["cpu_tiles"] == (retuned if _has_avx512() else 0)
    assert "cpu_tiles" not in off.stats
    for art in (on, off):
        got = estuary.load(art).run(feeds)["y"]
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


@pytest.fixture(scope="module")
def small_conv(tmp_path_factory):
    model, feeds, _ = _conv_net(7, 64, 64, 3, 1)
    return onnx_to_webnn.convert(model, str(tmp_path_factory.mktemp("tiles") / "conv.json")), feeds


def test_passes_off_environment_keeps_iree_tiles(small_conv, monkeypatch):
    monkeypatch.setenv("ESTUARY_OPTIMIZE", "0")
    assert "cpu_tiles" not in estuary.compile(small_conv[0]).stats


def test_iree_without_phase_control_compiles_in_one_go(small_conv, monkeypatch):
    path, feeds = small_conv
    monkeypatch.setattr(cpu_tiles, "_phase_setters", lambda: None)
    art = estuary.compile(path)
    assert "cpu_tiles" not in art.stats
    np.testing.assert_allclose(estuary.load(art).run(feeds)["y"],
                               estuary.load(estuary.compile(path, optimize=False)).run(feeds)["y"], rtol=1e-5, atol=1e-5)


def test_vulkan_compile_is_not_retiled(small_conv):
    assert "cpu_tiles" not in estuary.compile(small_conv[0], target="vulkan-spirv").stats


@pytest.mark.parametrize("form", ["webnn", "coreml", "nnef"])
@pytest.mark.parametrize("hidden", [16, 40])
def test_lstm_matches_onnxruntime(tmp_path, hidden, form):
    """The LSTM benchmark's three forms (one nn.lstm; per-gate gemms; per-step matmuls) all take
    the vector form of their one-row products."""
    model, feeds, _ = models.lstm(steps=5, inputs=12, hidden=hidden, classes=3)
    path, feeds, ref = onnx_model_case(model, feeds, tmp_path, form)
    on = estuary.compile(path)
    off = estuary.compile(path, disable_passes=["cpu-tiles"])
    # the recurrent product (IREE shares one executable among identical steps) and the classifier
    assert on.stats["cpu_tiles"] >= (2 if _has_avx512() else 0)
    for art in (on, off):
        np.testing.assert_allclose(estuary.load(art).run(feeds)["y"], ref, rtol=1e-5, atol=1e-5)
