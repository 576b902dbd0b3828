"""Model importers: each turns one exchange format into an `nn` module (NNModule).

`import_model(source, format=None)` detects the format from the path or object type. Every format
has the same layout: importers/<format>/ops/<family>.py register one converter per source op in
the format's `Registry` (importers/registry.py), and its conversion context subclasses
importers/context.py's `ConversionContext`.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
import numbers
import os
from typing import TYPE_CHECKING, Any

from estuary.errors import EstuaryError, ModelImportError

if TYPE_CHECKING:
    from estuary.dialects.graph import NNModule

FORMATS = ("coreml", "nnef", "webnn", "nnapi", "nn")


def detect_format(source: object) -> str:
    """Format name of a model path or in-memory model object."""
    from estuary.dialects.graph import NNModule

    if isinstance(source, NNModule):
        return "nn"
    if isinstance(source, dict):
        return "webnn"
    if not isinstance(source, (str, os.PathLike)):
        from estuary.importers.coreml.loader import is_model_message
        from estuary.importers.nnapi.model import Model as NNAPIModel

        if is_model_message(source):
            return "coreml"
        if isinstance(source, NNAPIModel):
            return "nnapi"
        kind = type(source).__module__.split(".")[-1]
        if kind in FORMATS:
            return kind
        raise EstuaryError(f"cannot tell the format of a {type(source).__name__} object; pass format=")
    path = os.fspath(source)
    lower = path.lower()
    if lower.endswith(".mlir"):
        return "nn"
    if lower.endswith(".mlmodel"):
        return "coreml"
    if lower.endswith((".nnef", ".tgz", ".tar.gz", ".tar")) or (
            os.path.isdir(path) and os.path.exists(os.path.join(path, "graph.nnef"))):
        return "nnef"
    if lower.endswith(".nnapi.json"):
        return "nnapi"
    if lower.endswith(".json"):
        return "webnn"
    if not os.path.exists(path):
        raise ModelImportError(f"{path}: no such file or directory")
    raise ModelImportError(f"{path}: cannot tell the model format from the name; pass --format "
                           f"(one of {', '.join(FORMATS)})")


def import_model(source: Any, format: str | None = None,
                 shapes: Mapping[str, Sequence[int]] | None = None) -> NNModule:
    """Import a model path/object into an NNModule."""
    from estuary.dialects.graph import NNModule

    format = format or detect_format(source)
    checked = _checked_shapes(source, shapes)
    if format == "nn":
        if isinstance(source, NNModule):
            return source
        from estuary.importers.mlir_text import load_mlir
        return load_mlir(source)
    if format == "webnn":
        from estuary.importers.webnn import load_graph
        return load_graph(source)
    if format == "nnapi":
        from estuary.importers.nnapi import load_model
        return load_model(source)
    if format == "coreml":
        from estuary.importers import coreml
        return coreml.load_model(source, shapes=checked)
    if format == "nnef":
        from estuary.importers import nnef
        return nnef.load_model(source, shapes=checked)
    raise EstuaryError(f"unknown format {format!r}; choose one of {', '.join(FORMATS)}")


def _checked_shapes(source: object, shapes: object) -> dict[str, list[int]] | None:
    """`shapes` as {input name: [positive ints]}, or a clear error naming the model."""
    if shapes is None:
        return None
    where = source if isinstance(source, (str, os.PathLike)) else type(source).__name__
    if not isinstance(shapes, dict):
        raise EstuaryError(f"{where}: shapes must be a dict {{input name: [dims]}}, got {type(shapes).__name__}")
    for name, dims in shapes.items():
        if not isinstance(name, str) or not isinstance(dims, (list, tuple)) or not all(
                isinstance(d, numbers.Integral) and not isinstance(d, bool) and int(d) >= 1 for d in dims):
            raise EstuaryError(f"{where}: shapes[{name!r}] must be a list of positive integers, got {dims!r}")
    return {name: [int(d) for d in dims] for name, dims in shapes.items()}

