"""The Python WebNN API (ML, MLContext, MLGraphBuilder, MLGraph): numerics vs onnxruntime, the
JSON round trip, the spec's error behaviour, opSupportLimits."""
import json
import math

import numpy as np
import pytest
from onnx import helper

import estuary
from estuary import webnn
from estuary.importers.webnn import OPS
from helpers import assert_accumulated, assert_exact, assert_ulp, run_onnx

F32 = {"dataType": "float32", "shape": [2, 3]}


def needs(*ops):
    missing = [o for o in ops if o not in OPS]
    return pytest.mark.skipif(bool(missing), reason=f"WebNN ops {missing} not registered yet")


def builder(device="cpu"):
    ctx = webnn.ML().createContext({"deviceType": device})
    return ctx, webnn.MLGraphBuilder(ctx)


def elementwise_graph(b, rng):
    """out = exp(x * 0.5) - (y + w), out2 = max(x, y); plus an input nothing uses."""
    w_data = rng.standard_normal((2, 3)).astype(np.float32)
    x, y = b.input("x", F32), b.input("y", F32)
    b.input("unused", {"dataType": "int32", "shape": [4]})
    half, w = b.constant("float32", 0.5), b.constant(F32, w_data)
    out = b.sub(b.exp(b.mul(x, half)), b.add(y, w, {"label": "y_plus_w"}))
    return b.build({"out": out, "out2": b.max(x, y)}), w_data


def onnx_elementwise(feeds, w_data):
    nodes = [helper.make_node("Mul", ["x", "half"], ["m"]), helper.make_node("Exp", ["m"], ["e"]),
             helper.make_node("Add", ["y", "w"], ["s"]), helper.make_node("Sub", ["e", "s"], ["out"]),
             helper.make_node("Max", ["x", "y"], ["out2"])]
    return run_onnx(nodes, feeds, [("out", np.float32, None), ("out2", np.float32, None)],
                    initializers={"w": w_data, "half": np.float32(0.5)})


def test_elementwise_graph_matches_onnxruntime(rng):
    ctx, b = builder()
    graph, w_data = elementwise_graph(b, rng)
    assert graph.inputDescriptors == {"x": F32, "y": F32}  # only what the outputs depend on
    assert graph.outputDescriptors == {"out": F32, "out2": F32}
    feeds = {n: rng.standard_normal((2, 3)).astype(np.float32) for n in ("x", "y")}
    got, ref = ctx.compute(graph, feeds), onnx_elementwise(feeds, w_data)
    assert_ulp(got["out"], ref["out"], 2)
    assert_exact(got["out2"], ref["out2"])
    again = ctx.compute(graph, {n: v.reshape(-1) for n, v in feeds.items()})  # cached model, flat buffers
    assert_exact(again["out"], got["out"])


@needs("conv2d", "relu")
def test_conv2d_bias_relu_matches_onnxruntime(rng):
    ctx, b = builder()
    w_data = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    bias_data = rng.standard_normal(4).astype(np.float32)
    x = b.input("x", {"dataType": "float32", "shape": [1, 3, 8, 8]})
    w = b.constant({"dataType": "float32", "shape": [4, 3, 3, 3]}, w_data)
    bias = b.constant({"dataType": "float32", "shape": [4]}, bias_data.tobytes())  # a raw buffer
    y = b.relu(b.conv2d(x, w, {"padding": [1, 1, 1, 1], "bias": bias}))
    assert (y.dataType, y.shape) == ("float32", [1, 4, 8, 8])
    arr = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    got = ctx.compute(b.build({"y": y}), {"x": arr})["y"]
    ref = run_onnx([helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
                    helper.make_node("Relu", ["c"], ["y"])], {"x": arr}, [("y", np.float32, None)],
                   initializers={"w": w_data, "b": bias_data})["y"]
    assert_accumulated(got, ref, 27)


@pytest.mark.parametrize("side_file", [False, True])
def test_to_json_round_trip(tmp_path, rng, side_file):
    ctx, b = builder()
    graph, _ = elementwise_graph(b, rng)
    path = tmp_path / "g.json"
    text = graph.to_json(str(path), weights_file="g.bin" if side_file else None)
    doc = json.loads(text)
    constants = [e for e in doc["inputs"].values() if e.get("constant")]
    assert all(isinstance(e["data"], dict) == side_file for e in constants)
    assert (tmp_path / "g.bin").exists() == side_file
    feeds = {n: rng.standard_normal((2, 3)).astype(np.float32) for n in ("x", "y")}
    from_file = estuary.load(estuary.compile(str(path))).run(feeds)
    computed = ctx.compute(graph, feeds)
    for name in ("out", "out2"):
        assert_exact(from_file[name], computed[name])


