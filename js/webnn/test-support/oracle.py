"""Reference outputs for the JS tests: the same models built independently with onnx.helper and
run by onnxruntime. Reads {"model", "tensors": {name: {shape, data}}} on stdin, writes
{output: [values]} on stdout."""
import json
import sys

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper


def mobilenet(t):
    """conv 3x3/2 + batch norm + relu6, depthwise 3x3 + bias + residual add + relu, pointwise 1x1 +
    relu, global average pool, gemm, softmax."""
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("BatchNormalization", ["c1", "bn_scale", "bn_bias", "bn_mean", "bn_var"], ["n1"], epsilon=1e-5),
        helper.make_node("Clip", ["n1", "zero", "six"], ["r1"]),
        helper.make_node("Conv", ["r1", "wd", "bd"], ["d1"], pads=[1, 1, 1, 1], group=8),
        helper.make_node("Add", ["d1", "r1"], ["s1"]),
        helper.make_node("Relu", ["s1"], ["r2"]),
        helper.make_node("Conv", ["r2", "wp"], ["p1"]),
        helper.make_node("Relu", ["p1"], ["r3"]),
        helper.make_node("GlobalAveragePool", ["r3"], ["g1"]),
        helper.make_node("Flatten", ["g1"], ["f1"]),
        helper.make_node("Gemm", ["f1", "fc_w", "fc_b"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=1),
    ]
    consts = {"zero": np.float32(0), "six": np.float32(6)}
    return nodes, ["x"], ["probs"], consts


def transformer(t):
    """pre-norm single-head self-attention and a GELU feed-forward block, both residual."""
    d = t["wq"]["shape"][0]
    nodes = [
        helper.make_node("LayerNormalization", ["x", "ln1_g", "ln1_b"], ["h"], axis=-1, epsilon=1e-5),
        *[helper.make_node("MatMul", ["h", f"w{k}"], [f"{k}0"]) for k in "qkv"],
        *[helper.make_node("Add", [f"{k}0", f"b{k}"], [k]) for k in "qkv"],
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "kt"], ["s0"]),
        helper.make_node("Mul", ["s0", "scale"], ["s1"]),
        helper.make_node("Softmax", ["s1"], ["a"], axis=2),
        helper.make_node("MatMul", ["a", "v"], ["ctx"]),
        helper.make_node("MatMul", ["ctx", "wo"], ["o0"]),
        helper.make_node("Add", ["o0", "bo"], ["o1"]),
        helper.make_node("Add", ["x", "o1"], ["y1"]),
        helper.make_node("LayerNormalization", ["y1", "ln2_g", "ln2_b"], ["h2"], axis=-1, epsilon=1e-5),
        helper.make_node("MatMul", ["h2", "w_up"], ["u0"]),
        helper.make_node("Add", ["u0", "b_up"], ["u1"]),
        # GELU, exact form: 0.5 x (1 + erf(x / sqrt 2))
        helper.make_node("Div", ["u1", "sqrt2"], ["u2"]),
        helper.make_node("Erf", ["u2"], ["u3"]),
        helper.make_node("Add", ["u3", "one"], ["u4"]),
        helper.make_node("Mul", ["u1", "u4"], ["u5"]),
        helper.make_node("Mul", ["u5", "half"], ["u6"]),
        helper.make_node("MatMul", ["u6", "w_down"], ["m0"]),
        helper.make_node("Add", ["m0", "b_down"], ["m1"]),
        helper.make_node("Add", ["y1", "m1"], ["y"]),
    ]
    consts = {"scale": np.float32(1 / np.sqrt(d)), "sqrt2": np.float32(np.sqrt(2)), "one": np.float32(1),
              "half": np.float32(0.5)}
    return nodes, ["x"], ["y"], consts


def transformer_heads(t):
    """transformer() with its attention split into heads: q, k, v reshaped to [1, seq, heads, dh]
    and transposed to [1, heads, seq, dh]; the heads' results transposed back and merged."""
    nodes, inputs, outputs, consts = transformer(t)
    seq, d = t["x"]["shape"][1:]
    heads = int(t["heads"]["data"][0])
    dh = d // heads
    split = [n for k in "qkv" for n in (
        helper.make_node("Reshape", [k, "split_shape"], [f"{k}4"]),
        helper.make_node("Transpose", [f"{k}4"], [f"{k}h"], perm=[0, 2, 1, 3]))]
    attention = [
        *split,
        helper.make_node("Transpose", ["kh"], ["kt"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["qh", "kt"], ["s0"]),
        helper.make_node("Mul", ["s0", "scale"], ["s1"]),
        helper.make_node("Softmax", ["s1"], ["a"], axis=3),
        helper.make_node("MatMul", ["a", "vh"], ["ctx_h"]),
        helper.make_node("Transpose", ["ctx_h"], ["ctx_t"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ctx_t", "merge_shape"], ["ctx"]),
    ]
    start = next(i for i, n in enumerate(nodes) if n.op_type == "Transpose")
    end = next(i for i, n in enumerate(nodes) if n.output[0] == "ctx")
    consts = {**consts, "scale": np.float32(1 / np.sqrt(dh)),
              "split_shape": np.array([1, seq, heads, dh], np.int64), "merge_shape": np.array([1, seq, d], np.int64)}
    return nodes[:start] + attention + nodes[end + 1:], inputs, outputs, consts


def main():
    req = json.load(sys.stdin)
    t = req["tensors"]
    models = {"mobilenet": mobilenet, "transformer": transformer, "transformer_heads": transformer_heads}
    nodes, inputs, outputs, consts = models[req["model"]](t)
    arrays = {k: np.asarray(v["data"], dtype=np.float32).reshape(v["shape"]) for k, v in t.items()}
    used = {name for n in nodes for name in n.input}
    inits = [numpy_helper.from_array(np.asarray(v), k)
             for k, v in {**{k: a for k, a in arrays.items() if k not in inputs}, **consts}.items() if k in used]
    graph = helper.make_graph(
        nodes, req["model"], [helper.make_tensor_value_info(k, TensorProto.FLOAT, arrays[k].shape) for k in inputs],
        [helper.make_empty_tensor_value_info(k) for k in outputs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    results = sess.run(outputs, {k: arrays[k] for k in inputs})
    json.dump({k: np.asarray(r, np.float64).reshape(-1).tolist() for k, r in zip(outputs, results)}, sys.stdout)


if __name__ == "__main__":
    main()
