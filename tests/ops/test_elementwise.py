"""Element-wise ops vs onnxruntime (WebNN §7.7.7-8, 12-14, 47)."""
import numpy as np
import pytest
from onnx import helper

from helpers import assert_exact, assert_ulp, graph, op, run_graph, run_onnx

BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "max": "Max", "min": "Min", "pow": "Pow"}


def _binary_case(js, onnx_op, a, b, ulp):
    doc = graph({"a": a, "b": b}, [op(js, ("a", "a"), ("b", "b"))], ["y"])
    got = run_graph(doc, {"a": a, "b": b})["y"]
    ref = run_onnx([helper.make_node(onnx_op, ["a", "b"], ["y"])], {"a": a, "b": b}, [("y", a.dtype, None)])["y"]
    if a.dtype.kind == "f":
        assert_ulp(got, ref, ulp)
    else:
        assert_exact(got, ref)


@pytest.mark.parametrize("js", sorted(BINARY))
def test_binary_float32_broadcast(js, rng):
    a = rng.uniform(0.5, 2.0, (2, 3, 4)).astype(np.float32)
    b = rng.uniform(0.5, 2.0, (3, 1)).astype(np.float32)
    _binary_case(js, BINARY[js], a, b, ulp=2 if js == "pow" else 1 if js == "div" else 0)


@pytest.mark.parametrize("js", ["add", "sub", "mul", "max", "min", "div"])
def test_binary_int32(js, rng):
    a = rng.integers(-50, 50, (4, 5)).astype(np.int32)
    b = rng.integers(1, 9, (5,)).astype(np.int32)
    _binary_case(js, BINARY[js], a, b, ulp=0)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_pow_integer(dtype, rng):
    """Integer pow (IREE cannot lower math.ipowi; the lowering squares over the exponent's bits)."""
    a = rng.integers(-9, 10, (3, 7)).astype(dtype)
    b = rng.integers(0, 7, (7,)).astype(dtype)
    _binary_case("pow", "Pow", a, b, ulp=0)


def test_pow_integer_negative_exponents_and_unsigned():
    """Negative exponents truncate the float power (1, -1 or 0); unsigned powers wrap like numpy's."""
    a = np.array([1, -1, -1, 2, -3, 5, 1, 0], np.int8)
    b = np.array([-3, -3, -2, -1, -1, -4, 0, 3], np.int8)
    doc = graph({"a": a, "b": b}, [op("pow", ("a", "a"), ("b", "b"))], ["y"])
    want = np.trunc(np.power(a.astype(np.float64), b.astype(np.float64))).astype(np.int8)
    assert_exact(run_graph(doc, {"a": a, "b": b})["y"], want)
    u = np.array([0, 1, 2, 3, 7, 255, 16], np.uint8)
    e = np.array([5, 200, 7, 5, 3, 2, 2], np.uint8)
    doc = graph({"a": u, "b": e}, [op("pow", ("a", "a"), ("b", "b"))], ["y"])
    assert_exact(run_graph(doc, {"a": u, "b": e})["y"], np.power(u, e))


def test_binary_float16(rng):
    a = rng.uniform(-2, 2, (3, 4)).astype(np.float16)
    b = rng.uniform(-2, 2, (3, 4)).astype(np.float16)
    _binary_case("add", "Add", a, b, ulp=1)


def test_max_min_propagate_nan():
    a = np.array([np.nan, 1.0, -np.inf, 2.0], np.float32)
    b = np.array([0.0, np.nan, 1.0, np.inf], np.float32)
    doc = graph({"a": a, "b": b}, [op("max", ("a", "a"), ("b", "b"), outputs="mx"),
                                   op("min", ("a", "a"), ("b", "b"), outputs="mn")], ["mx", "mn"])
    got = run_graph(doc, {"a": a, "b": b})
    ref = run_onnx([helper.make_node("Max", ["a", "b"], ["mx"]), helper.make_node("Min", ["a", "b"], ["mn"])],
                   {"a": a, "b": b}, [("mx", np.float32, None), ("mn", np.float32, None)])
    assert_exact(got["mx"], ref["mx"])
    assert_exact(got["mn"], ref["mn"])


UNARY = {"abs": "Abs", "ceil": "Ceil", "cos": "Cos", "erf": "Erf", "exp": "Exp", "floor": "Floor",
         "identity": "Identity", "log": "Log", "neg": "Neg", "reciprocal": "Reciprocal", "sin": "Sin",
         "sqrt": "Sqrt", "tan": "Tan"}
UNARY_ULP = {"cos": 4, "sin": 4, "tan": 8, "erf": 4, "exp": 4, "log": 4, "sqrt": 1, "reciprocal": 1}


@pytest.mark.parametrize("js", sorted(UNARY))
def test_unary_float32(js, rng):
    lo = 0.1 if js in ("log", "sqrt") else -1.4
    x = rng.uniform(lo, 1.4, (2, 3, 5)).astype(np.float32)
    doc = graph({"x": x}, [op(js, ("input", "x"))], ["y"])
    got = run_graph(doc, {"x": x})["y"]
    ref = run_onnx([helper.make_node(UNARY[js], ["x"], ["y"])], {"x": x}, [("y", np.float32, None)])["y"]
    assert_ulp(got, ref, UNARY_ULP.get(js, 0))


@pytest.mark.parametrize("js", ["abs", "neg"])
def test_unary_int(js, rng):
    x = rng.integers(-100, 100, (7,)).astype(np.int32)
    doc = graph({"x": x}, [op(js, ("input", "x"))], ["y"])
    got = run_graph(doc, {"x": x})["y"]
    ref = run_onnx([helper.make_node(UNARY[js], ["x"], ["y"])], {"x": x}, [("y", np.int32, None)])["y"]
    assert_exact(got, ref)