@needs("split", "concat")
def test_compile_mlgraph_multi_output_and_repeated_output(rng):
    ctx, b = builder()
    x = b.input("x", {"dataType": "int32", "shape": [2, 4]})
    left, right = b.split(x, 2, {"axis": 1})
    both = b.concat([right, left], 0)
    graph = b.build({"swapped": both, "again": both, "right": right})
    art = estuary.compile(graph)  # an MLGraph is a WebNN JSON document (a dict)
    assert isinstance(graph, dict) and isinstance(art, estuary.Artifact)
    arr = rng.integers(-100, 100, (2, 4)).astype(np.int32)
    got = estuary.load(art).run({"x": arr})
    ref = run_onnx([helper.make_node("Split", ["x"], ["l", "r"], axis=1, num_outputs=2),
                    helper.make_node("Concat", ["r", "l"], ["y"], axis=0)], {"x": arr}, [("y", np.int32, None)])["y"]
    assert_exact(got["swapped"], ref)
    assert_exact(got["again"], ref)
    assert_exact(ctx.compute(graph, {"x": arr})["right"], arr[:, 2:])


def test_internal_names_are_stable_and_never_clash(rng):
    texts = []
    for _ in range(2):
        _, b = builder()
        x = b.input("mul_0", {"dataType": "float32", "shape": [2]})  # the name the builder would pick
        c = b.constant({"dataType": "float32", "shape": [2]}, [1.0, 2.0])
        texts.append(b.build({"constant_0": b.add(b.mul(x, c), c)}).to_json())
    assert texts[0] == texts[1]
    doc = json.loads(texts[0])
    assert sorted(doc["inputs"]) == ["constant_0_", "mul_0"]
    assert [op["outputs"] for op in doc["operators"]] == ["mul_0_", "constant_0"]


def test_scalar_constant_casts_like_the_spec():
    _, b = builder()
    cases = [("int8", 300.7, 127), ("uint8", -5, 0), ("int32", 2.5, 2), ("int32", 3.5, 4), ("int32", math.nan, 0),
             ("uint32", 2.0**40, 2**32 - 1), ("int64", -(2**70), -(2**63)), ("float16", 1e6, math.inf)]
    for data_type, value, expected in cases:
        c = b.constant(data_type, value)
        assert (c.dataType, c.shape, c._data.item()) == (data_type, [], expected)


def test_operand_is_read_only_and_builder_exposes_every_op():
    _, b = builder()
    x = b.input("x", F32)
    with pytest.raises(AttributeError):
        x.shape = [1]
    assert set(OPS) <= set(dir(b)) and all(callable(getattr(b, name)) for name in OPS)
    with pytest.raises(AttributeError, match="no operation 'notAnOp'"):
        b.notAnOp(x)
    if "softmax" in OPS:  # keyword arguments name the spec's parameters
        assert b.softmax(x, axis=1).shape == [2, 3]


BAD_DESCRIPTORS = [{"shape": [2]}, {"dataType": "float64", "shape": [2]}, {"dataType": "float32", "shape": [0]},
                   {"dataType": "float32", "shape": [-1]}, {"dataType": "float32", "shape": [True]},
                   {"dataType": "float32", "shape": "2"}, {"dataType": "float32", "shape": [2**40, 2**40]}, [2]]


@pytest.mark.parametrize("desc", BAD_DESCRIPTORS)
def test_bad_descriptor(desc):
    _, b = builder()
    with pytest.raises(webnn.TypeError_):
        b.input("x", desc)
    with pytest.raises(webnn.TypeError_):
        b.constant(desc, [1.0])


