"""The conversions: a zoo model (models.py) written in each format Estuary reads, the way its
converter's documentation does it.

- `mlprogram_fp32`, `mlprogram_fp16`: coremltools ML Program (torch.jit.trace, then ct.convert
  with compute_precision FLOAT32 / FLOAT16), a .mlpackage.
- `neuralnetwork`: coremltools' older NeuralNetwork form (convert_to="neuralnetwork"), a .mlmodel.
- `nnef_khronos`, `nnef_tract`: torch-to-nnef, KhronosNNEF and TractNNEF targets, a folder.
- `webnn`: torch.onnx.export (the TorchScript exporter, opset 17), then the project's ONNX-to-WebNN
  converter (benchmarks/onnx_to_webnn.py), WebNN JSON + weights.

`onnx` (the ONNX export itself) is not a zoo format: onnxruntime runs it beside Estuary, and the
WebNN conversion starts from it; for the text models its sequence axis is dynamic (up to 128
tokens), so their WebNN graph has an MLDynamicDimension. Integer inputs (token ids) are int32 in
Core ML and int64 elsewhere, as each converter writes them.
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from . import compat, models

BENCHMARKS = Path(__file__).resolve().parents[1]  # onnx_to_webnn.py and its onnx_shapes.py
OUTPUT = "output"  # every export's one output
SEQUENCE_AXIS, MAX_SEQUENCE = "seq", 128  # the ONNX export's dynamic axis of token ids (text models)


@dataclass(frozen=True)
class Format:
    name: str
    title: str
    tolerance: float  # pass: max |estuary - torch| <= tolerance * max |torch|
    converter: str  # who converts (named in the table when the conversion fails)


FORMATS: dict[str, Format] = {f.name: f for f in [
    Format("mlprogram_fp32", "Core ML ML Program, float32", 1e-4, "coremltools"),
    Format("mlprogram_fp16", "Core ML ML Program, float16", 1e-2, "coremltools"),
    Format("neuralnetwork", "Core ML NeuralNetwork", 1e-4, "coremltools"),
    Format("nnef_khronos", "NNEF, torch-to-nnef KhronosNNEF target", 1e-4, "torch-to-nnef"),
    Format("nnef_tract", "NNEF, torch-to-nnef TractNNEF target", 1e-4, "torch-to-nnef"),
    Format("webnn", "WebNN JSON (torch.onnx.export, then benchmarks/onnx_to_webnn.py)", 1e-4,
           "torch.onnx.export / onnx_to_webnn"),
]}
ONNX = Format("onnx", "ONNX (torch.onnx.export)", 1e-4, "torch.onnx.export")


def reference_path(model_dir: Path) -> Path:
    return model_dir / "reference.npz"


def write_reference(built: models.Built, model_dir: Path) -> None:
    """The inputs and torch's output (`in:<name>`, `out:output`) and the weights' digest, once per
    model; a later export whose weights differ is refused (every format must see the same model)."""
    digest = models.weights_digest(built.module)
    path = reference_path(model_dir)
    if path.exists():
        with np.load(path) as saved:
            if str(saved["weights"]) != digest:
                raise RuntimeError(f"the rebuilt model's weights differ from {path}'s (seeded build not reproducible)")
        return
    arrays: dict[str, Any] = {f"in:{k}": v.numpy() for k, v in built.inputs.items()}
    arrays[f"out:{OUTPUT}"] = built.reference()
    arrays["weights"] = np.array(digest)
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, **arrays)
    tmp.replace(path)


def load_reference(model_dir: Path) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """(inputs by name, torch's output) of a model."""
    with np.load(reference_path(model_dir)) as saved:
        inputs = {k[3:]: saved[k] for k in saved.files if k.startswith("in:")}
        return inputs, saved[f"out:{OUTPUT}"]


# ---------------------------------------------------------------- the converters


def _coreml(built: models.Built, folder: Path, form: str) -> Path:
    import coremltools as ct
    import torch

    compat.coremltools_new_ones()
    with torch.no_grad():
        traced = torch.jit.trace(built.module, tuple(built.inputs.values()), strict=False)
    inputs = [ct.TensorType(name=name, shape=tuple(x.shape), dtype=np.int32 if not x.is_floating_point() else np.float32)
              for name, x in built.inputs.items()]
    options: dict[str, Any] = {"convert_to": "neuralnetwork"} if form == "neuralnetwork" else {
        "convert_to": "mlprogram",
        "compute_precision": ct.precision.FLOAT16 if form == "mlprogram_fp16" else ct.precision.FLOAT32}
    ml = ct.convert(traced, inputs=inputs, outputs=[ct.TensorType(name=OUTPUT)], **options)
    path = folder / ("model.mlmodel" if form == "neuralnetwork" else "model.mlpackage")
    ml.save(str(path))
    return path


def _nnef(built: models.Built, folder: Path, target_name: str) -> Path:
    import logging

    from torch_to_nnef import KhronosNNEF, TractNNEF, export_model_to_nnef

    if target_name == "nnef_tract":
        version = str(TractNNEF.latest_version())
        target: Any = TractNNEF(version, check_io=False, specific_tract_binary_path=compat.tract_stub(folder, version))
    else:
        target = KhronosNNEF.latest()
        target.check_io = False
    path = folder / "model.nnef"
    export_model_to_nnef(built.module, tuple(built.inputs.values()), path, target, input_names=list(built.inputs),
                         output_names=[OUTPUT], compression_level=None, log_level=logging.ERROR)
    return path


def _onnx(built: models.Built, folder: Path) -> Path:
    """The TorchScript exporter (torch 2.13's default, the dynamo exporter, needs onnxscript); a
    text model's sequence axis is dynamic ("seq"), as transformer exports usually are."""
    import torch

    path = folder / "model.onnx"
    text = any(not x.is_floating_point() for x in built.inputs.values())
    axes = {name: {1: SEQUENCE_AXIS} for name in [*built.inputs, OUTPUT]} if text else None
    with torch.no_grad():
        torch.onnx.export(built.module, tuple(built.inputs.values()), str(path), input_names=list(built.inputs),
                          output_names=[OUTPUT], dynamic_axes=axes, dynamo=False, opset_version=17)
    return path


def _webnn(onnx_path: Path, folder: Path) -> Path:
    """onnx_to_webnn on the ONNX export; a dynamic sequence axis gets maxSize MAX_SEQUENCE."""
    import onnx

    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    import onnx_to_webnn

    return Path(onnx_to_webnn.convert(onnx.load(str(onnx_path)), str(folder / "model.json"),
                                      max_sizes={SEQUENCE_AXIS: MAX_SEQUENCE}))


CONVERTERS: dict[str, Callable[[models.Built, Path], Path]] = {
    "mlprogram_fp32": lambda b, f: _coreml(b, f, "mlprogram_fp32"),
    "mlprogram_fp16": lambda b, f: _coreml(b, f, "mlprogram_fp16"),
    "neuralnetwork": lambda b, f: _coreml(b, f, "neuralnetwork"),
    "nnef_khronos": lambda b, f: _nnef(b, f, "nnef_khronos"),
    "nnef_tract": lambda b, f: _nnef(b, f, "nnef_tract"),
    "onnx": _onnx,
}


def export(model: str, fmt: str, model_dir: Path) -> Path:
    """Write `model` in format `fmt` (a FORMATS key or "onnx") under model_dir/fmt/ and return the
    path Estuary (or onnxruntime) reads. The first export of a model also writes its reference."""
    folder = model_dir / fmt
    folder.mkdir(parents=True, exist_ok=True)
    if fmt == "webnn":
        onnx_path = model_dir / "onnx" / "model.onnx"
        if not onnx_path.exists():
            onnx_path = export(model, "onnx", model_dir)
        return _webnn(onnx_path, folder)
    compat.quiet_converters()
    built = models.build(model)
    write_reference(built, model_dir)
    return CONVERTERS[fmt](built, folder)


def record(path: Path, result: dict[str, Any]) -> None:
    """Write a stage's result as JSON (atomically: a reader sees all or nothing)."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(result))
    tmp.replace(path)
