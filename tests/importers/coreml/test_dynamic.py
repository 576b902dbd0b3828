"""Core ML NeuralNetwork models with flexible input shapes (docs/dynamic-shapes.md, docs/coreml.md):
shape ranges and image size ranges become dynamic dimensions (an unbounded range is bounded at
flexible.UNBOUNDED_MAX), enumerated shapes and image sizes compile one function each, and a layer
that needs fixed sizes refuses dynamic ones by name. Models are built with coremltools'
NeuralNetworkBuilder and flexible_shape_utils; oracles are numpy and torch."""
import os

import numpy as np
import pytest

import estuary
from estuary.base.errors import EstuaryError, RuntimeInputError
from estuary.importers import import_model
from estuary.importers.coreml.flexible import UNBOUNDED_MAX

pytest.importorskip("coremltools")
from coremltools.models import datatypes  # noqa: E402
from coremltools.models.neural_network import NeuralNetworkBuilder  # noqa: E402
from coremltools.models.neural_network import flexible_shape_utils as fsu  # noqa: E402

RNG = np.random.default_rng(0)
W_FC, B_FC = RNG.standard_normal((6, 8)).astype(np.float32), RNG.standard_normal(6).astype(np.float32)
W_CONV, B_CONV = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32), RNG.standard_normal(4).astype(np.float32)


def save(builder, tmp_path, name):
    path = os.path.join(str(tmp_path), name)
    with open(path, "wb") as f:
        f.write(builder.spec.SerializeToString())
    return path


def types(path, **kw):
    nn = import_model(path, **kw)
    try:
        return {n: str(s) for n, s in nn.inputs + nn.outputs}, nn.signature()
    finally:
        nn.close()


def sequence_model(tmp_path):
    """ND (EXACT_ARRAY_MAPPING): x [1, S, 8] with S in 1..64 -> innerProduct -> relu -> softmaxND."""
    b = NeuralNetworkBuilder([("x", datatypes.Array(1, 4, 8))], [("y", None)], disable_rank5_shape_mapping=True)
    b.add_inner_product("fc", W_FC, B_FC, 8, 6, True, "x", "h")
    b.add_activation("relu", "RELU", "h", "r")
    b.add_softmax_nd("softmax", "r", "y", axis=-1)
    fsu.set_multiarray_ndshape_range(b.spec, "x", [1, 1, 8], [1, 64, 8])
    return save(b, tmp_path, "sequence.mlmodel")


def image_model(tmp_path):
    """A BGR image (scaled, blue bias) -> 3x3 valid convolution -> relu -> 2x2 max pooling -> 2x
    nearest upsampling; height 8..64, width from 8 unbounded."""
    b = NeuralNetworkBuilder([("img", datatypes.Array(3, 16, 16))], [("y", None)])
    b.add_convolution("conv", 3, 4, 3, 3, 1, 1, "valid", 1, W_CONV.transpose(2, 3, 1, 0), B_CONV, True,
                      input_name="img", output_name="c")
    b.add_activation("relu", "RELU", "c", "r")
    b.add_pooling("pool", 2, 2, 2, 2, "MAX", "VALID", "r", "p")
    b.add_upsample("up", 2, 2, "p", "y")
    b.set_pre_processing_parameters(image_input_names=["img"], is_bgr=True, image_scale=1 / 255.0, blue_bias=-0.5)
    sizes = fsu.NeuralNetworkImageSizeRange()
    sizes.add_height_range((8, 64))
    sizes.add_width_range((8, -1))
    fsu.update_image_size_range(b.spec, "img", sizes)
    return save(b, tmp_path, "image.mlmodel")


def image_oracle(img):
    import torch

    F = torch.nn.functional
    x = torch.from_numpy(img / 255.0 + np.array([-0.5, 0, 0], np.float32)[:, None, None])[None]
    y = F.max_pool2d(F.conv2d(x, torch.from_numpy(W_CONV), torch.from_numpy(B_CONV)).relu(), 2)
    return F.interpolate(y, scale_factor=2, mode="nearest")[0].numpy()


def test_shape_range_is_a_dynamic_dimension(tmp_path):
    path = sequence_model(tmp_path)
    got, sig = types(path)
    assert got == {"x": "float32[1, x_1, 8]", "y": "float32[1, x_1, 6]"}
    assert sig["dims"] == {"symbols": {"x_1": [1, 64]}, "rules": []}
    assert types(path, shapes={"x": [1, 5, 8]})[0]["y"] == "float32[1, 5, 6]"  # --shape: static, as before
    with pytest.raises(EstuaryError, match="outside the model's shape ranges"):
        import_model(path, shapes={"x": [1, 65, 8]})
    model = estuary.load(estuary.compile(path))
    for n in (1, 5, 64):
        x = RNG.standard_normal((1, n, 8)).astype(np.float32)
        h = np.maximum(x.astype(np.float64) @ W_FC.T + B_FC, 0)
        e = np.exp(h - h.max(-1, keepdims=True))
        np.testing.assert_allclose(model.run({"x": x})["y"], e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-6)


def test_image_size_range_with_an_unbounded_width(tmp_path):
    path = image_model(tmp_path)
    got, sig = types(path)
    assert got == {"img": "float32[3, img_1, img_2]", "y": "float32[4, 2*(img_1//2) - 2, 2*(img_2//2) - 2]"}
    assert sig["dims"]["symbols"] == {"img_1": [8, 64], "img_2": [8, UNBOUNDED_MAX]}
    model = estuary.load(estuary.compile(path))
    for h, w in ((8, 8), (31, 20), (64, 100)):
        img = RNG.uniform(0, 255, (3, h, w)).astype(np.float32)
        np.testing.assert_allclose(model.run({"img": img})["y"], image_oracle(img), rtol=1e-5, atol=1e-5)
    with pytest.raises(RuntimeInputError, match=r"'img' dimension 1 \(img_1\) is 65, outside its bounds 8..64"):
        model.run({"img": np.zeros((3, 65, 8), np.float32)})


