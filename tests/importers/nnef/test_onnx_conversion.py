"""NNEF primitives in a model converted from ONNX by nnef-tools, against onnxruntime on the source ONNX.

Covers conv (asymmetric padding, stride, dilation, groups, bias), deconv, pad (reflect/replicate),
strided slice, tile, transpose, reshape (0 / -1), linear, reduces, argmax, split/concat,
element-wise ops, select, clamp and matmul in one compiled graph."""
import subprocess
import sys

import numpy as np
import pytest

from helpers import assert_accumulated, assert_exact
from tests.importers.nnef.util import run

pytest.importorskip("nnef_tools")
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

OUTPUTS = {  # ONNX output -> (NNEF output written by nnef-tools, accumulation length or 0 = exact)
    "dc": ("deconv1", 8), "pr": ("pad1", 0), "pe": ("pad2", 0), "tl": ("tile1", 0), "gm": ("linear1", 36),
    "rm": ("mean_reduce1", 25), "rx": ("max_reduce1", 0), "am": ("argmax_reduce1", 0), "cc": ("concat1", 18),
    "wh": ("select1", 2), "fl": ("floor1", 0), "sg": ("sign1", 0), "mn": ("min1", 0), "cl": ("clamp1", 0),
    "mm": ("matmul1", 5),
}


def _onnx_model():
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    consts = {"w": rng.standard_normal((6, 2, 3, 3)), "b": rng.standard_normal(6),
              "wt": rng.standard_normal((6, 2, 2, 2)),
              "g": rng.standard_normal((5, 36)), "gb": rng.standard_normal(5), "half": np.array(0.5),
              "lo": np.array(-0.5), "hi": np.array(0.7)}
    inits = [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in consts.items()]
    ints = {"shape": [2, -1], "starts": [1, 0], "ends": [4, 5], "axes": [2, 3], "steps": [1, 2],
            "pads": [0, 0, 1, 2, 0, 0, 2, 1], "reps": [1, 2, 1, 1], "split": [2, 4]}
    inits += [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in ints.items()]
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w", "b"], ["c"], pads=[1, 0, 2, 1], strides=[2, 1], dilations=[1, 2], group=2),
        n("Relu", ["c"], ["cr"]),
        n("ConvTranspose", ["cr", "wt"], ["dc"], strides=[2, 2], pads=[0, 1, 1, 0], group=3),
        n("Pad", ["x", "pads"], ["pr"], mode="reflect"), n("Pad", ["x", "pads"], ["pe"], mode="edge"),
        n("Slice", ["x", "starts", "ends", "axes", "steps"], ["sl"]), n("Tile", ["sl", "reps"], ["tl"]),
        n("Transpose", ["x"], ["tr"], perm=[0, 2, 3, 1]), n("Reshape", ["c", "shape"], ["rs"]),
        n("Gemm", ["rs", "g", "gb"], ["gm"], transB=1),
        n("ReduceMean", ["x"], ["rm"], axes=[2, 3], keepdims=1), n("ReduceMax", ["x"], ["rx"], axes=[1], keepdims=1),
        n("ArgMax", ["x"], ["am"], axis=3, keepdims=1),
        n("Split", ["c", "split"], ["s0", "s1"], axis=1), n("Concat", ["s1", "s0"], ["cc"], axis=1),
        n("Abs", ["x"], ["ab"]), n("Sqrt", ["ab"], ["sq"]), n("Exp", ["x"], ["ex"]),
        n("Greater", ["x", "half"], ["gt"]), n("Where", ["gt", "ex", "sq"], ["wh"]),
        n("Clip", ["x", "lo", "hi"], ["cl"]), n("Floor", ["x"], ["fl"]), n("Sign", ["x"], ["sg"]),
        n("Min", ["x", "ex"], ["mn"]), n("Transpose", ["x"], ["tr2"], perm=[0, 2, 1, 3]),
        n("MatMul", ["tr2", "tr"], ["mm"]),
    ]
    outs = [helper.make_tensor_value_info(o, TensorProto.INT64 if o == "am" else TensorProto.FLOAT, None)
            for o in OUTPUTS]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 5, 5])],
                              outs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def test_nnef_tools_conversion_matches_onnxruntime(tmp_path):
    model = _onnx_model()
    src, dst = tmp_path / "m.onnx", tmp_path / "m.nnef"
    onnx.save(model, str(src))
    subprocess.run([sys.executable, "-m", "nnef_tools.convert", "--input-format", "onnx", "--output-format", "nnef",
                    "--input-model", str(src), "--output-model", str(dst)], check=True, capture_output=True)
    x = np.random.default_rng(1).standard_normal((2, 4, 5, 5)).astype(np.float32)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = dict(zip(OUTPUTS, sess.run(list(OUTPUTS), {"x": x})))
    got = run(str(dst), {"external1": x})
    for name, (nnef_name, n) in OUTPUTS.items():
        if n == 0:
            assert_exact(got[nnef_name], expected[name])
        else:
            assert_accumulated(got[nnef_name], expected[name], n)
