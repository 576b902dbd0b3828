"""Realistic models (tests/importers/mlprogram/torch_models.py: ResNet-50, MobileNetV2, a BERT-style
encoder, a GPT-style decoder) traced, converted with ct.convert to iOS17 .mlpackages in float32 and
float16 precision, compiled with estuary.compile (BERT float32 with `estuary compile`) and compared with
the same module on torch CPU.

Each package is converted once per module (conversion and compilation dominate). The CNNs run
at 64 x 64 here; 224 x 224 is measured in docs/mlprogram.md. Errors are measured relative to the
largest output magnitude: float32 within 1e-4, float16 (fp16 weights, computed in float32 by
Estuary) within 1e-2.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import estuary

torch = pytest.importorskip("torch")
from tests.importers.mlprogram import torch_models as tm  # noqa: E402

TOLERANCE = {"fp32": 1e-4, "fp16": 1e-2}
SIZE = 64


def build(kind):
    """(module, example torch inputs, [(name, dtype of the ct.TensorType)])."""
    torch.manual_seed(31)
    if kind in ("resnet50", "mobilenetv2"):
        model = tm.randomize_bn(tm.ResNet50() if kind == "resnet50" else tm.MobileNetV2())
        return model, (torch.randn(1, 3, SIZE, SIZE),), [("image", np.float32)]
    if kind == "bert":
        ids = torch.randint(0, 1000, (2, 64))
        mask = torch.ones(2, 64, dtype=torch.int64)
        mask[1, 41:] = 0  # the second sequence is padded
        return tm.BertEncoder(), (ids, mask), [("ids", np.int32), ("attention_mask", np.int32)]
    return tm.GptDecoder(), (torch.randint(0, 512, (2, 32)),), [("ids", np.int32)]


def convert(kind, precision, folder, input_dtype="given"):
    """Trace and convert; input_dtype "default" leaves the inputs' dtype to ct.convert (float16
    for a float16 program on iOS16+)."""
    import coremltools as ct

    model, args, names = build(kind)
    model.eval()
    inputs = [ct.TensorType(name=n, shape=a.shape, dtype=None if input_dtype == "default" else d)
              for (n, d), a in zip(names, args)]
    ml = ct.convert(torch.jit.trace(model, args), inputs=inputs, convert_to="mlprogram",
                    minimum_deployment_target=ct.target.iOS17,
                    compute_precision=ct.precision.FLOAT32 if precision == "fp32" else ct.precision.FLOAT16)
    path = os.path.join(str(folder), f"{kind}-{precision}-{input_dtype}.mlpackage")
    ml.save(path)
    return path, model, args, names


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    """Packages converted on first use, kept for the module."""
    cache = {}

    def get(kind, precision, **kw):
        key = (kind, precision, tuple(sorted(kw.items())))
        if key not in cache:
            cache[key] = convert(kind, precision, tmp_path_factory.mktemp(kind), **kw)
        return cache[key]

    return get


def feeds(args, names, float_dtype=np.float32):
    return {n: a.numpy().astype(np.int32 if a.dtype == torch.int64 else float_dtype) for (n, _), a in zip(names, args)}


def compare(got, model, args, precision):
    with torch.no_grad():
        want = model(*args)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got.values(), want):
        w = w.numpy().astype(np.float64)
        assert g.shape == w.shape
        err = np.abs(g.astype(np.float64) - w).max() / np.abs(w).max()
        assert err <= TOLERANCE[precision], (err, precision)


# each model once, and float16 where it adds a case (a float16 boundary, attention in float16);
# the zoo (tests/zoo, benchmarks/zoo) runs more architectures in both precisions
CASES = [("resnet50", "fp32"), ("mobilenetv2", "fp16"), ("bert", "fp32"), ("bert", "fp16"), ("gpt", "fp32")]


@pytest.mark.parametrize("kind,precision", CASES, ids=[f"{k}-{p}" for k, p in CASES])
def test_model(packages, kind, precision, tmp_path):
    """BERT float32 goes through the CLI (`estuary compile`). MobileNetV2 float16 leaves its input
    dtype to ct.convert, which makes the image and the logits float16 arrays; the oracle runs
    torch on the same fp16-rounded image."""
    fp16_boundary = kind == "mobilenetv2" and precision == "fp16"
    path, model, args, names = packages(kind, precision, input_dtype="default" if fp16_boundary else "given")
    if fp16_boundary:
        args = (torch.from_numpy(args[0].numpy().astype(np.float16).astype(np.float32)),)
    feed = feeds(args, names, np.float16 if fp16_boundary else np.float32)
    if kind == "bert" and precision == "fp32":
        out = str(tmp_path / "bert.vmfb")
        subprocess.run([sys.executable, "-m", "estuary", "compile", "-q", path, "-o", out], check=True)
        got = estuary.load(out).run(feed)
    else:
        got = estuary.load(estuary.compile(path)).run(feed)
    if fp16_boundary:
        assert all(v.dtype == np.float16 for v in got.values())
    compare(got, model, args, precision)
