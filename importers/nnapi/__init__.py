"""NNAPI models (estuary.nnapi.Model, or its JSON form *.nnapi.json) -> `nn` modules.

Each OperationCode has one registration in importers/nnapi/ops*.py mapping it onto nn ops. The
runtime inputs are named input0.. and outputs output0.. in identify_inputs_and_outputs order.
"""
import os

from estuary.errors import ModelImportError, UnsupportedOpError
from estuary.importers.nnapi.registry import OPS, Converter


def load_model(source):
    """Import an nnapi.Model (finished) or a path to its JSON serialization."""
    from estuary import nnapi

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
    from estuary.importers.nnapi import ops, ops_lookup, ops_resize, ops_sequence  # noqa: F401  (registers)

    unsupported = [(f"#{i} {code.name}", code.name, "not supported") for i, (code, _, _) in
                   enumerate(model.operations) if code not in OPS]
    if unsupported:
        raise UnsupportedOpError(path, unsupported)
    return Converter(model, path).convert()
