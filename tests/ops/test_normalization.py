"""batch / instance / layer normalization vs onnxruntime (composed where ONNX's axes differ)."""
import numpy as np
import pytest
from onnx import helper

from helpers import assert_accumulated, graph, op, run_graph, run_onnx


def _params(rng, c):
    return (rng.standard_normal(c).astype(np.float32), (rng.random(c) + 0.5).astype(np.float32),
            rng.standard_normal(c).astype(np.float32), rng.standard_normal(c).astype(np.float32))


@pytest.mark.parametrize("axis", [1, 3])
@pytest.mark.parametrize("with_affine", [True, False])
def test_batch_normalization(axis, with_affine, rng):
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    c = x.shape[axis]
    mean, var, scale, bias = _params(rng, c)
    consts = {"mean": mean, "var": var}
    options = {"axis": axis, "epsilon": 1e-3}
    if with_affine:
        consts.update(scale=scale, bias=bias)
        options.update(scale="scale", bias="bias")
    doc = graph({"x": x}, [op("batchNormalization", ("input", "x"), ("mean", "mean"), ("variance", "var"),
                              **options)], ["y"], consts)
    got = run_graph(doc, {"x": x})["y"]
    s, b = (scale, bias) if with_affine else (np.ones(c, np.float32), np.zeros(c, np.float32))
    perm = [0, axis] + [i for i in range(1, 4) if i != axis]  # ONNX normalizes axis 1
    inv = list(np.argsort(perm))
    ref = run_onnx([helper.make_node("Transpose", ["x"], ["t"], perm=perm),
                    helper.make_node("BatchNormalization", ["t", "s", "b", "m", "v"], ["u"], epsilon=1e-3),
                    helper.make_node("Transpose", ["u"], ["y"], perm=inv)],
                   {"x": x}, [("y", np.float32, None)], initializers={"s": s, "b": b, "m": mean, "v": var})["y"]
    assert_accumulated(got, ref, 4)


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_instance_normalization(layout, rng):
    x = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
    _, _, scale, bias = _params(rng, 3)
    xin = x.transpose(0, 2, 3, 1) if layout == "nhwc" else x
    doc = graph({"x": xin}, [op("instanceNormalization", ("input", "x"), scale="s", bias="b", layout=layout,
                                epsilon=1e-4)], ["y"], {"s": scale, "b": bias})
    got = run_graph(doc, {"x": xin})["y"]
    ref = run_onnx([helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=1e-4)], {"x": x},
                   [("y", np.float32, None)], initializers={"s": scale, "b": bias})["y"]
    if layout == "nhwc":
        ref = ref.transpose(0, 2, 3, 1)
    assert_accumulated(got, ref, 30)


def _ln_oracle(x, axes, scale, bias, eps):
    """ONNX ops composing layer normalization over arbitrary axes (ONNX's own op needs trailing axes)."""
    ax = np.array(axes, np.int64)
    nodes = [helper.make_node("ReduceMean", ["x", "ax"], ["m"], keepdims=1),
             helper.make_node("Sub", ["x", "m"], ["d"]),
             helper.make_node("Mul", ["d", "d"], ["d2"]),
             helper.make_node("ReduceMean", ["d2", "ax"], ["v"], keepdims=1),
             helper.make_node("Add", ["v", "eps"], ["ve"]),
             helper.make_node("Sqrt", ["ve"], ["sd"]),
             helper.make_node("Div", ["d", "sd"], ["n"]),
             helper.make_node("Mul", ["n", "s"], ["ns"]),
             helper.make_node("Add", ["ns", "b"], ["y"])]
    shape = [x.shape[i] if i in axes else 1 for i in range(x.ndim)]
    order = np.argsort(axes)
    init = {"ax": ax, "eps": np.float32(eps), "s": scale.transpose(order).reshape(shape),
            "b": bias.transpose(order).reshape(shape)}
    return run_onnx(nodes, {"x": x}, [("y", np.float32, None)], initializers=init, opset=18)["y"]


@pytest.mark.parametrize("axes", [None, [2], [0, 2], [2, 1]])
def test_layer_normalization(axes, rng):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    ax = [1, 2] if axes is None else axes
    scale = rng.standard_normal([x.shape[a] for a in ax]).astype(np.float32)
    bias = rng.standard_normal([x.shape[a] for a in ax]).astype(np.float32)
    options = {"scale": "s", "bias": "b", "epsilon": 1e-5} | ({"axes": axes} if axes is not None else {})
    doc = graph({"x": x}, [op("layerNormalization", ("input", "x"), **options)], ["y"], {"s": scale, "b": bias})
    got = run_graph(doc, {"x": x})["y"]
    assert_accumulated(got, _ln_oracle(x, ax, scale, bias, 1e-5), 12)


def test_layer_normalization_trailing_matches_onnx_op_and_float16(rng):
    x = rng.standard_normal((4, 8)).astype(np.float16)
    g, b = np.ones(8, np.float16), np.zeros(8, np.float16)
    doc = graph({"x": x}, [op("layerNormalization", ("input", "x"), scale="g", bias="b")], ["y"], {"g": g, "b": b})
    got = run_graph(doc, {"x": x})["y"]
    ref = run_onnx([helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=1)],
                   {"x": x.astype(np.float32)}, [("y", np.float32, None)],
                   initializers={"g": g.astype(np.float32), "b": b.astype(np.float32)})["y"]
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float32), ref, rtol=2e-3, atol=2e-3)
