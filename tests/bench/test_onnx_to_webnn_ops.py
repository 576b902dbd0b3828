"""benchmarks/onnx_to_webnn.py's element-wise and indexing mappings (HardSwish, HardSigmoid,
comparisons, IsNaN / IsInf, GatherElements, Split), each graph converted, compiled and compared
with onnxruntime on the ONNX graph itself; IsInf of one sign only is refused, not approximated."""
import os
import sys

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import estuary

from helpers import ROOT  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import onnx_to_webnn  # noqa: E402

F = TensorProto.FLOAT


def _model(nodes, outputs, inits=()):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [2, 6])],
                              [helper.make_tensor_value_info(n, t, None) for n, t in outputs],
                              [numpy_helper.from_array(a, n) for n, a in inits])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


CASES = {
    "hard_swish": ([helper.make_node("HardSwish", ["x"], ["y"])], [("y", F)], ()),
    "hard_sigmoid": ([helper.make_node("HardSigmoid", ["x"], ["y"], alpha=0.3, beta=0.4)], [("y", F)], ()),
    "less_or_equal": ([helper.make_node("LessOrEqual", ["x", "c"], ["y"])], [("y", TensorProto.BOOL)],
                      [("c", np.float32([0.5]))]),
    "is_nan_is_inf": ([helper.make_node("Div", ["x", "z"], ["d"]), helper.make_node("IsNaN", ["d"], ["n"]),
                       helper.make_node("IsInf", ["d"], ["i"])], [("n", TensorProto.BOOL), ("i", TensorProto.BOOL)],
                      [("z", np.float32([[0, 1, 0, 2, 0, 3]]))]),
    "gather_elements": ([helper.make_node("GatherElements", ["x", "k"], ["y"], axis=1)], [("y", F)],
                        [("k", np.int64([[5, 0, 2], [1, 1, 4]]))]),
    "split": ([helper.make_node("Split", ["x", "s"], ["a", "b"], axis=1)], [("a", F), ("b", F)],
              [("s", np.int64([2, 4]))]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_mapping_matches_onnxruntime(case, tmp_path):
    model = _model(*CASES[case])
    x = np.float32([[-4, -1, 0, 0.5, 2, 5], [3, -0.25, 0, 1, -6, 0.5]])
    path = onnx_to_webnn.convert(model, str(tmp_path / "m.json"))
    got = estuary.load(estuary.compile(path)).run({"x": x})
    names = [o.name for o in model.graph.output]
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(names, {"x": x})
    for name, w in zip(names, want):
        np.testing.assert_allclose(got[name].astype(np.float32), w.astype(np.float32), rtol=1e-6, atol=1e-6,
                                   err_msg=name)


def test_is_inf_of_one_sign_is_refused(tmp_path):
    model = _model([helper.make_node("IsInf", ["x"], ["y"], detect_negative=0)], [("y", TensorProto.BOOL)])
    with pytest.raises(ValueError, match="IsInf of one sign only"):
        onnx_to_webnn.convert(model, str(tmp_path / "m.json"))
