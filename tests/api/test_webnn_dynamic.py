"""The Python WebNN API with dynamic dimensions: input() takes MLDynamicDimensions, MLOperand.shape
reports them (derived ones named by their expression), compute() and dispatch() run one compiled
graph at several lengths and check the concrete shapes. Oracle: onnxruntime (transformer_oracle)."""
import numpy as np
import pytest

from estuary import webnn
from estuary.base.errors import RuntimeInputError, VerificationError
from estuary.dialects.core import OPS as NN_OPS
from estuary.importers.webnn import OPS
from estuary.webnn import TypeError_
import transformer_oracle as oracle

SEQ = {"name": "seq", "maxSize": 128}


def f32(*shape):
    return {"dataType": "float32", "shape": list(shape)}


@pytest.fixture(scope="module")
def ctx():
    return webnn.ML().createContext()


def test_shapes_report_symbols_and_derived_dimensions(ctx):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", f32(1, SEQ, 16))
    assert x.shape == [1, {"name": "seq", "maxSize": 128}, 16]
    heads = b.reshape(x, [1, x.shape[1], 2, 8])  # an MLOperand.shape entry given back
    assert heads.shape == [1, SEQ, 2, 8]
    flat = b.reshape(b.transpose(heads, {"permutation": [0, 2, 1, 3]}), [1, {"expression": "2*seq"}, 8])
    assert flat.shape == [1, {"name": "2*seq", "maxSize": 256}, 8]
    tail = b.slice(flat, [0, 1, 0], [1, {"expression": "2*seq - 1"}, 8])
    assert tail.shape == [1, {"name": "2*seq - 1", "maxSize": 255}, 8]
    again = b.reshape(tail, [tail.shape[1], 8])  # a derived entry given back is read as its expression
    assert again.shape == [{"name": "2*seq - 1", "maxSize": 255}, 8]
    pooled = b.averagePool2d(b.reshape(x, [1, 1, x.shape[1], 16]), {"windowDimensions": [3, 3], "strides": [2, 2]})
    assert pooled.shape == [1, 1, {"name": "(seq + 1)//2 - 1", "maxSize": 63}, 7]
    graph = b.build({"flat": flat, "again": again})
    assert graph.outputDescriptors["again"]["shape"] == [{"name": "2*seq - 1", "maxSize": 255}, 8]
    assert graph["operators"][-1]["arguments"][1] == {"newShape": [{"expression": "2*seq - 1"}, 8]}


@pytest.mark.parametrize("descriptor,message", [
    (f32(1, {"maxSize": 4}), "dimension 1 ({'maxSize': 4}) is an MLDynamicDimension, which needs 'name' and 'maxSize'"),
    (f32(1, {"name": "a b", "maxSize": 4}), "the name 'a b' is not an identifier"),
    (f32(1, {"name": "seq", "maxSize": 0}), "maxSize must be a positive integer, got 0"),
    (f32(1, {"name": "seq", "maxSize": 64}), "dimension 1 is seq with maxSize 64, but an earlier input gave seq the "
                                             "maxSize 128"),
    (f32({"name": "big", "maxSize": 1 << 30}, {"name": "big", "maxSize": 1 << 30}), "is too large at its maxSizes"),
])
def test_input_descriptor_errors(ctx, descriptor, message):
    b = webnn.MLGraphBuilder(ctx)
    b.input("x", f32(1, SEQ))
    with pytest.raises(TypeError_) as e:
        b.input("y", descriptor)
    assert message in str(e.value)


def test_only_inputs_take_dynamic_dimensions(ctx):
    b = webnn.MLGraphBuilder(ctx)
    with pytest.raises(TypeError_, match="only graph inputs take dynamic dimensions"):
        b.constant(f32(1, SEQ), np.zeros(1, np.float32))
    with pytest.raises(TypeError_, match="only graph inputs take dynamic dimensions"):
        ctx.createTensor(f32(1, SEQ))


def test_an_operation_without_dynamic_support_names_itself(ctx):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", f32(SEQ, 1, 2))
    w, r = b.constant(f32(1, 3, 2), np.zeros(6, np.float32)), b.constant(f32(1, 3, 1), np.zeros(3, np.float32))
    with pytest.raises(VerificationError, match=r"\(gru\): nn.gru does not take dynamic dimensions: operand 'input'"):
        b.gru(x, w, r, 1, 1)


def test_dynamic_operations_are_those_of_dynamic_nn_ops():
    refused = set(map(str, OPS)) - set(webnn.dynamic_operations())
    assert refused == {"convTranspose2d", "gatherND", "gru", "gruCell", "lstm", "lstmCell", "resample2d",
                       "scatterElements", "scatterND"}
    not_dynamic = {n for n, o in NN_OPS.load().items() if not o.dynamic}
    assert {"conv_transpose2d", "gather_nd", "gru", "gru_cell", "lstm", "lstm_cell", "resample2d", "scatter_elements",
            "scatter_nd"} <= not_dynamic