def _adder(tmp_path, a_shapes, b_shapes):
    b = NeuralNetworkBuilder([("a", datatypes.Array(*a_shapes[0])), ("b", datatypes.Array(*b_shapes[0]))],
                             [("y", None)], disable_rank5_shape_mapping=True)
    b.add_add_broadcastable("add", ["a", "b"], "y")
    fsu.add_multiarray_ndshape_enumeration(b.spec, "a", [tuple(s) for s in a_shapes[1:]])
    fsu.add_multiarray_ndshape_enumeration(b.spec, "b", [tuple(s) for s in b_shapes[1:]])
    return estuary.load(estuary.compile(save(b, tmp_path, "adder.mlmodel")))


def _check_adder(model, cases):
    for sa, sb in cases:
        a, b = RNG.standard_normal(sa).astype(np.float32), RNG.standard_normal(sb).astype(np.float32)
        np.testing.assert_array_equal(model.run({"a": a, "b": b})["y"], a + b)


def test_enumerated_shapes_compile_one_function_each(tmp_path):
    """Two inputs with as many enumerated shapes vary together (combined by index); the
    description's default shapes are the default function; other shapes are refused."""
    model = _adder(tmp_path, [(2, 3), (4, 3)], [(1, 3), (4, 3)])
    assert model.functions == ["main[a=2x3,b=1x3]", "main[a=4x3,b=4x3]"]
    assert model.default_function == "main[a=2x3,b=1x3]"
    _check_adder(model, [((2, 3), (1, 3)), ((4, 3), (4, 3))])
    with pytest.raises(RuntimeInputError, match=r"a \[4, 3\], b \[1, 3\] are not among the shapes .*: "
                                                r"a \[2, 3\], b \[1, 3\]; a \[4, 3\], b \[4, 3\]"):
        model.run({"a": np.zeros((4, 3), np.float32), "b": np.zeros((1, 3), np.float32)})


def test_enumerated_shapes_of_different_counts_combine_every_way(tmp_path):
    model = _adder(tmp_path, [(2, 3), (4, 3)], [(1, 3), (1, 1), (3,)])
    assert len(model.functions) == 6
    _check_adder(model, [((2, 3), (1, 3)), ((4, 3), (1, 1)), ((4, 3), (3,)), ((2, 3), (1, 1))])


def test_enumerated_image_sizes(tmp_path):
    b = NeuralNetworkBuilder([("img", datatypes.Array(1, 4, 5))], [("y", None)])
    b.add_activation("double", "LINEAR", "img", "y", params=[2.0, 0.0])
    b.set_pre_processing_parameters(image_input_names=["img"], is_bgr=False, image_scale=1.0)
    b.spec.description.input[0].type.imageType.colorSpace = 10  # GRAYSCALE
    fsu.add_enumerated_image_sizes(b.spec, "img", [fsu.NeuralNetworkImageSize(6, 7)])
    path = save(b, tmp_path, "sizes.mlmodel")
    model = estuary.load(estuary.compile(path))
    assert model.functions == ["main[img=1x4x5]", "main[img=1x6x7]"]
    for shape in ((1, 4, 5), (1, 6, 7)):
        img = RNG.uniform(0, 255, shape).astype(np.float32)
        np.testing.assert_array_equal(model.run({"img": img})["y"], 2 * img)


def test_a_layer_needing_fixed_sizes_names_itself(tmp_path):
    """SAME padding with stride 2 depends on the size's parity: the convolution layer refuses a
    dynamic size by name; an nn op taking fixed shapes only (gather_nd) refuses it, naming itself
    and the layer."""
    b = NeuralNetworkBuilder([("x", datatypes.Array(3, 16, 16))], [("y", None)])
    b.add_convolution("strided", 3, 4, 3, 3, 2, 2, "same", 1, W_CONV.transpose(2, 3, 1, 0), None, False,
                      input_name="x", output_name="y")
    fsu.update_multiarray_shape_range(b.spec, "x", fsu.NeuralNetworkMultiArrayShapeRange(
        {"C": (3, 3), "H": (8, 64), "W": (8, 64)}))
    path = save(b, tmp_path, "same.mlmodel")
    with pytest.raises(EstuaryError, match=r"layer 'strided' \(convolution\): does not take dynamic dimensions "
                                           r"here \(.*x_1.*\); compile for a fixed shape"):
        import_model(path)
    assert types(path, shapes={"x": [3, 16, 16]})[0]["y"] == "float32[4, 8, 8]"

    b = NeuralNetworkBuilder([("x", datatypes.Array(5, 4)), ("idx", datatypes.Array(2, 1))], [("y", None)],
                             disable_rank5_shape_mapping=True)
    b.add_gather_nd("pick", ["x", "idx"], "y")
    fsu.set_multiarray_ndshape_range(b.spec, "x", [1, 4], [16, 4])
    with pytest.raises(EstuaryError, match=r"nn.gather_nd does not take dynamic dimensions: operand 'input' is "
                                           r"float32\[x_0, 4\] \(x_0=1..16\).*Core ML layer 'pick' \(gatherND\)"):
        import_model(save(b, tmp_path, "gather_nd.mlmodel"))
