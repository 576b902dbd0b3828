"""gemm / matmul (WebNN §7.7.19, §7.7.30) vs onnxruntime."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from estuary.dialects import core
from helpers import assert_accumulated, graph, op, run_graph, run_onnx


def _cast(src, dst, to=TensorProto.FLOAT):
    return helper.make_node("Cast", [src], [dst], to=to)


def _onnx_matmul(a, b):
    """ONNX MatMul on float32 (float16 operands are widened first, so the oracle accumulates in
    float32 and rounds once, which is what a float16 result can at best be)."""
    nodes = [_cast("a", "a32"), _cast("b", "b32"), helper.make_node("MatMul", ["a32", "b32"], ["y32"]),
             _cast("y32", "y", TensorProto.FLOAT16 if a.dtype == np.float16 else TensorProto.FLOAT)]
    return run_onnx(nodes, {"a": a, "b": b}, [("y", a.dtype, None)])["y"]


MATMUL_SHAPES = [
    ((3, 4), (4, 5)),  # plain 2-D
    ((4, 1), (1, 3)),  # K = 1
    ((1, 64), (64, 32)),  # longer accumulation
    ((2, 3, 4), (4, 6)),  # b one matrix: a's batch folds into rows
    ((2, 3, 4), (2, 4, 5)),  # equal batches
    ((3, 4), (2, 3, 4, 5)),  # a one matrix, b batched (rank 2 x rank 4)
    ((2, 1, 3, 4), (5, 4, 2)),  # batch [2, 1] x [5] -> [2, 5]
    ((1, 3, 2, 8), (4, 1, 8, 3)),  # size-1 batch dims on both sides
]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul(sa, sb, rng):
    a = rng.standard_normal(sa).astype(np.float32)
    b = rng.standard_normal(sb).astype(np.float32)
    got = run_graph(graph({"a": a, "b": b}, [op("matmul", ("a", "a"), ("b", "b"))], ["y"]), {"a": a, "b": b})["y"]
    assert_accumulated(got, _onnx_matmul(a, b), sa[-1])


@pytest.mark.parametrize("sa,sb", [((3, 8), (8, 2)), ((2, 1, 3, 40), (4, 40, 5)), ((2, 5, 16), (16, 3))])
def test_matmul_float16(sa, sb, rng):
    a = rng.standard_normal(sa).astype(np.float16)
    b = rng.standard_normal(sb).astype(np.float16)
    got = run_graph(graph({"a": a, "b": b}, [op("matmul", ("a", "a"), ("b", "b"))], ["y"]), {"a": a, "b": b})["y"]
    assert got.dtype == np.float16
    assert_accumulated(got, _onnx_matmul(a, b), sa[-1])


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES[3:])
def test_matmul_reference(sa, sb, rng):
    """The numpy reference (used for constant folding) agrees with the oracle too."""
    a = rng.standard_normal(sa).astype(np.float32)
    b = rng.standard_normal(sb).astype(np.float32)
    ref = core.get("matmul").reference(a, b)
    assert_accumulated(ref.astype(np.float32), _onnx_matmul(a, b), sa[-1])


def _gemm_case(rng, dtype=np.float32, c_shape=(3, 5), **kw):
    """Operands for M=3, K=4, N=5 (shapes per aTranspose/bTranspose) and the WebNN options."""
    ta, tb = kw.get("aTranspose", False), kw.get("bTranspose", False)
    a = rng.standard_normal((4, 3) if ta else (3, 4)).astype(dtype)
    b = rng.standard_normal((5, 4) if tb else (4, 5)).astype(dtype)
    consts, options = {"b": b}, dict(kw)
    if c_shape is not None:
        consts["c"] = rng.standard_normal(c_shape).astype(dtype)
        options["c"] = "c"
    return a, consts, options


def _onnx_gemm(a, consts, options):
    """ONNX Gemm in float32 with alpha/beta first cast to the operands' type (as WebNN does)."""
    cast = lambda v: float(np.asarray(v, a.dtype))  # noqa: E731
    inputs = ["a32", "b32"] + (["c32"] if "c" in consts else [])
    nodes = [_cast(n, n + "32") for n in ["a", "b", "c"] if n in consts or n == "a"]
    nodes.append(helper.make_node("Gemm", inputs, ["y32"], alpha=cast(options.get("alpha", 1.0)),
                                  beta=cast(options.get("beta", 1.0)), transA=int(options.get("aTranspose", False)),
                                  transB=int(options.get("bTranspose", False))))
    nodes.append(_cast("y32", "y", TensorProto.FLOAT16 if a.dtype == np.float16 else TensorProto.FLOAT))
    return run_onnx(nodes, {"a": a}, [("y", a.dtype, None)], initializers=consts)["y"]


GEMM_CASES = [
    {},
    {"aTranspose": True},
    {"bTranspose": True},
    {"aTranspose": True, "bTranspose": True, "alpha": 0.25, "beta": -1.5, "c_shape": (1, 5)},
    {"alpha": 0.5, "beta": 2.0},
    {"c_shape": (5,)},
    {"c_shape": (3, 1)},
    {"c_shape": ()},  # scalar c
    {"c_shape": None, "alpha": 3.0},  # no c: alpha * A B
]


@pytest.mark.parametrize("kw", GEMM_CASES)
def test_gemm(kw, rng):
    a, consts, options = _gemm_case(rng, **kw)
    doc = graph({"a": a}, [op("gemm", ("a", "a"), ("b", "b"), **options)], ["y"], consts)
    got = run_graph(doc, {"a": a})["y"]
    assert_accumulated(got, _onnx_gemm(a, consts, options), 4)


