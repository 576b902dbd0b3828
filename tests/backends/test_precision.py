"""`precision="bf16" | "fp16"` (`estuary compile --precision`): matmul and convolution inputs
rounded to the narrow type by IREE's demotion (in a child process, backends/precision.py), float32
accumulation. Oracle: onnxruntime in float32; the error must be of the narrow type's size (so the
demotion happened) and no larger."""
import os
import subprocess
import sys

import numpy as np
import pytest

import estuary
from estuary.base.options import CompileOptions
from estuary.backends.options import create_options, parse_options

from helpers import ROOT  # noqa: E402 - the repository
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import models  # noqa: E402
import run as bench  # noqa: E402

# relative error bounds (max |error| / max |reference|): fp16 has 11 significant bits, bf16 8
BOUNDS = {"fp16": (1e-5, 5e-3), "bf16": (1e-4, 3e-2)}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    import onnxruntime as ort

    model, feeds, _ = models.tiny()
    path = bench.emit(model, "tiny", "webnn", str(tmp_path_factory.mktemp("precision")))
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(["y"], feeds)[0]
    return path, feeds, ref


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_reduced_precision_within_its_bound(tiny, precision):
    path, feeds, ref = tiny
    got = estuary.load(estuary.compile(path, precision=precision)).run(feeds)["y"]
    err = np.abs(got - ref).max() / np.abs(ref).max()
    low, high = BOUNDS[precision]
    assert low < err < high, f"{precision}: relative error {err:.1e} outside ({low}, {high})"


def test_fp32_default_is_exact(tiny):
    path, feeds, ref = tiny
    got = estuary.load(estuary.compile(path)).run(feeds)["y"]
    assert np.abs(got - ref).max() / np.abs(ref).max() < 1e-5


def test_precision_option_is_checked():
    with pytest.raises(estuary.EstuaryError, match="unknown precision 'int4'"):
        create_options(precision="int4")
    assert parse_options("precision=bf16").precision == "bf16"


def test_cli_precision(tiny, tmp_path):
    out = tmp_path / "tiny.vmfb"
    r = subprocess.run([sys.executable, "-m", "estuary", "compile", tiny[0], "--precision", "fp16", "-o", str(out),
                        "--quiet"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    got = estuary.load(str(out)).run(tiny[1])["y"]
    assert np.abs(got - tiny[2]).max() / np.abs(tiny[2]).max() < BOUNDS["fp16"][1]
