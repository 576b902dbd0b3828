"""Core ML model kinds, preprocessing, image layouts, weight encodings, flexible shapes and
loader errors. Oracles: float64 numpy of the spec's formulas."""
import numpy as np
import pytest

pytest.importorskip("coremltools")
from coremltools.models import datatypes  # noqa: E402
from coremltools.models.neural_network import NeuralNetworkBuilder  # noqa: E402
from coremltools.proto import Model_pb2  # noqa: E402

import estuary  # noqa: E402
from tests.importers.coreml.util import run, save  # noqa: E402
from estuary.base.errors import EstuaryError, ModelImportError, UnsupportedOpError  # noqa: E402
from helpers import assert_accumulated, assert_ulp  # noqa: E402


def _image(spec, index, w, h, color):
    t = spec.description.input[index].type.imageType
    t.width, t.height = w, h
    t.colorSpace = t.ColorSpace.Value(color)


def test_images_and_preprocessing(tmp_path, rng):
    """BGR + scaler, grayscale + scaler, RGB + mean image; each passed through an identity-like layer."""
    b = NeuralNetworkBuilder([("bgr", datatypes.Array(3, 4, 5)), ("gray", datatypes.Array(1, 4, 5)),
                              ("rgb", datatypes.Array(3, 4, 5))], [("o1", None), ("o2", None), ("o3", None)])
    for i, n in enumerate(("bgr", "gray", "rgb")):
        b.add_activation(f"id{i}", "LINEAR", n, f"o{i + 1}", params=[1.0, 0.0])
    b.set_pre_processing_parameters(image_input_names=["bgr", "gray"], is_bgr={"bgr": True, "gray": False},
                                     red_bias={"bgr": 1.0}, green_bias={"bgr": 2.0}, blue_bias={"bgr": 3.0},
                                     gray_bias={"gray": -4.0}, image_scale={"bgr": 0.5, "gray": 0.25})
    mean = rng.uniform(0, 50, (3, 4, 5)).astype(np.float32)
    pre = b.spec.neuralNetwork.preprocessing.add()
    pre.featureName = "rgb"
    pre.meanImage.meanImage.extend(mean.reshape(-1).tolist())
    _image(b.spec, 0, 5, 4, "BGR")
    _image(b.spec, 1, 5, 4, "GRAYSCALE")
    _image(b.spec, 2, 5, 4, "RGB")
    feeds = {k: rng.uniform(0, 255, s).astype(np.float32) for k, s in
             (("bgr", (3, 4, 5)), ("gray", (1, 4, 5)), ("rgb", (3, 4, 5)))}
    got = run(save(b, tmp_path), feeds)
    f = {k: v.astype(np.float64) for k, v in feeds.items()}
    assert_ulp(got["o1"], (0.5 * f["bgr"] + np.array([3.0, 2.0, 1.0]).reshape(3, 1, 1)).astype(np.float32), 1)
    assert_ulp(got["o2"], (0.25 * f["gray"] - 4.0).astype(np.float32), 1)
    assert_ulp(got["o3"], (f["rgb"] - mean).astype(np.float32), 0)


def test_classifier_int_labels_and_regressor(tmp_path, rng):
    x = rng.standard_normal(3).astype(np.float32)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    b = NeuralNetworkBuilder([("x", datatypes.Array(3))], [("scores", None)], mode="classifier")
    b.add_inner_product("fc", w, None, 3, 4, False, "x", "logits")
    b.add_softmax("sm", "logits", "scores")
    b.set_class_labels([10, 20, 30, 40], predicted_feature_name="klass", prediction_blob="scores")
    got = run(save(b, tmp_path, "cls.mlmodel"), {"x": x})
    logits = w.astype(np.float64) @ x
    probs = np.exp(logits) / np.exp(logits).sum()
    assert_accumulated(got["scores"], probs.astype(np.float32), 8)
    assert got["klass"].dtype == np.int64 and got["klass"].tolist() == [[10, 20, 30, 40][int(np.argmax(probs))]]

    r = NeuralNetworkBuilder([("x", datatypes.Array(3))], [("y", datatypes.Array(4))], mode="regressor")
    r.add_inner_product("fc", w, None, 3, 4, False, "x", "y")
    got = run(save(r, tmp_path, "reg.mlmodel"), {"x": x})
    assert got["y"].shape == (4,)
    assert_accumulated(got["y"], logits.astype(np.float32), 3)


