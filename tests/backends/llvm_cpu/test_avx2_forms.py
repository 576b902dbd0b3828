"""The AVX2 lowering forms (compiled for x86-64-v3, which any AVX2 host runs), against
onnxruntime: narrow convolutions as im2col + matmul (backends/llvm_cpu/lowering/im2col.py) and
narrow 1x1 convolutions as a plain matmul (backends/llvm_cpu/lowering/pointwise.py)."""
import os
import sys

import numpy as np
import pytest

import estuary
from estuary.backends.llvm_cpu import host as host_cpu

from helpers import ROOT  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import models  # noqa: E402
import onnx_to_webnn  # noqa: E402

pytestmark = pytest.mark.skipif(not host_cpu.measured("host"), reason="needs an x86-64 host with AVX2")


def _run(tmp_path, build, shape, seed):
    import onnxruntime as ort

    net = models.Net(seed)
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    y = build(net)
    net.nodes[-1].output[0] = "y"
    model, feeds, _ = net.model({"x": x}, ["y"], {"x": x})
    path = onnx_to_webnn.convert(model, str(tmp_path / "m.json"))
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(["y"], feeds)[0]
    for cpu in ("x86-64-v3", "host"):
        got = estuary.load(estuary.compile(path, cpu=cpu)).run(feeds)["y"]
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("hw, c, f, k, stride, dilation, pads", [
    (7, 64, 64, 3, 1, 1, [1, 1, 1, 1]),      # ResNet-18's deepest 3x3 convolutions
    (14, 32, 64, 3, 2, 1, [1, 1, 1, 1]),     # a stride-2 one down to 7x7
    (7, 16, 24, 3, 1, 2, [2, 2, 2, 2]),      # dilated
    (6, 8, 16, 3, 1, 1, [0, 2, 1, 0]),       # asymmetric padding, end rows partly unused
    (9, 3, 8, 5, 2, 1, [1, 0, 2, 1]),        # 5x5 over 3 channels, stride 2
    (4, 16, 8, 3, 1, 1, [0, 0, 0, 0]),       # no padding: 2x2 output
])
def test_narrow_convolution(tmp_path, hw, c, f, k, stride, dilation, pads):
    def build(net):
        w = net.weight((f, c, k, k))
        b = net.const(net.rng.normal(0, 0.05, f).astype(np.float32), "b")
        return net.node("Conv", ["x", w, b], kernel_shape=[k, k], strides=[stride, stride],
                        dilations=[dilation, dilation], pads=pads)
    _run(tmp_path, build, (1, c, hw, hw), 21)


@pytest.mark.parametrize("hw, pool, batch", [(7, False, 1), (7, True, 1), (5, False, 1), (7, False, 3),
                                             (16, True, 2)])
def test_narrow_pointwise_convolution(tmp_path, hw, pool, batch):
    """Also batches: one image `batch` times as high (pointwise.conv1x1), as the plain matmul at
    width 7 on AVX2 and as the retiled product at width 16 and on the host."""
    def build(net):
        y = net.node("Relu", [net.conv("x", 32, 64, 1, hw, pad=0)])
        return net.node("GlobalAveragePool", [y]) if pool else net.node("Relu", [net.conv(y, 64, 64, 3, hw, groups=64)])
    _run(tmp_path, build, (batch, 32, hw, hw), 22)


def test_forms_follow_the_optimization_switch(tmp_path, monkeypatch):
    """The AVX2 lowering forms are optimizations: off with the passes or with cpu-tiles (the plain
    TOSA forms). Spies on the lanes the convolution rule hands the im2col form."""
    from estuary.backends.llvm_cpu.lowering import im2col

    seen = []
    real = im2col.weights

    def spy(x, w, strides, dilations, lanes):
        seen.append(lanes)
        return real(x, w, strides, dilations, lanes)

    def build(net):
        return net.conv("x", 8, 8, 3, 5)
    monkeypatch.setattr(im2col, "weights", spy)
    _run(tmp_path, build, (1, 8, 5, 5), 23)
    assert 8 in seen
    seen.clear()
    net = models.Net(23)
    net.node("Relu", [build(net)])
    net.nodes[-1].output[0] = "y"
    x = np.zeros((1, 8, 5, 5), np.float32)
    model, _, _ = net.model({"x": x}, ["y"], {"x": x})
    off = onnx_to_webnn.convert(model, str(tmp_path / "off.json"))
    estuary.compile(off, cpu="x86-64-v3", optimize=False)
    assert seen and set(seen) == {None}
    seen.clear()  # and with cpu-tiles off: the forms are made for its tiles
    estuary.compile(off, cpu="x86-64-v3", disable_passes=["cpu-tiles"])
    assert seen and set(seen) == {None}
