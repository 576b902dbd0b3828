"""NNAPI models (estuary.nnapi.Model, or its JSON form *.nnapi.json) -> `nn` modules.

Each OperationCode has one registration in importers/nnapi/ops/<family>.py mapping it onto nn ops.
The model structure and enums live in importers/nnapi/model.py (estuary.nnapi re-exports them).
The runtime inputs are named input0.. and outputs output0.. in identify_inputs_and_outputs order.
"""
import os

from estuary.base.errors import ModelImportError, UnsupportedOpError
from estuary.importers.nnapi import model as nnapi
from estuary.importers.nnapi.converter import Converter
from estuary.importers.nnapi.ops import OPS


def load_model(source, shapes=None):
    """Import an nnapi.Model (finished) or a path to its JSON serialization; `shapes`
    {"input<n>": [dims]} fills the free (0) dimensions of model inputs."""
    if isinstance(source, nnapi.Model):
        model, path = source, "<nnapi model>"
        if not model.finished:
            raise nnapi.NNAPIError(nnapi.ResultCode.BAD_STATE, "the model must be finished before compiling")
    else:
        path = os.fspath(source)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            raise ModelImportError(f"{path}: cannot read ({e})") from None
        try:
            model = nnapi.Model.from_json(text)
        except nnapi.NNAPIError as e:
            raise ModelImportError(f"{path}: {e}") from None
    OPS.load()

    unsupported = [(f"#{i} {code.name}", code.name, "not supported") for i, (code, _, _) in
                   enumerate(model.operations) if code not in OPS]
    if unsupported:
        raise UnsupportedOpError(path, unsupported)
    return Converter(model, path, shapes).build()