def test_weight_encodings(tmp_path, rng):
    """float16, raw float32, 8-bit and 3-bit linear (per channel) and 2-bit lookup-table weights."""
    x = rng.standard_normal(6).astype(np.float32)
    names = ["f16", "raw", "lin8", "lin3", "lut2"]
    b = NeuralNetworkBuilder([("x", datatypes.Array(6))], [(n, None) for n in names])
    expect = {}
    for n in names:
        b.add_inner_product(n, np.zeros((4, 6), np.float32), None, 6, 4, False, "x", n)
        wp = b.spec.neuralNetwork.layers[-1].innerProduct.weights
        wp.Clear()
        if n == "f16":
            w = rng.standard_normal((4, 6)).astype(np.float16)
            wp.float16Value = w.astype("<f2").tobytes()
            expect[n] = w.astype(np.float64)
        elif n == "raw":
            w = rng.standard_normal((4, 6)).astype(np.float32)
            wp.rawValue = w.astype("<f4").tobytes()
            expect[n] = w.astype(np.float64)
        else:
            bits = {"lin8": 8, "lin3": 3, "lut2": 2}[n]
            q = rng.integers(0, 2 ** bits, (4, 6))
            packed = "".join(format(int(v), f"0{bits}b") for v in q.reshape(-1))  # MSB first
            packed += "0" * (-len(packed) % 8)
            wp.rawValue = bytes(int(packed[i:i + 8], 2) for i in range(0, len(packed), 8))
            wp.quantization.numberOfBits = bits
            if n == "lut2":
                table = np.float32([-1.5, -0.25, 0.5, 2.0])
                wp.quantization.lookupTableQuantization.floatValue.extend(table.tolist())
                expect[n] = table[q].astype(np.float64)
            else:
                scale = rng.uniform(0.01, 0.1, 4).astype(np.float32)
                bias = rng.standard_normal(4).astype(np.float32)
                wp.quantization.linearQuantization.scale.extend(scale.tolist())
                wp.quantization.linearQuantization.bias.extend(bias.tolist())
                expect[n] = scale.reshape(4, 1).astype(np.float64) * q + bias.reshape(4, 1)
    got = run(save(b, tmp_path), {"x": x})
    for n in names:
        assert got[n].shape == (4, 1, 1)  # an undeclared rank-5 output comes back as [C, H, W]
        assert_accumulated(got[n].reshape(4), (expect[n] @ x.astype(np.float64)).astype(np.float32), 6)


def test_flexible_shapes(tmp_path, rng):
    from coremltools.models.neural_network import flexible_shape_utils as fsu

    b = NeuralNetworkBuilder([("x", datatypes.Array(2, 3, 4))], [("y", None)])
    b.add_activation("relu", "RELU", "x", "y")
    spec = b.spec
    fsu.add_enumerated_multiarray_shapes(spec, "x", [fsu.NeuralNetworkMultiArrayShape(2, 5, 6)])
    path = save(b, tmp_path)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    np.testing.assert_array_equal(run(path, {"x": x})["y"], np.maximum(x, 0))  # the default shape
    x = rng.standard_normal((2, 5, 6)).astype(np.float32)
    np.testing.assert_array_equal(run(path, {"x": x}, shapes={"x": [2, 5, 6]})["y"], np.maximum(x, 0))


def _simple(tmp_path, name="m.mlmodel"):
    b = NeuralNetworkBuilder([("x", datatypes.Array(3))], [("y", None)])
    b.add_activation("relu", "RELU", "x", "y")
    return b, save(b, tmp_path, name)