def test_invalid_arguments_raise_type_error():
    _, b = builder()
    _, other = builder()
    x, z = b.input("x", F32), other.input("z", F32)
    for call in (lambda: b.add(x, z), lambda: b.add(x, 1.0), lambda: b.build({"y": other.exp(z)})):
        with pytest.raises(webnn.TypeError_, match="another MLGraphBuilder|must be an MLOperand"):
            call()
    if "conv2d" in OPS:  # an operand-valued option from another builder
        w = b.constant({"dataType": "float32", "shape": [1, 1, 1, 1]}, [1.0])
        with pytest.raises(webnn.TypeError_, match="option 'bias' is an MLOperand of another"):
            b.conv2d(b.input("i", {"dataType": "float32", "shape": [1, 1, 2, 2]}), w, {"bias": z})
    with pytest.raises(webnn.TypeError_, match="already has an input named 'x'"):
        b.input("x", F32)
    with pytest.raises(webnn.TypeError_, match="non-empty string"):
        b.input("", F32)
    with pytest.raises(webnn.TypeError_, match="dtype float64 does not match"):
        b.constant(F32, np.zeros((2, 3)))
    with pytest.raises(webnn.TypeError_, match="5 elements"):
        b.constant(F32, np.zeros(5, np.float32))
    with pytest.raises(webnn.TypeError_, match="23 bytes"):
        b.constant(F32, bytes(23))
    with pytest.raises(webnn.TypeError_, match="does not fit int8"):
        b.constant({"dataType": "int8", "shape": [1]}, [1000])
    with pytest.raises(webnn.TypeError_, match="missing argument 'b'"):
        b.add(x)
    with pytest.raises(webnn.TypeError_, match="at most 3 arguments"):
        b.add(x, x, {}, {})
    with pytest.raises(estuary.VerificationError, match="'y_plus'.*same data type"):
        b.add(x, b.input("i32", {"dataType": "int32", "shape": [2, 3]}), {"label": "y_plus"})
    with pytest.raises(estuary.VerificationError, match="unknown option"):
        b.add(x, x, {"alpha": 1})
    with pytest.raises(webnn.TypeError_):
        webnn.ML().createContext({"deviceType": "npu"})
    with pytest.raises(webnn.TypeError_):
        webnn.MLGraphBuilder(None)


def test_build_rules_and_invalid_state():
    _, b = builder()
    x = b.input("x", F32)
    c = b.constant(F32, np.ones((2, 3), np.float32))
    y = b.exp(x)
    for outputs, message in [({}, "non-empty"), ({"": y}, "non-empty strings"), ({"y": x}, "input or constant"),
                             ({"y": c}, "input or constant"), ({"x": y}, "also input names"), ([y], "non-empty dict")]:
        with pytest.raises(webnn.TypeError_, match=message):
            b.build(outputs)
    b.build({"y": y})  # the failed builds changed nothing
    for call in (lambda: b.build({"y": y}), lambda: b.exp(x), lambda: b.input("z", F32), lambda: b.constant("float32", 1)):
        with pytest.raises(webnn.InvalidStateError, match="already built"):
            call()


def test_compute_checks_graph_and_inputs(rng):
    ctx, b = builder()
    graph, _ = elementwise_graph(b, rng)
    ok = np.zeros((2, 3), np.float32)
    bad = [({"x": ok}, "missing \\['y'\\]"), ({"x": ok, "y": ok, "z": ok}, "unexpected \\['z'\\]"),
           ({"x": ok, "y": ok.astype(np.float64)}, "'y' has dtype float64"),
           ({"x": ok, "y": np.zeros(5, np.float32)}, "'y' has 5 elements"), ([ok, ok], "must be a dict")]
    for inputs, message in bad:
        with pytest.raises(webnn.TypeError_, match=message):
            ctx.compute(graph, inputs)
    with pytest.raises(webnn.TypeError_, match="of this MLContext"):
        webnn.ML().createContext().compute(graph, {"x": ok, "y": ok})


