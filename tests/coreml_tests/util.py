"""Core ML test utilities: save a NeuralNetworkBuilder's model, compile and run it with Estuary."""
import os

import estuary
from helpers import TARGET


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
    target = target or TARGET  # ESTUARY_TEST_TARGET (helpers.py)
    art = estuary.compile(path, target=target, format="coreml", shapes=shapes)
    model = estuary.load(art, device="vulkan" if target == "vulkan-spirv" else None)
    return model.run(feeds)
