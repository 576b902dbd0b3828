"""Build examples/resnet_tiny.mlmodel: a small ResNet-style Core ML image classifier.

image (RGB 32x32) -> ImageScaler (x/255 - 0.5) -> conv3x3(16)+BN+ReLU -> residual block
[conv3x3+BN+ReLU, conv3x3+BN, + skip, ReLU] -> stride-2 conv3x3(32)+ReLU -> global average pool
-> innerProduct(5) -> softmax -> class labels. Weights come from `weights()` (a fixed seed), so
tests can rebuild the same network independently. Needs coremltools:

    python examples/make_coreml_example.py [OUT.mlmodel]
"""
import logging
import os
import sys

import numpy as np

LABELS = ["daisy", "dandelion", "rose", "sunflower", "tulip"]
SIZE = 32


def weights(seed=2024):
    """Every parameter of the network (Core ML layouts: conv [O, I, kh, kw], dense [O, I])."""
    rng = np.random.default_rng(seed)
    w = {}

    def conv(name, o, i):
        w[name + "_w"] = (rng.standard_normal((o, i, 3, 3)) * np.sqrt(2.0 / (9 * i))).astype(np.float32)
        w[name + "_b"] = (rng.standard_normal(o) * 0.1).astype(np.float32)

    def bn(name, c):
        w[name + "_gamma"] = rng.uniform(0.5, 1.5, c).astype(np.float32)
        w[name + "_beta"] = (rng.standard_normal(c) * 0.1).astype(np.float32)
        w[name + "_mean"] = (rng.standard_normal(c) * 0.1).astype(np.float32)
        w[name + "_var"] = rng.uniform(0.5, 1.5, c).astype(np.float32)

    conv("stem", 16, 3)
    bn("stem_bn", 16)
    conv("res1", 16, 16)
    bn("res1_bn", 16)
    conv("res2", 16, 16)
    bn("res2_bn", 16)
    conv("down", 32, 16)
    w["fc_w"] = (rng.standard_normal((len(LABELS), 32)) * 0.5).astype(np.float32)
    w["fc_b"] = (rng.standard_normal(len(LABELS)) * 0.1).astype(np.float32)
    return w


def build():
    """The coremltools spec of the classifier."""
    logging.getLogger("coremltools").setLevel(logging.ERROR)  # no native runtime on Linux: harmless
    from coremltools.models import datatypes
    from coremltools.models.neural_network import NeuralNetworkBuilder

    w = weights()
    b = NeuralNetworkBuilder([("image", datatypes.Array(3, SIZE, SIZE))], [("probs", datatypes.Array(len(LABELS)))],
                             mode="classifier")

    def conv(name, src, dst, o, i, stride=1):
        b.add_convolution(name, i, o, 3, 3, stride, stride, "same", 1, w[name + "_w"].transpose(2, 3, 1, 0),
                          w[name + "_b"], True, input_name=src, output_name=dst)

    def bn(name, src, dst, c):
        b.add_batchnorm(name, c, w[name + "_gamma"], w[name + "_beta"], w[name + "_mean"], w[name + "_var"],
                        input_name=src, output_name=dst, epsilon=1e-5)

    conv("stem", "image", "stem", 16, 3)
    bn("stem_bn", "stem", "stem_bn", 16)
    b.add_activation("stem_relu", "RELU", "stem_bn", "x0")
    conv("res1", "x0", "res1", 16, 16)
    bn("res1_bn", "res1", "res1_bn", 16)
    b.add_activation("res1_relu", "RELU", "res1_bn", "res1_relu")
    conv("res2", "res1_relu", "res2", 16, 16)
    bn("res2_bn", "res2", "res2_bn", 16)
    b.add_elementwise("skip", ["res2_bn", "x0"], "skip", "ADD")
    b.add_activation("skip_relu", "RELU", "skip", "x1")
    conv("down", "x1", "down", 32, 16, stride=2)
    b.add_activation("down_relu", "RELU", "down", "x2")
    b.add_pooling("gap", 0, 0, 0, 0, "AVERAGE", "VALID", "x2", "gap", is_global=True)
    b.add_flatten("flatten", 0, "gap", "flat")
    b.add_inner_product("fc", w["fc_w"], w["fc_b"], 32, len(LABELS), True, "flat", "logits")
    b.add_softmax("softmax", "logits", "probs")
    b.set_class_labels(LABELS, predicted_feature_name="label", prediction_blob="probs")
    b.set_pre_processing_parameters(image_input_names=["image"], is_bgr=False, red_bias=-0.5, green_bias=-0.5,
                                     blue_bias=-0.5, image_scale=1 / 255.0)
    spec = b.spec
    image = spec.description.input[0]
    image.type.imageType.width = SIZE
    image.type.imageType.height = SIZE
    image.type.imageType.colorSpace = image.type.imageType.ColorSpace.Value("RGB")
    spec.description.metadata.shortDescription = "Estuary example: tiny ResNet-style flower classifier " \
                                                 "(random weights)"
    return spec


def main(out=None):
    out = out or os.path.join(os.path.dirname(os.path.abspath(__file__)), "resnet_tiny.mlmodel")
    with open(out, "wb") as f:
        f.write(build().SerializeToString())
    print(f"wrote {out}")
    return out


if __name__ == "__main__":
    main(*sys.argv[1:2])