def _block(ctx, w):
    """The oracle's single-head block with the Python builder; x and mask share the symbol seq."""
    b = webnn.MLGraphBuilder(ctx)
    c = {k: b.constant(f32(*v.shape), v) for k, v in w.items()}
    x, mask = b.input("x", f32(1, SEQ, oracle.D)), b.input("mask", f32(1, SEQ))

    def norm(v, g, beta):
        return b.layerNormalization(v, {"axes": [2], "scale": c[g], "bias": c[beta], "epsilon": 1e-5})

    def linear(v, k, bias):
        return b.add(b.matmul(v, c[k]), c[bias])

    h = norm(x, "ln1_g", "ln1_b")
    q, k, v = linear(h, "wq", "bq"), linear(h, "wk", "bk"), linear(h, "wv", "bv")
    scores = b.mul(b.matmul(q, b.transpose(k, {"permutation": [0, 2, 1]})), b.constant("float32", 1 / np.sqrt(oracle.D)))
    scores = b.add(scores, b.reshape(mask, [1, 1, mask.shape[1]]))
    y1 = b.add(x, linear(b.matmul(b.softmax(scores, 2), v), "wo", "bo"))
    y = b.add(y1, linear(b.gelu(linear(norm(y1, "ln2_g", "ln2_b"), "w1", "b1")), "w2", "b2"))
    return b.build({"y": y})


def test_compute_and_dispatch_one_graph_every_length(ctx):
    w = oracle.weights()
    graph = _block(ctx, w)
    assert graph.inputDescriptors == {"x": f32(1, SEQ, oracle.D), "mask": f32(1, SEQ)}
    sess = oracle.session(w, heads=1)
    for n in (1, 7, 64, 128):
        feeds = oracle.feeds(n)
        expected = sess.run(["y"], feeds)[0]
        np.testing.assert_allclose(ctx.compute(graph, feeds)["y"], expected, rtol=1e-4, atol=1e-4, err_msg=f"{n}")
        tensors = {k: ctx.createTensor({**f32(*a.shape), "writable": True}) for k, a in feeds.items()}
        for k, a in feeds.items():
            ctx.writeTensor(tensors[k], a)
        out = ctx.createTensor({**f32(1, n, oracle.D), "readable": True})
        ctx.dispatch(graph, tensors, {"y": out})
        np.testing.assert_allclose(ctx.readTensor(out), expected, rtol=1e-4, atol=1e-4, err_msg=f"dispatch {n}")


def test_dispatch_checks_concrete_shapes(ctx):
    b = webnn.MLGraphBuilder(ctx)
    x, m = b.input("x", f32(1, SEQ)), b.input("m", f32(1, SEQ))
    graph = b.build({"y": b.add(x, m)})

    def tensor(n, **usage):
        return ctx.createTensor({**f32(1, n), **usage})

    ctx.writeTensor(a := tensor(5, writable=True), np.ones((1, 5), np.float32))
    ctx.dispatch(graph, {"x": a, "m": a}, {"y": (y := tensor(5, readable=True))})
    np.testing.assert_array_equal(ctx.readTensor(y), 2 * np.ones((1, 5)))
    with pytest.raises(TypeError_, match=r"dispatch\(\): input 'm' dimension 1 \(seq\) is 6, but input 'x' dimension "
                                         r"1 gave seq = 5"):
        ctx.dispatch(graph, {"x": a, "m": tensor(6)}, {"y": y})
    with pytest.raises(TypeError_, match=r"input 'x' dimension 1 \(seq\) is 129, outside its bounds 1\.\.128"):
        ctx.dispatch(graph, {"x": tensor(129), "m": tensor(129)}, {"y": tensor(129)})
    with pytest.raises(TypeError_, match=r"output 'y' is a float32\[1, 4\] tensor, the graph's is float32\[1, 5\]"):
        ctx.dispatch(graph, {"x": a, "m": a}, {"y": tensor(4)})
    with pytest.raises(TypeError_, match=r"input 'x' is a float32\[2, 5\] tensor"):
        ctx.dispatch(graph, {"x": ctx.createTensor(f32(2, 5)), "m": a}, {"y": y})
    with pytest.raises(TypeError_, match=r"compute\(\): input 'm' dimension 1 \(seq\) is 2, but input 'x'"):
        ctx.compute(graph, {"m": np.ones((1, 2), np.float32), "x": np.ones((1, 3), np.float32)})


def test_device_dispatch_checks_the_model_signature(ctx):
    """estuary.mltensor.dispatch, below the API: the model's own shape rules refuse what it cannot run."""
    from estuary.mltensor import DeviceTensor, dispatch

    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", f32(1, SEQ))
    graph = b.build({"y": b.concat([x, x], 1)})
    model = ctx._model(graph, "dispatch")
    inp = DeviceTensor(ctx.driver, [1, 3], "float32")
    inp.write(np.arange(3, dtype=np.float32).reshape(1, 3))
    out = DeviceTensor(ctx.driver, [1, 6], "float32")
    dispatch(model, {"x": inp}, {"y": out})
    np.testing.assert_array_equal(out.read(), [[0, 1, 2, 0, 1, 2]])
    with pytest.raises(RuntimeInputError, match=r"output 'y' has shape \[1, 6\] for these inputs; the output tensor "
                                                r"is \[1, 5\]"):
        dispatch(model, {"x": inp}, {"y": DeviceTensor(ctx.driver, [1, 5], "float32")})