def test_op_support_limits():
    limits = webnn.ML().createContext().opSupportLimits()
    every = ["float32", "float16", "int32", "uint32", "int64", "uint64", "int8", "uint8"]
    assert limits["preferredInputLayout"] == "nchw"
    assert all(limits[k] == {"dataTypes": every, "rankRange": {"min": 0, "max": 8}} for k in ("input", "output"))
    # 4-bit constants feed dequantizeLinear (the WPT conformance files build them as constants)
    assert limits["constant"] == {"dataTypes": [*every, "int4", "uint4"], "rankRange": {"min": 0, "max": 8}}
    assert limits["conv2d"]["input"]["rankRange"] == {"min": 4, "max": 4}
    assert limits["add"]["a"]["rankRange"] == {"min": 0, "max": 8}
    assert limits["matmul"]["a"]["rankRange"] == {"min": 2, "max": 8}
    assert limits["quantizeLinear"]["zeroPoint"]["dataTypes"] == ["int32", "int8", "uint8", "int4", "uint4"]
    assert limits["dequantizeLinear"]["output"]["dataTypes"] == ["float32", "float16"]
    assert limits["isNaN"]["output"]["dataTypes"] == ["uint8"]
    assert limits["sign"]["input"]["dataTypes"] == ["float32", "float16", "int32", "int64", "int8"]
    assert set(OPS) <= set(limits)
    for name, op in OPS.items():  # the spec's member names: each operand, then output(s)
        operands = {p for p in op.params if p in op.operands} | set(op.option_operands)
        assert set(limits[name]) - {"output", "outputs"} == operands, name
    assert limits["add"]["a"]["dataTypes"] == every and limits["equal"]["output"]["dataTypes"] == ["uint8"]
    assert limits["sigmoid"]["input"]["dataTypes"] == ["float32", "float16"]
    if "where" in OPS:
        assert limits["where"]["condition"]["dataTypes"] == ["uint8"]
        assert limits["where"]["trueValue"]["dataTypes"] == every
    if "gather" in OPS:
        assert "float32" in limits["gather"]["input"]["dataTypes"]
        assert set(limits["gather"]["indices"]["dataTypes"]) <= {"int32", "uint32", "int64"}
    if "split" in OPS:
        assert "outputs" in limits["split"]
    limits["add"]["a"]["dataTypes"].clear()  # callers get a copy
    assert webnn.ML().createContext().opSupportLimits()["add"]["a"]["dataTypes"] == every


def test_op_support_limits_agree_with_the_builder():
    limits = webnn.ML().createContext().opSupportLimits()
    _, b = builder()
    for name in ("abs", "relu", "sqrt", "logicalNot", "reduceSum", "neg"):
        if name not in OPS:
            continue
        for data_type in ("float32", "float16", "int32", "uint32", "int64", "uint64", "int8", "uint8"):
            x = b.input(f"{name}_{data_type}", {"dataType": data_type, "shape": [2, 2]})
            try:
                getattr(b, name)(x)
                accepted = True
            except estuary.VerificationError:
                accepted = False
            param = next(p for p in OPS[name].params if p in OPS[name].operands)
            assert accepted == (data_type in limits[name][param]["dataTypes"]), (name, data_type)


@pytest.mark.vulkan
def test_gpu_context(rng):
    ctx, b = builder("gpu")
    assert (ctx.target, ctx.device) == ("vulkan-spirv", "vulkan")
    graph, w_data = elementwise_graph(b, rng)
    feeds = {n: rng.standard_normal((2, 3)).astype(np.float32) for n in ("x", "y")}
    got, ref = ctx.compute(graph, feeds), onnx_elementwise(feeds, w_data)
    assert_ulp(got["out"], ref["out"], 4)
    assert_exact(got["out2"], ref["out2"])


def test_op_support_limits_per_target():
    """A GPU context does not list the 64-bit integer forms its target cannot compile."""
    cpu = webnn.ML().createContext().opSupportLimits()
    gpu = webnn.ML().createContext({"accelerated": True}).opSupportLimits()
    for name in webnn.NO_64BIT_ON_GPU:
        assert "int64" in cpu[name]["a" if name == "div" else "input"]["dataTypes"]
        for operand in gpu[name].values():
            assert not {"int64", "uint64"} & set(operand["dataTypes"]), name
    assert "int64" in gpu["add"]["a"]["dataTypes"] and "int64" in gpu["reduceSum"]["input"]["dataTypes"]
    assert {k: v for k, v in gpu.items() if k not in webnn.NO_64BIT_ON_GPU} == \
        {k: v for k, v in cpu.items() if k not in webnn.NO_64BIT_ON_GPU}


@pytest.mark.vulkan
@pytest.mark.parametrize("name", sorted(webnn.NO_64BIT_ON_GPU) + ["add"])
def test_64bit_forms_the_gpu_limits_drop_do_not_compile(name):
    """The table behind the GPU limits is measured: its operations fail on Vulkan with int64
    operands, while an operation the limits keep (add) runs."""
    ctx = webnn.ML().createContext({"accelerated": True})
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "int64", "shape": [4]})
    graph = b.build({"y": getattr(b, name)(x) if name in ("abs", "reduceL1") else getattr(b, name)(x, x)})
    x_value = np.array([3, -4, 5, 6], np.int64)
    if name in webnn.NO_64BIT_ON_GPU:
        with pytest.raises(estuary.CompileError):
            ctx.compute(graph, {"x": x_value})
    else:
        np.testing.assert_array_equal(ctx.compute(graph, {"x": x_value})["y"], 2 * x_value)
