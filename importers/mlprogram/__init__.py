"""Core ML ML Programs (.mlpackage, .mlmodel of type mlProgram, coremltools MLModel / spec) -> nn.

`load_model(source, shapes=None, function=None)` reads the package (package.py), its weights
(storage.py) and converts one function of the MIL program (converter.py) with one converter per
MIL op (ops/<family>.py). Semantics and decisions: docs/mlprogram.md.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from estuary.importers.mlprogram.package import is_ml_program, is_package

__all__ = ["load_model", "is_ml_program", "is_package", "supported"]


def load_model(source: Any, shapes: Mapping[str, Sequence[int]] | None = None, function: str | None = None) -> Any:
    """Import an ML Program as an NNModule: every function of a multifunction model (the default
    one as @main), or only `function`; a function with enumerated input shapes once per shape."""
    from estuary.importers.coreml.model_kinds import with_metadata
    from estuary.importers.mlprogram.converter import build_all
    from estuary.importers.mlprogram.ops import OPS
    from estuary.importers.mlprogram.package import read_source

    src = read_source(source)
    OPS.load()
    return with_metadata(build_all(src, shapes, function), src.model)  # every function, in one artefact


def supported() -> dict[str, int]:
    """MIL op name -> first opset (iOS version) Estuary imports it in."""
    from estuary.importers.mlprogram.ops import OPS

    OPS.load()
    return {str(name): int(entry.since) for name, entry in OPS.items()}
