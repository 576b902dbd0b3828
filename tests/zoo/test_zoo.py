"""The zoo's quick subset (benchmarks/zoo, docs/zoo.md): small real models (torchvision at 64²,
tiny Hugging Face configs) through every export route Estuary reads, each compiled for llvm-cpu
and compared with torch's output.

    python -m pytest -m zoo -n 2 tests/zoo

A route that stops working fails here: a converter error, an import or compile error, or an
output off torch's by more than the format's tolerance. KNOWN_FAILURES lists the cells that fail
today, each with the error it must still raise: a different error fails, and so does a pass (then
the entry goes). A test is skipped only when its converter is not installed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from benchmarks.zoo import export, job, models  # the repository root is on sys.path (tests/conftest.py)

pytestmark = pytest.mark.zoo

CNNS = ["resnet18_64", "mobilenet_v3_small_64", "shufflenet_v2_x0_5_64"]
TEXT = ["bert", "gpt2", "llama"]
ALL_FORMATS = list(export.FORMATS)
# Trimmed to what catches regressions in the README's test command (the full grid is the benchmark
# script's): every format once on a CNN, the text models on the routes that stress what they add
# (attention and GELU in ML Program fp16 and tract's operators and symbols, grouped-query attention,
# GPT-2's Conv1D, hard-swish and squeeze-excite, channel shuffle).
ROUTES = {
    "resnet18_64": ["mlprogram_fp32", "nnef_khronos", "webnn"],
    "bert": ["mlprogram_fp16", "nnef_tract", "webnn"],
    "mobilenet_v3_small_64": ["mlprogram_fp16", "nnef_tract"],
    "shufflenet_v2_x0_5_64": ["neuralnetwork"],
    "gpt2": ["mlprogram_fp32"],
    "llama": ["mlprogram_fp32", "nnef_tract"],
}
CASES = [(m, f) for f in ALL_FORMATS for m, formats in ROUTES.items() if f in formats]


@dataclass(frozen=True)
class Known:
    error: str  # a regular expression the failure's text must match
    reason: str


# Not in ROUTES, so not run here (the benchmark script's table records them): bert via nnef_khronos
# (torch-to-nnef's Khronos target has no `gather`), gpt2 via nnef_tract (torch-to-nnef fails on
# GPT-2's Conv1D addmm), gpt2 and llama via webnn (IREE 3.13: "'affine.delinearize_index' op no
# basis element may be statically non-positive" on a dispatch fusing a dynamic-length softmax,
# isNaN/where and the attention product; docs/dynamic-shapes.md).
KNOWN_FAILURES: dict[tuple[str, str], Known] = {}

CONVERTERS = {"mlprogram_fp32": "coremltools", "mlprogram_fp16": "coremltools", "neuralnetwork": "coremltools",
              "nnef_khronos": "torch_to_nnef", "nnef_tract": "torch_to_nnef", "webnn": "onnx"}


def route(model: str, fmt: str, folder: Path) -> float:
    """Convert, compile (llvm-cpu), run; returns max |Estuary - torch| / max |torch|."""
    import estuary

    path = export.export(model, fmt, folder)
    vmfb = folder / "model.vmfb"
    estuary.compile(str(path)).save(str(vmfb))
    inputs, want = export.load_reference(folder)
    got = job.Estuary(vmfb, None, inputs)()
    measured = job.relative_error(got, want)
    assert "error" not in measured, measured["error"]
    return measured["rel_err"]


@pytest.mark.parametrize("model,fmt", CASES, ids=[f"{m}-{f}" for m, f in CASES])
def test_route(model: str, fmt: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("torchvision" if model in CNNS else "transformers")
    pytest.importorskip(CONVERTERS[fmt], reason=f"{CONVERTERS[fmt]} converts to {fmt}")
    tolerance = export.FORMATS[fmt].tolerance
    known = KNOWN_FAILURES.get((model, fmt))
    if known is None:
        rel = route(model, fmt, tmp_path)
        assert rel <= tolerance, f"{model} via {fmt}: max |Estuary - torch| / max |torch| = {rel:.3g} > {tolerance:g}"
        return
    try:
        rel = route(model, fmt, tmp_path)
    except Exception as e:  # noqa: BLE001 - the known failure, or a new one (re-raised)
        if re.search(known.error, f"{type(e).__name__}: {e}"):
            pytest.xfail(known.reason)
        raise
    pytest.fail(f"{model} via {fmt} no longer fails ({known.reason}; max rel. error {rel:.3g}): "
                f"remove it from KNOWN_FAILURES")


def test_zoo_lists_the_issue_models() -> None:
    """The full zoo keeps the architectures issue 42 asks for (its run is `python -m benchmarks.zoo`)."""
    wanted = {"resnet50", "mobilenet_v3_large", "efficientnet_b0", "efficientnet_v2_s", "convnext_tiny",
              "regnet_y_400mf", "shufflenet_v2_x1_0", "squeezenet1_1", "densenet121", "googlenet", "inception_v3",
              "mnasnet1_0", "vit_b_16", "swin_t", "maxvit_t", "deeplabv3_resnet50", "lraspp_mobilenet_v3_large",
              "bert", "distilbert", "gpt2", "llama", "qwen2", "t5_encoder", "whisper_encoder", "hf_vit"}
    assert wanted <= set(models.ZOO)
    assert set(models.SMALL) == set(CNNS + TEXT) == set(ROUTES)
    assert set(KNOWN_FAILURES) <= set(CASES)
