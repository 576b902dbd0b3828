"""Writes the bundled example models (fixed seeds, so the files are reproducible).

mobilenet_block.json (+ .bin weights): a MobileNet-style block in WebNN JSON —
conv 3x3/2 + relu6, depthwise 3x3 + relu6, pointwise 1x1 + relu6, global average pool,
gemm classifier, softmax. Input "image" float32 [1, 3, 32, 32]; output "probabilities" [1, 10].
"""
import json
import os

import numpy as np

# the demo model ships inside the package (estuary/examples/), so `estuary demo` works from any folder
HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python", "estuary", "examples")


def mobilenet_block():
    rng = np.random.default_rng(7)
    weights = {
        "w1": rng.normal(0, 0.3, (16, 3, 3, 3)), "b1": rng.normal(0, 0.1, (16,)),
        "w2": rng.normal(0, 0.3, (16, 1, 3, 3)), "b2": rng.normal(0, 0.1, (16,)),
        "w3": rng.normal(0, 0.2, (32, 16, 1, 1)), "b3": rng.normal(0, 0.1, (32,)),
        "fc": rng.normal(0, 0.2, (32, 10)), "fcb": rng.normal(0, 0.1, (10,)),
    }
    blob, inputs = bytearray(), {"image": {"descriptor": {"shape": [1, 3, 32, 32], "dataType": "float32"}}}
    for name, w in weights.items():
        w = w.astype("<f4")
        inputs[name] = {"descriptor": {"shape": list(w.shape), "dataType": "float32"},
                        "data": {"file": "mobilenet_block.bin", "byteOffset": len(blob)}, "constant": True}
        blob += w.tobytes()
    relu6 = {"minValue": 0, "maxValue": 6}
    ops = [
        {"name": "conv2d", "arguments": [{"input": "image"}, {"filter": "w1"},
                                         {"options": {"padding": [1, 1, 1, 1], "strides": [2, 2], "bias": "b1"}}],
         "outputs": "conv1"},
        {"name": "clamp", "arguments": [{"input": "conv1"}, {"options": relu6}], "outputs": "relu1"},
        {"name": "conv2d", "arguments": [{"input": "relu1"}, {"filter": "w2"},
                                         {"options": {"padding": [1, 1, 1, 1], "groups": 16, "bias": "b2"}}],
         "outputs": "dw"},
        {"name": "clamp", "arguments": [{"input": "dw"}, {"options": relu6}], "outputs": "relu2"},
        {"name": "conv2d", "arguments": [{"input": "relu2"}, {"filter": "w3"}, {"options": {"bias": "b3"}}],
         "outputs": "pw"},
        {"name": "clamp", "arguments": [{"input": "pw"}, {"options": relu6}], "outputs": "relu3"},
        {"name": "averagePool2d", "arguments": [{"input": "relu3"}], "outputs": "pool"},
        {"name": "reshape", "arguments": [{"input": "pool"}, {"newShape": [1, 32]}], "outputs": "flat"},
        {"name": "gemm", "arguments": [{"a": "flat"}, {"b": "fc"}, {"options": {"c": "fcb"}}], "outputs": "logits"},
        {"name": "softmax", "arguments": [{"input": "logits"}, {"axis": 1}], "outputs": "probabilities"},
    ]
    doc = {"name": "mobilenet_block", "graph": {"inputs": inputs, "operators": ops, "outputs": ["probabilities"]}}
    with open(os.path.join(HERE, "mobilenet_block.json"), "w") as f:
        json.dump(doc, f, indent=1)
    with open(os.path.join(HERE, "mobilenet_block.bin"), "wb") as f:
        f.write(bytes(blob))
    return weights


if __name__ == "__main__":
    mobilenet_block()
    print("wrote python/estuary/examples/mobilenet_block.json and .bin")