def test_gemm_float16(rng):
    a, consts, options = _gemm_case(rng, np.float16, c_shape=(5,), bTranspose=True, alpha=0.1, beta=0.3)
    doc = graph({"a": a}, [op("gemm", ("a", "a"), ("b", "b"), **options)], ["y"], consts)
    got = run_graph(doc, {"a": a})["y"]
    assert got.dtype == np.float16
    assert_accumulated(got, _onnx_gemm(a, consts, options), 4)


@pytest.mark.cpu_only("Vulkan need not keep NaN and infinities (lavapipe: 0 * inf gave 0)")
@pytest.mark.parametrize("alpha,beta", [(1.0, 0.0), (0.0, 1.0)])
def test_gemm_zero_factor_keeps_nan(alpha, beta, rng):
    """WebNN computes matmul(alpha * a, b) + beta * c even for a zero factor, so inf in a or c
    gives NaN. onnxruntime's Gemm skips c when beta is 0, so the oracle is the spec's
    decomposition in ONNX ops."""
    a = rng.standard_normal((3, 4)).astype(np.float32)
    a[1, 2] = np.inf
    b = rng.standard_normal((4, 5)).astype(np.float32)
    c = np.array([1.0, np.inf, 2.0, -np.inf, 3.0], np.float32)
    doc = graph({"a": a}, [op("gemm", ("a", "a"), ("b", "b"), c="c", alpha=alpha, beta=beta)], ["y"],
                {"b": b, "c": c})
    got = run_graph(doc, {"a": a})["y"]
    nodes = [helper.make_node("Mul", ["alpha", "a"], ["aa"]), helper.make_node("MatMul", ["aa", "b"], ["ab"]),
             helper.make_node("Mul", ["beta", "c"], ["bc"]), helper.make_node("Add", ["ab", "bc"], ["y"])]
    ref = run_onnx(nodes, {"a": a}, [("y", np.float32, None)],
                   initializers={"b": b, "c": c, "alpha": np.float32(alpha), "beta": np.float32(beta)})["y"]
    assert np.isnan(ref).any()
    with np.errstate(invalid="ignore"):  # inf - inf inside the comparison
        assert_accumulated(got, ref, 4)


@pytest.mark.parametrize("kw", GEMM_CASES[3:6])
def test_gemm_reference(kw, rng):
    a, consts, options = _gemm_case(rng, **kw)
    ref = core.get("gemm").reference(a, consts["b"], consts.get("c"), options.get("alpha", 1.0),
                                     options.get("beta", 1.0), options.get("aTranspose", False),
                                     options.get("bTranspose", False))
    assert_accumulated(ref.astype(np.float32), _onnx_gemm(a, consts, options), 4)


# one row times a constant matrix: the vector form (lowering/matvec.py), a result per block of
# columns; odd and small N give unequal blocks
VECTOR_SHAPES = [((1, 64), (64, 600)), ((1, 1, 40), (40, 3)), ((1, 256), (256, 1000)), ((1, 1, 1, 16), (16, 257))]


@pytest.mark.parametrize("sa,sb", VECTOR_SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_matmul_vector_times_constant(sa, sb, dtype, rng):
    a = rng.standard_normal(sa).astype(dtype)
    b = rng.standard_normal(sb).astype(dtype)
    got = run_graph(graph({"a": a}, [op("matmul", ("a", "a"), ("b", "b"))], ["y"], {"b": b}), {"a": a})["y"]
    assert got.dtype == dtype
    assert_accumulated(got, _onnx_matmul(a, b), sa[-1])


def test_gemm_vector_times_constant(rng):
    """A Core ML inner product's form: one row, transposed constant B, bias row, alpha."""
    a = rng.standard_normal((1, 96)).astype(np.float32)
    consts = {"b": rng.standard_normal((300, 96)).astype(np.float32),
              "c": rng.standard_normal((300,)).astype(np.float32)}
    options = {"bTranspose": True, "alpha": 0.5, "c": "c"}
    got = run_graph(graph({"a": a}, [op("gemm", ("a", "a"), ("b", "b"), **options)], ["y"], consts), {"a": a})["y"]
    assert_accumulated(got, _onnx_gemm(a, consts, options), 96)


@pytest.mark.vulkan
def test_vulkan_vector_times_constant(rng):
    a = rng.standard_normal((1, 64)).astype(np.float32)
    b = rng.standard_normal((64, 600)).astype(np.float32)
    doc = graph({"a": a}, [op("matmul", ("a", "a"), ("b", "b"))], ["y"], {"b": b})
    got = run_graph(doc, {"a": a}, target="vulkan-spirv")["y"]
    assert_accumulated(got, _onnx_matmul(a, b), 64)


@pytest.mark.vulkan
def test_vulkan_matmul(rng):
    a = rng.standard_normal((2, 1, 3, 8)).astype(np.float32)
    b = rng.standard_normal((5, 8, 2)).astype(np.float32)
    doc = graph({"a": a, "b": b}, [op("matmul", ("a", "a"), ("b", "b"))], ["y"])
    got = run_graph(doc, {"a": a, "b": b}, target="vulkan-spirv")["y"]
    assert_accumulated(got, _onnx_matmul(a, b), 8)


@pytest.mark.vulkan
def test_vulkan_gemm(rng):
    a, consts, options = _gemm_case(rng, c_shape=(3, 1), aTranspose=True, bTranspose=True, alpha=2.0, beta=0.5)
    doc = graph({"a": a}, [op("gemm", ("a", "a"), ("b", "b"), **options)], ["y"], consts)
    got = run_graph(doc, {"a": a}, target="vulkan-spirv")["y"]
    assert_accumulated(got, _onnx_gemm(a, consts, options), 4)
