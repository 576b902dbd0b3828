"""Core ML (.mlmodel NeuralNetwork / Classifier / Regressor) -> `nn` modules.

`load_model(source, shapes=None)`: source is a path, bytes, or a coremltools `Model_pb2.Model`.
Each NeuralNetworkLayer kind has one converter in a `layers_*.py` module of this package (all of
them are imported here). Layouts, shape mappings and model kinds: importers/coreml/model_kinds.py.
coremltools is imported only here (an optional extra: pip install estuary[coreml]).
"""
import importlib
import os
import pkgutil

_LOADED = False


def _load_layer_modules():
    global _LOADED
    if _LOADED:
        return
    here = os.path.dirname(__file__)
    for info in sorted(pkgutil.iter_modules([here]), key=lambda m: m.name):
        if info.name.startswith("layers_"):
            importlib.import_module(f"{__name__}.{info.name}")
    _LOADED = True


def load_model(source, shapes=None):
    """Import a Core ML model; `shapes` {input name: shape} fixes flexible input shapes."""
    from estuary.importers.coreml.converter import Converter
    from estuary.importers.coreml.loader import read_model

    model, path = read_model(source)
    _load_layer_modules()
    return Converter(model, path, shapes).convert()
