"""gemm / matmul vs onnxruntime."""
import numpy as np
import pytest
from onnx import helper

from helpers import assert_accumulated, graph, op, run_graph, run_onnx


@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 5)), ((2, 3, 4), (4, 6)), ((2, 1, 3, 4), (5, 4, 2)),
                                   ((4, 1), (1, 3)), ((1, 64), (64, 32))])
def test_matmul(sa, sb, rng):
    a = rng.standard_normal(sa).astype(np.float32)
    b = rng.standard_normal(sb).astype(np.float32)
    got = run_graph(graph({"a": a, "b": b}, [op("matmul", ("a", "a"), ("b", "b"))], ["y"]), {"a": a, "b": b})["y"]
    ref = run_onnx([helper.make_node("MatMul", ["a", "b"], ["y"])], {"a": a, "b": b}, [("y", np.float32, None)])["y"]
    assert_accumulated(got, ref, sa[-1])


def test_matmul_float16(rng):
    a = rng.standard_normal((3, 8)).astype(np.float16)
    b = rng.standard_normal((8, 2)).astype(np.float16)
    got = run_graph(graph({"a": a, "b": b}, [op("matmul", ("a", "a"), ("b", "b"))], ["y"]), {"a": a, "b": b})["y"]
    ref = a.astype(np.float64) @ b.astype(np.float64)  # exact products of the float16 inputs
    assert got.dtype == np.float16
    assert_accumulated(got, ref.astype(np.float16), 8)


@pytest.mark.parametrize("kw", [{}, {"aTranspose": True}, {"bTranspose": True}, {"alpha": 0.5, "beta": 2.0},
                                {"c_shape": (5,)}, {"c_shape": (3, 1)}, {"c_shape": None}, {"c_shape": ()}])
def test_gemm(kw, rng):
    kw = dict(kw)
    c_shape = kw.pop("c_shape", (3, 5))
    ta, tb = kw.get("aTranspose", False), kw.get("bTranspose", False)
    a = rng.standard_normal((4, 3) if ta else (3, 4)).astype(np.float32)
    b = rng.standard_normal((5, 4) if tb else (4, 5)).astype(np.float32)
    consts = {"b": b}
    options = dict(kw)
    inputs = ["a", "b"]
    if c_shape is not None:
        consts["c"] = rng.standard_normal(c_shape).astype(np.float32)
        options["c"] = "c"
        inputs.append("c")
    doc = graph({"a": a}, [op("gemm", ("a", "a"), ("b", "b"), **options)], ["y"], consts)
    got = run_graph(doc, {"a": a})["y"]
    ref = run_onnx([helper.make_node("Gemm", inputs, ["y"], alpha=kw.get("alpha", 1.0), beta=kw.get("beta", 1.0),
                                     transA=int(ta), transB=int(tb))], {"a": a}, [("y", np.float32, None)],
                   initializers={k: v for k, v in consts.items()})["y"]
    assert_accumulated(got, ref, 4)


@pytest.mark.vulkan
def test_vulkan_matmul_gemm(rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((4, 5)).astype(np.float32)
    c = rng.standard_normal((5,)).astype(np.float32)
    doc = graph({"a": a, "b": b}, [op("matmul", ("a", "a"), ("b", "b"), outputs="m"),
                                   op("gemm", ("a", "a"), ("b", "b"), outputs="g", c="c", alpha=2.0)], ["m", "g"],
                {"c": c})
    got = run_graph(doc, {"a": a, "b": b}, target="vulkan-spirv")
    ref = run_onnx([helper.make_node("MatMul", ["a", "b"], ["m"]),
                    helper.make_node("Gemm", ["a", "b", "c"], ["g"], alpha=2.0)], {"a": a, "b": b},
                   [("m", np.float32, None), ("g", np.float32, None)], initializers={"c": c})
    assert_accumulated(got["m"], ref["m"], 4)
    assert_accumulated(got["g"], ref["g"], 4)
