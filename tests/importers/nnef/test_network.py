"""A converted network: an ONNX residual conv net (conv, batchnorm, relu, maxpool, add, average pool,
flatten, gemm, softmax; 16 layers) converted to NNEF by nnef-tools, as a folder and as a .tgz,
compiled by Estuary and compared with onnxruntime on the source ONNX model."""
import subprocess
import sys

import numpy as np
import pytest

from helpers import assert_accumulated
from tests.importers.nnef.util import run

pytest.importorskip("nnef_tools")
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def _onnx_model():
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    consts = {}

    def conv(name, cin, cout, k):
        consts[name + "_w"] = rng.standard_normal((cout, cin, k, k)) / np.sqrt(cin * k * k)
        consts[name + "_b"] = 0.1 * rng.standard_normal(cout)
        return [name + "_w", name + "_b"]

    def bn(name, c):
        consts.update({name + "_s": rng.uniform(0.5, 1.5, c), name + "_o": 0.1 * rng.standard_normal(c),
                       name + "_m": 0.1 * rng.standard_normal(c), name + "_v": rng.uniform(0.5, 2.0, c)})
        return [name + "_s", name + "_o", name + "_m", name + "_v"]

    n = helper.make_node
    nodes = [
        n("Conv", ["x"] + conv("c1", 3, 8, 3), ["c1"], pads=[1, 1, 1, 1]),
        n("BatchNormalization", ["c1"] + bn("bn1", 8), ["b1"], epsilon=1e-3),
        n("Relu", ["b1"], ["r1"]),
        n("MaxPool", ["r1"], ["p1"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        n("Conv", ["p1"] + conv("c2", 8, 8, 3), ["c2"], pads=[1, 1, 1, 1]),
        n("BatchNormalization", ["c2"] + bn("bn2", 8), ["b2"]),
        n("Relu", ["b2"], ["r2"]),
        n("Conv", ["r2"] + conv("c3", 8, 8, 3), ["c3"], pads=[1, 1, 1, 1]),
        n("BatchNormalization", ["c3"] + bn("bn3", 8), ["b3"]),
        n("Add", ["b3", "p1"], ["a3"]),
        n("Relu", ["a3"], ["r3"]),
        n("Conv", ["r3"] + conv("c4", 8, 16, 3), ["c4"], pads=[1, 1, 1, 1], strides=[2, 2]),
        n("Relu", ["c4"], ["r4"]),
        n("AveragePool", ["r4"], ["p4"], kernel_shape=[2, 2], strides=[2, 2]),
        n("Flatten", ["p4"], ["f"], axis=1),
        n("Gemm", ["f", "fc_w", "fc_b"], ["g"], transB=1),
        n("Softmax", ["g"], ["y"], axis=1),
    ]
    consts["fc_w"] = rng.standard_normal((10, 64)) / 8
    consts["fc_b"] = 0.1 * rng.standard_normal(10)
    inits = [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in consts.items()]
    graph = helper.make_graph(nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("r3", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("network")
    model = _onnx_model()
    src = tmp / "net.onnx"
    onnx.save(model, str(src))
    paths = {}
    for form, extra in (("folder", []), ("tgz", ["--compress"])):
        dst = tmp / f"{form}.nnef"
        subprocess.run([sys.executable, "-m", "nnef_tools.convert", "--input-format", "onnx", "--output-format",
                        "nnef", "--input-model", str(src), "--output-model", str(dst)] + extra,
                       check=True, capture_output=True)
        paths[form] = str(dst) + (".tgz" if form == "tgz" else "")
    x = np.random.default_rng(4).standard_normal((2, 3, 16, 16)).astype(np.float32)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = sess.run(["y", "r3"], {"x": x})
    return paths, x, expected


@pytest.mark.parametrize("form", ["folder", "tgz"])
def test_converted_network_matches_onnxruntime(converted, form):
    paths, x, (probs, features) = converted
    got = run(paths[form], {"external1": x})
    assert len(got) == 2
    by_shape = {tuple(v.shape): v for v in got.values()}
    assert_accumulated(by_shape[features.shape], features, 3 * 3 * 8 * 3)
    assert_accumulated(by_shape[probs.shape], probs, 3 * 3 * 8 * 4 + 64)
    np.testing.assert_allclose(by_shape[probs.shape].sum(axis=1), 1.0, rtol=1e-5)


LAYERS = {  # ONNX output -> accumulation length for the tolerance
    "lrn": 5, "apc": 9, "api": 9, "gap": 36, "gmp": 0, "mpd": 0, "lk": 1, "pr": 1, "sg": 2, "el": 2, "sp": 2,
    "rz": 4, "rn": 0, "sm": 4, "l2": 6,
}


def _layers_model():
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(8)
    inits = [numpy_helper.from_array(rng.uniform(0.1, 0.4, (4, 1, 1)).astype(np.float32), "slope"),
             numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")]
    n = helper.make_node
    nodes = [
        n("LRN", ["x"], ["lrn"], size=3, alpha=0.2, beta=0.75, bias=1.5),
        n("AveragePool", ["x"], ["apc"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1),
        n("AveragePool", ["x"], ["api"], kernel_shape=[3, 3], pads=[1, 0, 1, 2], strides=[2, 2]),
        n("GlobalAveragePool", ["x"], ["gap"]), n("GlobalMaxPool", ["x"], ["gmp"]),
        n("MaxPool", ["x"], ["mpd"], kernel_shape=[2, 2], dilations=[2, 1], pads=[1, 0, 0, 1]),
        n("LeakyRelu", ["x"], ["lk"], alpha=0.1), n("PRelu", ["x", "slope"], ["pr"]),
        n("Sigmoid", ["x"], ["sg"]), n("Elu", ["x"], ["el"]), n("Softplus", ["x"], ["sp"]),
        n("Resize", ["x", "", "scales"], ["rz"], mode="linear", coordinate_transformation_mode="half_pixel"),
        n("Resize", ["x", "", "scales"], ["rn"], mode="nearest", coordinate_transformation_mode="asymmetric",
          nearest_mode="floor"),
        n("Softmax", ["x"], ["sm"], axis=1),
        n("LpNormalization", ["x"], ["l2"], axis=2, p=2),
    ]
    graph = helper.make_graph(nodes, "layers", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 6, 6])],
                              [helper.make_tensor_value_info(k, TensorProto.FLOAT, None) for k in LAYERS], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def test_converted_layers_match_onnxruntime(tmp_path):
    """Pooling, normalization, activation and resize layers through nnef-tools (their NNEF forms are
    avg/max_pool with 'constant'/'ignore' borders, local_response_normalization, multilinear and
    nearest upsampling, the activation fragments, l2_normalization, softmax)."""
    model = _layers_model()
    src, dst = tmp_path / "layers.onnx", tmp_path / "layers.nnef"
    onnx.save(model, str(src))
    subprocess.run([sys.executable, "-m", "nnef_tools.convert", "--input-format", "onnx", "--output-format", "nnef",
                    "--input-model", str(src), "--output-model", str(dst)], check=True, capture_output=True)
    x = np.random.default_rng(9).standard_normal((2, 4, 6, 6)).astype(np.float32)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = dict(zip(LAYERS, sess.run(list(LAYERS), {"x": x})))
    got = list(run(str(dst), {"external1": x}).values())
    assert len(got) == len(LAYERS)
    for (name, n), value in zip(LAYERS.items(), got):
        if n == 0:
            np.testing.assert_array_equal(value, expected[name], err_msg=name)
        else:
            assert_accumulated(value, expected[name], n)
