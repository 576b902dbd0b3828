"""The oracle of the dynamic-shape tests: a pre-norm transformer encoder block as an ONNX graph
whose sequence length is the dim_param "seq", run by onnxruntime at any length, and its weights.

    x [1, seq, D], mask [1, seq] (additive, 0 or -1e4)
    h = LayerNorm(x); q, k, v = h Wq + bq, ...; heads split as [1, seq, H, D/H] -> [1, H, seq, D/H]
    a = softmax(q k^T / sqrt(D/H) + mask) v; y1 = x + merge(a) Wo + bo
    y = y1 + gelu(LayerNorm(y1) W1 + b1) W2 + b2

`heads=1` keeps attention 3-D (no reshape into heads). The WebNN forms are written by each test
(JSON document, Python builder, JavaScript) from the same description, independently of this.
"""
import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

D, FF = 32, 64


def weights(seed=5):
    rng = np.random.default_rng(seed)

    def w(*shape, lo=-0.3, hi=0.3):
        return rng.uniform(lo, hi, shape).astype(np.float32)

    return {"ln1_g": w(D, lo=0.8, hi=1.2), "ln1_b": w(D, lo=-0.1, hi=0.1), "wq": w(D, D), "bq": w(D), "wk": w(D, D),
            "bk": w(D), "wv": w(D, D), "bv": w(D), "wo": w(D, D), "bo": w(D), "ln2_g": w(D, lo=0.8, hi=1.2),
            "ln2_b": w(D, lo=-0.1, hi=0.1), "w1": w(D, FF), "b1": w(FF), "w2": w(FF, D), "b2": w(D)}


def session(w, heads):
    """An onnxruntime session of the block (inputs x and mask with the dim_param seq; output y)."""
    dh = D // heads
    nodes = [helper.make_node("LayerNormalization", ["x", "ln1_g", "ln1_b"], ["h"], axis=-1, epsilon=1e-5)]
    for k in "qkv":
        nodes += [helper.make_node("MatMul", ["h", f"w{k}"], [f"{k}0"]), helper.make_node("Add", [f"{k}0", f"b{k}"], [k])]
        if heads > 1:
            nodes += [helper.make_node("Reshape", [k, "split"], [f"{k}4"]),
                      helper.make_node("Transpose", [f"{k}4"], [f"{k}h"], perm=[0, 2, 1, 3])]
        else:
            nodes.append(helper.make_node("Identity", [k], [f"{k}h"]))
    perm = [0, 1, 3, 2] if heads > 1 else [0, 2, 1]
    nodes += [
        helper.make_node("Transpose", ["kh"], ["kt"], perm=perm),
        helper.make_node("MatMul", ["qh", "kt"], ["s0"]),
        helper.make_node("Mul", ["s0", "scale"], ["s1"]),
        helper.make_node("Reshape", ["mask", "mask_shape"], ["m4"]),
        helper.make_node("Add", ["s1", "m4"], ["s2"]),
        helper.make_node("Softmax", ["s2"], ["a"], axis=-1),
        helper.make_node("MatMul", ["a", "vh"], ["ctx_h"]),
    ]
    if heads > 1:
        nodes += [helper.make_node("Transpose", ["ctx_h"], ["ctx_t"], perm=[0, 2, 1, 3]),
                  helper.make_node("Reshape", ["ctx_t", "merge"], ["ctx"])]
    else:
        nodes.append(helper.make_node("Identity", ["ctx_h"], ["ctx"]))
    nodes += [
        helper.make_node("MatMul", ["ctx", "wo"], ["o0"]), helper.make_node("Add", ["o0", "bo"], ["o1"]),
        helper.make_node("Add", ["x", "o1"], ["y1"]),
        helper.make_node("LayerNormalization", ["y1", "ln2_g", "ln2_b"], ["h2"], axis=-1, epsilon=1e-5),
        helper.make_node("MatMul", ["h2", "w1"], ["u0"]), helper.make_node("Add", ["u0", "b1"], ["u1"]),
        helper.make_node("Gelu", ["u1"], ["u2"]),
        helper.make_node("MatMul", ["u2", "w2"], ["m0"]), helper.make_node("Add", ["m0", "b2"], ["m1"]),
        helper.make_node("Add", ["y1", "m1"], ["y"]),
    ]
    consts = {**w, "scale": np.float32(1 / np.sqrt(dh)), "split": np.array([1, -1, heads, dh], np.int64),
              "merge": np.array([1, -1, D], np.int64),
              "mask_shape": np.array([1, 1, 1, -1] if heads > 1 else [1, 1, -1], np.int64)}
    graph = helper.make_graph(
        nodes, "block", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "seq", D]),
                         helper.make_tensor_value_info("mask", TensorProto.FLOAT, [1, "seq"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "seq", D])],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def feeds(n, seed=0):
    """Inputs of length n: x uniform in [-2, 2), the mask hiding the last position when n > 1."""
    rng = np.random.default_rng(seed + n)
    mask = np.zeros((1, n), np.float32)
    if n > 1:
        mask[0, -1] = -1e4
    return {"x": rng.uniform(-2, 2, (1, n, D)).astype(np.float32), "mask": mask}
