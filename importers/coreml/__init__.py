"""Core ML (.mlmodel NeuralNetwork / Classifier / Regressor) -> `nn` modules.

`load_model(source, shapes=None)`: source is a path, bytes, or a coremltools `Model_pb2.Model`.
Each NeuralNetworkLayer kind has one converter, registered in importers/coreml/ops/<family>.py.
Layouts, shape mappings and model kinds: importers/coreml/model_kinds.py.
coremltools (a dependency of the estuary-nn distribution) is imported only here.
"""


def load_model(source, shapes=None):
    """Import a Core ML model; `shapes` {input name: shape} fixes flexible input shapes (else ranges
    become dynamic dimensions and enumerated shapes one function each: coreml/flexible.py)."""
    from estuary.importers.coreml.converter import build_all
    from estuary.importers.coreml.loader import read_model
    from estuary.importers.coreml.ops import OPS

    from estuary.importers.coreml.model_kinds import with_metadata

    model, path = read_model(source)
    OPS.load()
    return with_metadata(build_all(model, path, shapes), model)
