"""Model importers: each turns one exchange format into an `nn` module (NNModule).

`import_model(source, format=None)` detects the format from the path or object type. Every format
has the same layout: importers/<format>/ops/<family>.py register one converter per source op in
the format's `ImportRegistry` (importers/registry.py), and its conversion context subclasses
importers/context.py's `ConversionContext`.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
import numbers
import os
from typing import TYPE_CHECKING, Any, BinaryIO

from estuary.base.errors import EstuaryError, ModelImportError

if TYPE_CHECKING:
    from estuary.dialects.graph import NNModule

FORMATS = ("coreml", "mlprogram", "nnef", "webnn", "nnapi", "nn")


def detect_format(source: object) -> str:
    """Format name of a model path or in-memory model object. A path's content decides (a Core ML
    protobuf, a Manifest.json package, an NNEF graph or archive, NNAPI or WebNN JSON keys); its
    suffix only breaks ties. ONNX, TensorFlow Lite and compiled .vmfb files are named as such."""
    from estuary.dialects.graph import NNModule

    if isinstance(source, NNModule):
        return "nn"
    if isinstance(source, dict):
        return "webnn"
    if not isinstance(source, (str, os.PathLike)):
        from estuary.importers.coreml.loader import is_model_message
        from estuary.importers.nnapi.model import Model as NNAPIModel

        if is_model_message(source) or _is_coremltools_model(source):
            return "coreml"
        if isinstance(source, NNAPIModel):
            return "nnapi"
        kind = type(source).__module__.split(".")[-1]
        if kind in FORMATS:
            return kind
        raise EstuaryError(f"cannot tell the format of a {type(source).__name__} object; pass format=")
    path = os.fspath(source)
    if os.path.isdir(path):
        if os.path.exists(os.path.join(path, "graph.nnef")):
            return "nnef"
        if os.path.exists(os.path.join(path, "Manifest.json")):
            return "coreml"  # an .mlpackage
        raise ModelImportError(f"{path}: a folder holding neither graph.nnef (NNEF) nor Manifest.json "
                               f"(a Core ML package)")
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
            sniffed = _sniff(f, head, path)
    except OSError as e:
        if not os.path.exists(path):
            raise ModelImportError(f"{path}: no such file or directory") from None
        raise ModelImportError(f"{path}: cannot read ({e.strerror or e})") from None
    if sniffed is not None:
        return sniffed
    raise ModelImportError(f"{path}: cannot tell the model format from its content or name; pass --format "
                           f"(one of {', '.join(FORMATS)})")


NOT_INPUT = ("is not an input format: Estuary reads Core ML, NNEF, WebNN and NNAPI models")


def _sniff(f: BinaryIO, head: bytes, path: str) -> str | None:
    """The format `head` (the file's first bytes; `f` the open file) shows, the suffix as a hint."""
    lower = path.lower()
    from estuary.base.integrity import is_vmfb

    if is_vmfb(head):
        raise ModelImportError(f"{path}: this is a compiled artefact (.vmfb), not a model; run it with "
                               f"`estuary run` or estuary.load()")
    if head[4:8] == b"TFL3" or lower.endswith(".tflite"):
        raise ModelImportError(f"{path}: TensorFlow Lite {NOT_INPUT}; convert it first (e.g. to NNEF with "
                               f"nnef-tools: python -m nnef_tools.convert --input-format tflite ...)")
    if head.startswith(b"\x1f\x8b") or head[257:262] == b"ustar":
        return "nnef"  # a .tgz/.tar NNEF archive (the only archives Estuary reads)
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text.startswith(b"{"):
        return _json_kind(path)
    if lower.endswith(".mlir") or text.startswith((b"module", b"func.func", b"builtin.module", b"#map", b"//")):
        return "nn"
    if lower.endswith(".nnef") or _nnef_text(text):
        return "nnef"
    if lower.endswith(".onnx"):
        raise ModelImportError(f"{path}: ONNX {NOT_INPUT}; onnxruntime runs ONNX directly, or convert it to "
                               f"NNEF with nnef-tools (python -m nnef_tools.convert --input-format onnx ...)")
    fields = _protobuf_fields(f)
    if fields and max(fields) >= 200:  # Model.Type: pipeline (200...), neuralNetwork (500), mlProgram (502), ...
        return "coreml"
    if fields and ({7, 8} & fields) and 1 in fields:  # ModelProto: ir_version, graph, opset_import
        raise ModelImportError(f"{path}: this looks like an ONNX model; ONNX {NOT_INPUT}; convert it to NNEF with "
                               f"nnef-tools (python -m nnef_tools.convert --input-format onnx ...)")
    if lower.endswith(".mlmodel"):
        return "coreml"
    return None


def _nnef_text(text: bytes) -> bool:
    """An NNEF graph document: `version X.Y;` after any comment lines."""
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(b"#"):
            return line.startswith(b"version ")
    return False


def _json_kind(path: str) -> str:
    """NNAPI JSON ("operands" and "operations", or "format": "nnapi") or WebNN (anything else:
    the WebNN importer names what is wrong with it)."""
    import json

    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return "nnapi" if path.lower().endswith(".nnapi.json") else "webnn"  # the importer reports it
    if isinstance(doc, dict) and (doc.get("format") == "nnapi" or ("operands" in doc and "operations" in doc)):
        return "nnapi"
    if isinstance(doc, dict) and "operators" not in doc and (
            "operands" in doc or "operations" in doc or path.lower().endswith(".nnapi.json")):
        return "nnapi"  # NNAPI-like, or named so, and nothing of WebNN's: the NNAPI importer says what is wrong
    return "webnn"


def _protobuf_fields(f: BinaryIO, limit: int = 64) -> set[int]:
    """Top-level field numbers of a protobuf message file (empty if it is not one): each field's
    payload is skipped with a seek, so a large model is not read."""
    def varint() -> int | None:
        value = shift = 0
        while shift < 64:
            b = f.read(1)
            if not b:
                return None
            value |= (b[0] & 0x7F) << shift
            if not b[0] & 0x80:
                return value
            shift += 7
        return None

    f.seek(0, os.SEEK_END)
    size = f.tell()
    f.seek(0)
    fields: set[int] = set()
    while f.tell() < size and len(fields) < limit:
        tag = varint()
        if tag is None or tag >> 3 == 0:
            return set()
        wire = tag & 7
        if wire == 0:
            if varint() is None:
                return set()
        elif wire == 1:
            f.seek(8, os.SEEK_CUR)
        elif wire == 2:
            length = varint()
            if length is None or f.tell() + length > size:
                return set()
            f.seek(length, os.SEEK_CUR)
        elif wire == 5:
            f.seek(4, os.SEEK_CUR)
        else:
            return set()
        fields.add(tag >> 3)
    return fields if f.tell() == size or len(fields) >= limit else set()


def _is_coremltools_model(source: object) -> bool:
    """A coremltools MLModel (its `get_spec()` is the Model message)."""
    return type(source).__name__ == "MLModel" and type(source).__module__.startswith("coremltools") and hasattr(
        source, "get_spec")


def import_model(source: Any, format: str | None = None,
                 shapes: Mapping[str, Sequence[int]] | None = None) -> NNModule:
    """Import a model path/object into an NNModule."""
    from estuary.dialects.graph import NNModule

    format = format or detect_format(source)
    checked = _checked_shapes(source, shapes, ranges=True)
    if _is_coremltools_model(source) and not _ml_program(source):
        source = source.get_spec()
    # NNEF's importer bounds its symbols itself; the others get the fixed shapes only, and ranges
    # narrow the imported module's symbols afterwards (_check_shape_names)
    given = checked if format == "nnef" or checked is None else \
        {n: d for n, d in checked.items() if not any(isinstance(x, tuple) for x in d)} or None
    nn = _import(source, format, given)
    if checked:
        _check_shape_names(source, nn, checked)
    return nn


def _import(source: Any, format: str, checked: dict[str, list[Any]] | None) -> NNModule:
    from estuary.dialects.graph import NNModule

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
        return load_model(source, shapes=checked)
    if format == "coreml" and not _ml_program(source):
        from estuary.importers import coreml
        return coreml.load_model(source, shapes=checked)
    if format in ("coreml", "mlprogram"):
        from estuary.importers import mlprogram
        return mlprogram.load_model(source, shapes=checked)
    if format == "nnef":
        from estuary.importers import nnef
        return nnef.load_model(source, shapes=checked)
    raise EstuaryError(f"unknown format {format!r}; choose one of {', '.join(FORMATS)}")


def _check_shape_names(source: object, nn: NNModule, shapes: dict[str, list[Any]]) -> None:
    """Every `shapes` entry names an input and is the shape it got: an unknown name, or a fixed
    dimension the shapes would change, is an error. Dynamic dimensions the importer left (WebNN's
    MLDynamicDimension, MLIR text) are fixed here (dialects/specialize.py)."""
    from estuary.dialects import specialize

    where = str(source) if isinstance(source, (str, os.PathLike)) else type(source).__name__
    have = {name: list(spec.shape) for name, spec in nn.inputs}
    try:
        for name in shapes:
            if name not in have:
                raise ModelImportError(f"{where}: --shape names {name!r}, which is not an input of this model "
                                       f"(inputs: {', '.join(have) or 'none'})")
        todo = {n: d for n, d in shapes.items() if have[n] != d and not (nn.format == "nnef" and any(
            isinstance(x, tuple) for x in d))}  # NNEF's importer took its ranges
        values = specialize.bindings(nn.inputs, todo, where)
        if values:
            specialize.specialize(nn, values)
    except ModelImportError:
        nn.close()
        raise


def _ml_program(source: object) -> bool:
    """A Core ML source holding an ML Program (.mlpackage, mlProgram spec): importers/mlprogram."""
    from estuary.importers.mlprogram import is_ml_program

    return is_ml_program(source)


def _checked_shapes(source: object, shapes: object, ranges: bool = False) -> dict[str, list[Any]] | None:
    """`shapes` as {input name: [positive ints]}, or a clear error naming the model. With `ranges`
    (NNEF's tract symbols) an item may also be a range bounding a dynamic dimension: a pair
    (min, max) or the text 'min..max', kept as a (min, max) tuple."""
    if shapes is None:
        return None
    where = source if isinstance(source, (str, os.PathLike)) else type(source).__name__
    if not isinstance(shapes, dict):
        raise EstuaryError(f"{where}: shapes must be a dict {{input name: [dims]}}, got {type(shapes).__name__}")
    out: dict[str, list[Any]] = {}
    for name, dims in shapes.items():
        items = [_range(d) if ranges else None for d in dims] if isinstance(dims, (list, tuple)) else None
        if not isinstance(name, str) or items is None or not all(
                r is not None or (isinstance(d, numbers.Integral) and not isinstance(d, bool) and int(d) >= 1)
                for d, r in zip(dims, items)):
            what = "positive integers or (min, max) ranges" if ranges else "positive integers"
            raise EstuaryError(f"{where}: shapes[{name!r}] must be a list of {what}, got {dims!r}")
        out[name] = [r if r is not None else int(d) for d, r in zip(dims, items)]
    return out


def _range(d: object) -> tuple[int, int] | None:
    """(min, max) for a range item of `shapes` ((min, max) or 'min..max'), else None."""
    if isinstance(d, str) and ".." in d:
        lo, _, hi = d.partition("..")
        d = (lo.strip(), hi.strip())
    if isinstance(d, (tuple, list)) and len(d) == 2:
        try:
            return int(d[0]), int(d[1])
        except (TypeError, ValueError):
            return None
    return None

