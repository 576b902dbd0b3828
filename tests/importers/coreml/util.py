"""Core ML test utilities: save a NeuralNetworkBuilder's model, compile and run it with Estuary."""
import os

from helpers import run_model


def save(builder, tmp_path, name="model.mlmodel", spec_version=None):
    """Write the builder's spec as a .mlmodel file; returns its path."""
    spec = builder.spec
    if spec_version is not None:
        spec.specificationVersion = spec_version
    path = os.path.join(str(tmp_path), name)
    with open(path, "wb") as f:
        f.write(spec.SerializeToString())
    return path


def run(path, feeds, target=None, shapes=None):
    """Compile a .mlmodel with Estuary and run it; returns {output name: array}."""
    return run_model(path, feeds, "coreml", target, shapes=shapes)
