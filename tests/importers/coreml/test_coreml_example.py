"""The bundled Core ML example (examples/resnet_tiny.mlmodel) through the CLI: compile, run, the
label; oracle: a float64 numpy re-implementation of the network with the script's weights."""
import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("coremltools")

from helpers import ROOT  # noqa: E402 - the repository
sys.path.insert(0, os.path.join(ROOT, "examples"))
import make_coreml_example as ex  # noqa: E402

from tests.importers.coreml.classic_ref import conv2d  # noqa: E402
from helpers import assert_accumulated  # noqa: E402

BIN = os.path.dirname(sys.executable)


def _same(x, w, b, stride):
    h, wd = x.shape[2:]
    pads = []
    for size in (h, wd):
        out = -(-size // stride)
        tot = max(0, (out - 1) * stride + 3 - size)
        pads += [tot // 2, tot - tot // 2]
    return conv2d(x, w, b, (stride, stride), (1, 1), pads)


def reference(image):
    """Float64 forward pass of the example network on a [3, H, W] RGB image (0..255)."""
    w = {k: v.astype(np.float64) for k, v in ex.weights().items()}

    def bn(x, name):
        shape = (1, -1, 1, 1)
        return (w[name + "_gamma"].reshape(shape) * (x - w[name + "_mean"].reshape(shape))
                / np.sqrt(w[name + "_var"].reshape(shape) + 1e-5) + w[name + "_beta"].reshape(shape))

    relu = lambda v: np.maximum(v, 0)  # noqa: E731
    x = image[None].astype(np.float64) * np.float64(np.float32(1 / 255.0)) - 0.5
    x0 = relu(bn(_same(x, w["stem_w"], w["stem_b"], 1), "stem_bn"))
    r = relu(bn(_same(x0, w["res1_w"], w["res1_b"], 1), "res1_bn"))
    x1 = relu(bn(_same(r, w["res2_w"], w["res2_b"], 1), "res2_bn") + x0)
    x2 = relu(_same(x1, w["down_w"], w["down_b"], 2))
    logits = w["fc_w"] @ x2.mean(axis=(0, 2, 3)) + w["fc_b"]
    e = np.exp(logits - logits.max())
    return e / e.sum()


def test_example_is_up_to_date(tmp_path):
    out = ex.main(str(tmp_path / "again.mlmodel"))
    assert open(out, "rb").read() == open(os.path.join(ROOT, "examples", "resnet_tiny.mlmodel"), "rb").read()


def test_example_cli(tmp_path, rng):
    model = os.path.join(ROOT, "examples", "resnet_tiny.mlmodel")
    vmfb = str(tmp_path / "resnet_tiny.vmfb")
    images = rng.uniform(0, 255, (3, 3, ex.SIZE, ex.SIZE)).astype(np.float32)
    subprocess.run([os.path.join(BIN, "estuary"), "compile", model, "-o", vmfb], check=True, capture_output=True)
    for k, image in enumerate(images):
        np.save(tmp_path / f"image{k}.npy", image)
        res = subprocess.run([os.path.join(BIN, "estuary"), "run", vmfb, "--input", f"image={tmp_path}/image{k}.npy",
                              "--output-dir", str(tmp_path / f"out{k}")], check=True, capture_output=True, text=True)
        probs = reference(image)
        want = ex.LABELS[int(np.argmax(probs))]
        assert f"label: " in res.stdout and repr(want) in res.stdout, res.stdout
        got = np.load(tmp_path / f"out{k}" / "probs.npy")
        assert_accumulated(got, probs.astype(np.float32), 16 * 9 * 3)
        assert str(np.load(tmp_path / f"out{k}" / "label.npy")[0]) == want