COMPARE = {"equal": "Equal", "greater": "Greater", "greaterOrEqual": "GreaterOrEqual",
           "lesser": "Less", "lesserOrEqual": "LessOrEqual"}


@pytest.mark.parametrize("js", sorted(COMPARE))
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8])
def test_compare(js, dtype, rng):
    a = rng.integers(0, 4, (3, 4)).astype(dtype)
    b = rng.integers(0, 4, (4,)).astype(dtype)
    doc = graph({"a": a, "b": b}, [op(js, ("a", "a"), ("b", "b"))], ["y"])
    got = run_graph(doc, {"a": a, "b": b})["y"]
    ref = run_onnx([helper.make_node(COMPARE[js], ["a", "b"], ["c"]),
                    helper.make_node("Cast", ["c"], ["y"], to=2)], {"a": a, "b": b}, [("y", np.uint8, None)])["y"]
    assert got.dtype == np.uint8
    assert_exact(got, ref)


def test_logical_not_and_where(rng):
    c = np.array([[0, 1, 2], [3, 0, 0]], np.uint8)
    t = rng.standard_normal((2, 3)).astype(np.float32)
    f = rng.standard_normal((3,)).astype(np.float32)
    doc = graph({"c": c, "t": t, "f": f},
                [op("logicalNot", ("a", "c"), outputs="n"),
                 op("where", ("condition", "c"), ("trueValue", "t"), ("falseValue", "f"), outputs="w")],
                ["n", "w"])
    got = run_graph(doc, {"c": c, "t": t, "f": f})
    ref = run_onnx([helper.make_node("Cast", ["c"], ["cb"], to=9),
                    helper.make_node("Not", ["cb"], ["nb"]),
                    helper.make_node("Cast", ["nb"], ["n"], to=2),
                    helper.make_node("Where", ["cb", "t", "f"], ["w"])],
                   {"c": c, "t": t, "f": f}, [("n", np.uint8, None), ("w", np.float32, None)])
    assert_exact(got["n"], ref["n"])
    assert_exact(got["w"], ref["w"])


@pytest.mark.parametrize("src,dst", [("float32", "int32"), ("float32", "float16"), ("int32", "float32"),
                                     ("int32", "int8"), ("float16", "float32"), ("int64", "int32"),
                                     ("uint8", "float32"), ("int8", "int64")])
def test_cast(src, dst, rng):
    if src.startswith("float"):
        x = rng.uniform(-100, 100, (10,)).astype(src)
    elif src == "uint8":
        x = rng.integers(0, 255, (10,)).astype(src)
    else:
        x = rng.integers(-300, 300, (10,)).astype(src)
    doc = graph({"x": x}, [op("cast", ("input", "x"), ("type", dst))], ["y"])
    got = run_graph(doc, {"x": x})["y"]
    from onnx import helper as h
    ref = run_onnx([h.make_node("Cast", ["x"], ["y"], to=h.np_dtype_to_tensor_dtype(np.dtype(dst)))],
                   {"x": x}, [("y", np.dtype(dst), None)])["y"]
    assert got.dtype == np.dtype(dst)
    assert_exact(got, ref)


def test_clamp_keeps_nan():
    x = np.array([-3, -0.5, 0.2, 7, np.nan], np.float32)
    doc = graph({"x": x}, [op("clamp", ("input", "x"), minValue=-1, maxValue=1)], ["y"])
    got = run_graph(doc, {"x": x})["y"]
    ref = run_onnx([helper.make_node("Clip", ["x", "lo", "hi"], ["y"])], {"x": x}, [("y", np.float32, None)],
                   initializers={"lo": np.float32(-1), "hi": np.float32(1)})["y"]
    assert_exact(got, ref)


ALL_TYPES = ["float32", "float16", "int32", "uint32", "int64", "uint64", "int8", "uint8"]


@pytest.mark.parametrize("src", ALL_TYPES)
def test_cast_every_pair_in_range(src, rng):
    """The spec's cast table for in-range values (numpy's conversions are the oracle): floats to
    ints truncate, ints to ints keep the value, everything to float rounds to nearest."""
    if src.startswith("float"):
        x = rng.uniform(0, 100, (12,)).astype(src)
    else:
        x = rng.integers(0, 100, (12,)).astype(src)
    ops = [op("cast", ("input", "x"), ("type", dst), outputs=f"y_{dst}") for dst in ALL_TYPES]
    got = run_graph(graph({"x": x}, ops, [f"y_{d}" for d in ALL_TYPES]), {"x": x})
    for dst in ALL_TYPES:
        expected = np.trunc(x.astype(np.float64)).astype(dst) if src.startswith("float") and not dst.startswith("float") \
            else x.astype(dst)
        assert got[f"y_{dst}"].dtype == np.dtype(dst)
        assert_exact(got[f"y_{dst}"], expected)


def test_cast_out_of_range_wraps_and_saturates():
    x = np.array([-1, 300, -129], np.int32)
    got = run_graph(graph({"x": x}, [op("cast", ("input", "x"), ("type", "uint8"))], ["y"]), {"x": x})["y"]
    assert_exact(got, np.array([255, 44, 127], np.uint8))  # lowest 8 bits (spec: two's complement)
    f = np.array([1e10, -1e10, np.nan, 3.9, -3.9], np.float32)
    got = run_graph(graph({"f": f}, [op("cast", ("input", "f"), ("type", "int32"))], ["y"]), {"f": f})["y"]
    assert_exact(got, np.array([2**31 - 1, -2**31, 0, 3, -3], np.int32))  # our documented choice