def test_loader_errors(tmp_path):
    b, path = _simple(tmp_path)
    data = open(path, "rb").read()
    cases = {"truncated.mlmodel": data[:len(data) // 2], "garbage.mlmodel": b"\x08\x01\xff\xff\xff" * 7,
             "empty.mlmodel": b""}
    for name, blob in cases.items():
        (tmp_path / name).write_bytes(blob)
        with pytest.raises(ModelImportError, match=name.split(".")[0] and "Core ML|empty"):
            estuary.importers.import_model(str(tmp_path / name))
    spec = Model_pb2.Model()
    spec.ParseFromString(data)
    spec.specificationVersion = 99
    (tmp_path / "v99.mlmodel").write_bytes(spec.SerializeToString())
    with pytest.raises(ModelImportError, match="specification version 99"):
        estuary.importers.import_model(str(tmp_path / "v99.mlmodel"))
    pipe = Model_pb2.Model()
    pipe.specificationVersion = 4
    pipe.pipeline.models.add().CopyFrom(spec)
    (tmp_path / "pipe.mlmodel").write_bytes(pipe.SerializeToString())
    with pytest.raises(ModelImportError, match="unsupported Core ML model type 'pipeline'"):
        estuary.importers.import_model(str(tmp_path / "pipe.mlmodel"))
    trees = Model_pb2.Model()
    trees.specificationVersion = 1
    trees.treeEnsembleClassifier.SetInParent()
    (tmp_path / "trees.mlmodel").write_bytes(trees.SerializeToString())
    with pytest.raises(ModelImportError, match="treeEnsembleClassifier"):
        estuary.importers.import_model(str(tmp_path / "trees.mlmodel"))


def test_custom_layer_error(tmp_path):
    b = NeuralNetworkBuilder([("x", datatypes.Array(3))], [("y", None)])
    b.add_custom("my_layer", ["x"], ["y"], custom_proto_spec=None)
    b.spec.neuralNetwork.layers[-1].custom.className = "MyFancyOp"
    path = save(b, tmp_path)
    with pytest.raises(UnsupportedOpError, match="MyFancyOp") as e:
        estuary.importers.import_model(path)
    assert "my_layer" in str(e.value) and path in str(e.value)


def test_layer_errors_name_the_layer(tmp_path):
    b = NeuralNetworkBuilder([("x", datatypes.Array(4, 3, 3))], [("y", None)])
    b.add_split("bad_split", "x", ["y", "z", "w"])  # 4 channels do not split in 3
    with pytest.raises(EstuaryError, match="bad_split.*split.*4 channels"):
        estuary.importers.import_model(save(b, tmp_path))


def test_image_shape_mappings_and_size_override(tmp_path, rng):
    """ND model: RANK4_IMAGE_MAPPING gives [1, C, H, W] blobs; a flexible image size set by shapes=."""
    from coremltools.models.neural_network import flexible_shape_utils as fsu

    b = NeuralNetworkBuilder([("img", datatypes.Array(3, 4, 5))], [("y", None)], disable_rank5_shape_mapping=True)
    b.add_activation("id", "LINEAR", "img", "y", params=[2.0, 0.0])
    _image(b.spec, 0, 5, 4, "RGB")
    b.spec.neuralNetwork.imageInputShapeMapping = 1  # RANK4_IMAGE_MAPPING
    fsu.add_enumerated_image_sizes(b.spec, "img", [fsu.NeuralNetworkImageSize(6, 7)])
    path = save(b, tmp_path)
    img = rng.uniform(0, 255, (3, 6, 7)).astype(np.float32)
    got = run(path, {"img": img}, shapes={"img": [3, 6, 7]})
    assert got["y"].shape == (1, 3, 6, 7)
    np.testing.assert_array_equal(got["y"][0], 2 * img)


def test_reading_a_model_does_not_start_coremltools(tmp_path):
    """Only coremltools' generated schema is loaded: its package start-up (converters, torch when
    installed) costs seconds per compile and is not needed to read a spec."""
    import subprocess
    import sys

    _, path = _simple(tmp_path)
    code = ("import sys; from estuary.importers import import_model; import_model(sys.argv[1]); "
            "print(sorted(m for m in sys.modules if m == 'coremltools' or m.startswith(('coremltools.', 'torch'))))")
    r = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "[]"


def test_coremltools_message_objects_import(tmp_path):
    b, path = _simple(tmp_path)
    spec = Model_pb2.Model.FromString(open(path, "rb").read())  # coremltools' own message class
    got = estuary.load(estuary.compile(spec)).run({"x": np.array([-1, 0, 2], np.float32)})["y"]
    np.testing.assert_array_equal(got.ravel(), [0, 0, 2])


def test_metadata_in_signature_and_info(tmp_path, capsys):
    """A NeuralNetwork model's metadata travels in the artefact's signature; `estuary info` shows it."""
    from estuary.cli import main as cli_main

    b = NeuralNetworkBuilder([("x", datatypes.Array(3))], [("y", datatypes.Array(3))])
    b.add_activation("relu", "RELU", "x", "y")
    meta = b.spec.description.metadata
    meta.author, meta.shortDescription, meta.versionString, meta.license = "A. Author", "one relu", "3.1", "MIT"
    meta.userDefined["trained_on"] = "nothing"
    path = save(b, tmp_path)
    model = estuary.load(estuary.compile(path))
    assert model.metadata == {"author": "A. Author", "short_description": "one relu", "version": "3.1",
                              "license": "MIT", "user_defined": {"trained_on": "nothing"}}
    assert cli_main(["info", path]) == 0
    text = capsys.readouterr().out
    assert "author: A. Author" in text and "metadata trained_on: nothing" in text and "input  x: float32[3]" in text
