"""Reading `nn` (or already lowered TOSA/linalg) MLIR text files."""
import os

from iree.compiler import ir

import estuary.dialects  # noqa: F401  (registers the nn op views)
from estuary.dialects.graph import NNModule, new_session
from estuary.base.errors import ModelImportError


def parse_mlir(text, source="<memory>"):
    session = new_session()
    with session.context:
        try:
            module = ir.Module.parse(text)
        except ir.MLIRError as e:
            raise ModelImportError(f"{source}: cannot parse MLIR: {e}") from None
    return NNModule.from_module(module, session, source)


def load_mlir(path):
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise ModelImportError(f"{path}: cannot read ({e})") from None
    return parse_mlir(text, path)
