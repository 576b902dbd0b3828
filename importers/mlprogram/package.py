"""Finding an ML Program's spec and weights: `.mlpackage` folders, `.mlmodel` files of type
mlProgram, coremltools `MLModel` objects and `Model_pb2.Model` messages.

An .mlpackage holds Manifest.json; its `rootModelIdentifier` names the item whose `path` (under
Data/) is the model spec, and the spec's blob references (`@model_path/weights/weight.bin`) are
relative to the spec's folder. Every path is resolved (symlinks included) and must stay inside
the package, as NNEF archive members must stay inside their archive.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from estuary.base.errors import ModelImportError
from estuary.importers.coreml.loader import is_model_message, model_pb2
from estuary.importers.mlprogram.storage import BlobFile

MAX_SPEC_VERSION = 10


@dataclass
class Source:
    """A parsed ML Program: the Model message, where its blob paths are rooted, and the folder
    paths must stay inside (None when the model came without files)."""

    model: Any
    path: str
    model_dir: str | None
    root: str | None
    blob_files: dict[str, BlobFile] = field(default_factory=dict)

    def blob_file(self, name: str, where: str) -> BlobFile:
        """The weight file a blobFileValue names ('@model_path/weights/weight.bin')."""
        if name in self.blob_files:
            return self.blob_files[name]
        if self.model_dir is None or self.root is None:
            raise ModelImportError(f"{where}: the weights are in {name!r} but the model was given without its "
                                   f"files; pass the .mlpackage path")
        if not name.startswith("@model_path/"):
            raise ModelImportError(f"{where}: weight file {name!r} is not under @model_path/")
        full = inside(self.root, os.path.join(self.model_dir, name[len("@model_path/"):]), self.path, where)
        if not os.path.isfile(full):
            raise ModelImportError(f"{where}: weight file {name!r} is missing from {self.path}")
        self.blob_files[name] = BlobFile(full, f"{self.path}: {name[len('@model_path/'):]}")
        return self.blob_files[name]


def inside(root: str, path: str, shown: str, where: str | None = None) -> str:
    """`path` resolved, or a ModelImportError when it leaves `root` (.. or a symlink out)."""
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    if os.path.commonpath([real_root, real]) != real_root:
        raise ModelImportError(f"{where or shown}: path {os.path.relpath(path, root)!r} leaves the package {shown}")
    return real


def is_package(path: str) -> bool:
    return os.path.isdir(path) and (path.rstrip("/\\").lower().endswith(".mlpackage")
                                    or os.path.isfile(os.path.join(path, "Manifest.json")))


def _parse(data: bytes, shown: str) -> Any:
    if not data:
        raise ModelImportError(f"{shown}: empty file, not a Core ML model")
    model = model_pb2().Model()
    try:
        model.ParseFromString(data)
    except Exception as e:  # google.protobuf DecodeError and friends
        raise ModelImportError(f"{shown}: not a valid Core ML model (corrupt or truncated protobuf: {e})") from None
    return model


def _read(path: str, shown: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise ModelImportError(f"{shown}: cannot read ({e.strerror})") from None


def _package_spec(path: str) -> tuple[str, str]:
    """(spec file, package root) of an .mlpackage folder, from its Manifest.json."""
    manifest_path = os.path.join(path, "Manifest.json")
    if not os.path.isfile(manifest_path):
        raise ModelImportError(f"{path}: not an .mlpackage (no Manifest.json)")
    try:
        manifest = json.loads(_read(manifest_path, path))
        entries = manifest["itemInfoEntries"]
        root_id = manifest["rootModelIdentifier"]
    except (ValueError, KeyError, TypeError) as e:
        raise ModelImportError(f"{path}: Manifest.json is malformed ({type(e).__name__}: {e})") from None
    if not isinstance(entries, dict) or root_id not in entries:
        raise ModelImportError(f"{path}: Manifest.json's rootModelIdentifier {root_id!r} names no item")
    item = entries[root_id]
    rel = item.get("path") if isinstance(item, dict) else None
    if not isinstance(rel, str) or not rel:
        raise ModelImportError(f"{path}: Manifest.json's root model item has no path")
    spec = inside(path, os.path.join(path, "Data", rel), path)
    if not os.path.isfile(spec):
        raise ModelImportError(f"{path}: the root model item Data/{rel} is missing")
    return spec, path


def is_ml_program(source: Any) -> bool:
    """Whether a path, Model message or MLModel object holds an ML Program (cheap for a path:
    one protobuf parse; any read problem answers False and is reported by the loader)."""
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if is_package(path):
            return True
        if not os.path.isfile(path):
            return False
        try:
            with open(path, "rb") as f:
                model = model_pb2().Model.FromString(f.read())
        except Exception:
            return False
        return model.WhichOneof("Type") == "mlProgram"
    if is_model_message(source):
        return bool(source.WhichOneof("Type") == "mlProgram")
    spec = getattr(source, "get_spec", None)
    if callable(spec) and type(source).__module__.startswith("coremltools"):
        return bool(spec().WhichOneof("Type") == "mlProgram")
    return False


def read_source(source: Any) -> Source:
    """The Source of an .mlpackage/.mlmodel path, an MLModel object or a Model message."""
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if os.path.isdir(path):
            spec_file, root = _package_spec(path)
        else:
            spec_file, root = path, os.path.dirname(os.path.abspath(path))
        model = _parse(_read(spec_file, path), path)
        result = Source(model, path, os.path.dirname(spec_file), root)
    elif is_model_message(source):
        model = source if isinstance(source, model_pb2().Model) else model_pb2().Model.FromString(
            source.SerializeToString())
        result = Source(model, "<ml program spec>", None, None)
    elif callable(getattr(source, "get_spec", None)):
        package = getattr(source, "package_path", None)
        if isinstance(package, str) and os.path.isdir(package):
            return read_source(package)
        model = model_pb2().Model.FromString(source.get_spec().SerializeToString())
        weights = getattr(source, "weights_dir", None)
        model_dir = os.path.dirname(weights) if isinstance(weights, str) and os.path.isdir(weights) else None
        result = Source(model, f"<{type(source).__name__}>", model_dir, model_dir)
    else:
        raise ModelImportError(f"cannot read an ML Program from a {type(source).__name__}")
    check_model(result)
    return result


def check_model(src: Source) -> None:
    model = src.model
    v = model.specificationVersion
    if v < 1 or v > MAX_SPEC_VERSION:
        raise ModelImportError(f"{src.path}: unknown Core ML specification version {v} "
                               f"(supported: 1..{MAX_SPEC_VERSION}); corrupt file?")
    kind = model.WhichOneof("Type")
    if kind != "mlProgram":
        raise ModelImportError(f"{src.path}: the Core ML model is of type {kind!r}, not an ML Program")
    if not model.mlProgram.functions:
        raise ModelImportError(f"{src.path}: the ML Program has no functions")
