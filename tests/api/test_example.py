"""The bundled example model end to end: CLI compile + run on CPU and Vulkan vs onnxruntime."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from onnx import helper

from helpers import assert_accumulated, run_onnx

from helpers import ROOT  # noqa: E402 - the repository
MODEL = os.path.join(ROOT, "python", "estuary", "examples", "mobilenet_block.json")
BIN = os.path.dirname(sys.executable)


def _weights():
    """Read the example's constants straight from its JSON + .bin (independently of Estuary)."""
    doc = json.load(open(MODEL))["graph"]
    blob = open(os.path.join(ROOT, "python", "estuary", "examples", "mobilenet_block.bin"), "rb").read()
    out = {}
    for name, entry in doc["inputs"].items():
        if entry.get("constant"):
            shape = entry["descriptor"]["shape"]
            off = entry["data"]["byteOffset"]
            out[name] = np.frombuffer(blob, "<f4", int(np.prod(shape)), off).reshape(shape)
    return out


def _oracle(x):
    w = _weights()
    clip = lambda i, o: helper.make_node("Clip", [i, "zero", "six"], [o])  # noqa: E731
    nodes = [helper.make_node("Conv", ["image", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2]), clip("c1", "r1"),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], group=16), clip("c2", "r2"),
             helper.make_node("Conv", ["r2", "w3", "b3"], ["c3"]), clip("c3", "r3"),
             helper.make_node("GlobalAveragePool", ["r3"], ["p"]), helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "fc", "fcb"], ["l"]), helper.make_node("Softmax", ["l"], ["probabilities"],
                                                                                axis=1)]
    init = dict(w, zero=np.float32(0), six=np.float32(6))
    return run_onnx(nodes, {"image": x}, [("probabilities", np.float32, None)], initializers=init)["probabilities"]


@pytest.mark.parametrize("target,device", [("llvm-cpu", "cpu"), pytest.param("vulkan-spirv", "vulkan",
                                                                            marks=pytest.mark.vulkan)])
def test_example_via_cli(tmp_path, target, device):
    x = np.random.default_rng(3).standard_normal((1, 3, 32, 32)).astype(np.float32)
    np.save(tmp_path / "image.npy", x)
    vmfb = tmp_path / "m.vmfb"
    r = subprocess.run([os.path.join(BIN, "estuary"), "compile", MODEL, "--target", target, "-o", str(vmfb)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([os.path.join(BIN, "estuary"), "run", str(vmfb), "--device", device, "--input",
                        f"image={tmp_path / 'image.npy'}", "--output-dir", str(tmp_path / "out")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    got = np.load(tmp_path / "out" / "probabilities.npy")
    assert_accumulated(got, _oracle(x), 144, ulp_per_term=4)
    assert abs(float(got.sum()) - 1) < 1e-5


def test_demo_command():
    r = subprocess.run([os.path.join(BIN, "estuary"), "demo", MODEL], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "probabilities: float32[1, 10]" in r.stdout and "latency: median" in r.stdout


def test_compile_for_cuda_produces_vmfb(tmp_path):
    out = tmp_path / "m_cuda.vmfb"
    r = subprocess.run([os.path.join(BIN, "estuary"), "compile", MODEL, "--target", "cuda", "-o", str(out), "--quiet"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert out.stat().st_size > 10000
