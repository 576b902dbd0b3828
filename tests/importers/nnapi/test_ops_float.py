"""NNAPI float operations vs onnxruntime on the equivalent ONNX graph (NHWC <-> NCHW transposed)."""
import numpy as np
import pytest
from onnx import helper

import estuary
from estuary import nnapi
from estuary.nnapi import OperandCode as T, OperationCode as Op
from helpers import assert_accumulated, assert_exact, run_onnx


class Builder:
    """A small helper over nnapi.Model for tests."""

    def __init__(self):
        self.m = nnapi.Model()
        self.inputs = []

    def tensor(self, shape, value=None, code=T.TENSOR_FLOAT32):
        i = self.m.add_operand(code, dimensions=list(shape))
        if value is not None:
            self.m.set_operand_value(i, value)
        return i

    def scalar(self, v, code=T.INT32):
        i = self.m.add_operand(code)
        self.m.set_operand_value(i, v)
        return i

    def run(self, op, ins, out_shape, feeds):
        out = self.tensor(out_shape)
        self.m.add_operation(op, ins, [out])
        self.m.identify_inputs_and_outputs(self.inputs, [out])
        self.m.finish()
        c = nnapi.Compilation(self.m)
        c.finish()
        e = nnapi.Execution(c)
        for k, arr in enumerate(feeds):
            e.set_input(k, arr)
        return e.compute()[0]


def nchw(a):
    return a.transpose(0, 3, 1, 2)


def nhwc(a):
    return a.transpose(0, 2, 3, 1)


@pytest.mark.parametrize("implicit,fuse", [(False, 0), (True, 1), (True, 3)])
def test_conv_2d(implicit, fuse, rng):
    x = rng.standard_normal((1, 7, 8, 3)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)  # [out, kh, kw, in]
    bias = rng.standard_normal(4).astype(np.float32)
    b = Builder()
    b.inputs = [b.tensor(x.shape)]
    ins = [b.inputs[0], b.tensor(w.shape, w), b.tensor(bias.shape, bias)]
    if implicit:  # SAME, strides 2 / 1: out 4 x 8, pads top 1 bottom 1 (h: total 2), left 1 right 1
        ins += [b.scalar(nnapi.PaddingCode.PADDING_SAME), b.scalar(1), b.scalar(2)]
        out_shape, pads, strides = (1, 4, 8, 4), [1, 1, 1, 1], [2, 1]
    else:
        ins += [b.scalar(v) for v in (0, 1, 1, 0, 1, 1)]  # left, right, top, bottom, stride w, stride h
        out_shape, pads, strides = (1, 6, 7, 4), [1, 0, 0, 1], [1, 1]
    ins.append(b.scalar(fuse))
    got = b.run(Op.CONV_2D, ins, out_shape, [x])
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=pads, strides=strides)]
    nodes += {0: [helper.make_node("Identity", ["c"], ["y"])], 1: [helper.make_node("Relu", ["c"], ["y"])],
              3: [helper.make_node("Clip", ["c", "lo", "hi"], ["y"])]}[fuse]
    ref = run_onnx(nodes, {"x": nchw(x)}, [("y", np.float32, None)],
                   initializers={"w": nchw(w), "b": bias, "lo": np.float32(0), "hi": np.float32(6)})["y"]
    assert_accumulated(got, nhwc(ref), 27)


def test_depthwise_conv_2d(rng):
    x = rng.standard_normal((1, 6, 6, 2)).astype(np.float32)
    w = rng.standard_normal((1, 3, 3, 4)).astype(np.float32)  # multiplier 2
    bias = rng.standard_normal(4).astype(np.float32)
    b = Builder()
    b.inputs = [b.tensor(x.shape)]
    ins = [b.inputs[0], b.tensor(w.shape, w), b.tensor(bias.shape, bias),
           b.scalar(nnapi.PaddingCode.PADDING_VALID), b.scalar(1), b.scalar(1), b.scalar(2), b.scalar(0)]
    got = b.run(Op.DEPTHWISE_CONV_2D, ins, (1, 4, 4, 4), [x])
    w_onnx = w.reshape(3, 3, 4).transpose(2, 0, 1)[:, None]  # [C*M, 1, kh, kw]
    ref = run_onnx([helper.make_node("Conv", ["x", "w", "b"], ["y"], group=2)], {"x": nchw(x)},
                   [("y", np.float32, None)], initializers={"w": w_onnx, "b": bias})["y"]
    assert_accumulated(got, nhwc(ref), 9)


@pytest.mark.parametrize("op,onnx_op", [(Op.AVERAGE_POOL_2D, "AveragePool"), (Op.MAX_POOL_2D, "MaxPool"),
                                        (Op.L2_POOL_2D, "L2")])
def test_pools(op, onnx_op, rng):
    x = rng.standard_normal((1, 5, 5, 2)).astype(np.float32)
    b = Builder()
    b.inputs = [b.tensor(x.shape)]
    ins = [b.inputs[0]] + [b.scalar(v) for v in (1, 1, 1, 1, 2, 2, 3, 3, 0)]  # pads l r t b, strides, filter
    got = b.run(op, ins, (1, 3, 3, 2), [x])
    window = dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2])
    if onnx_op == "L2":  # the spec's sqrt(sum(x^2) / sum(1)) over in-bounds elements, as Android's reference
        nodes = [helper.make_node("Mul", ["x", "x"], ["sq"]),
                 helper.make_node("AveragePool", ["sq"], ["m"], count_include_pad=0, **window),
                 helper.make_node("Sqrt", ["m"], ["y"])]
    else:
        extra = {"AveragePool": {"count_include_pad": 0}, "MaxPool": {}}[onnx_op]
        nodes = [helper.make_node(onnx_op, ["x"], ["y"], **window, **extra)]
    ref = run_onnx(nodes, {"x": nchw(x)}, [("y", np.float32, None)])["y"]
    assert_accumulated(got, nhwc(ref), 9)


def test_l2_pool_divides_by_the_window_count():
    """The issue's case: a 2x2 window over 0..15 (4x4, stride 2, no padding) averages the squares
    before the root: the first window (0, 1, 4, 5) gives sqrt(42 / 4) = 3.24, not sqrt(42)."""
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    b = Builder()
    b.inputs = [b.tensor(x.shape)]
    ins = [b.inputs[0]] + [b.scalar(v) for v in (0, 0, 0, 0, 2, 2, 2, 2, 0)]
    got = b.run(Op.L2_POOL_2D, ins, (1, 2, 2, 1), [x])
    windows = x[0, :, :, 0].astype(np.float64).reshape(2, 2, 2, 2).transpose(0, 2, 1, 3).reshape(2, 2, 4)
    np.testing.assert_allclose(got[0, :, :, 0], np.sqrt((windows ** 2).mean(-1)), rtol=1e-6)
    assert abs(got[0, 0, 0, 0] - 3.2404) < 1e-3


def test_reshape_with_a_run_time_shape_operand(rng):
    """The CTS passes RESHAPE's shape as a model input ([-1]); the declared output shape decides.
    Without declared output dimensions the run-time shape is refused with a clear error."""
    x = rng.standard_normal((2, 3, 2)).astype(np.float32)
    b = Builder()
    b.inputs = [b.tensor(x.shape), b.tensor((1,), code=T.TENSOR_INT32)]
    got = b.run(Op.RESHAPE, b.inputs, (12,), [x, np.array([-1], np.int32)])
    np.testing.assert_array_equal(got, x.reshape(-1))
    b = Builder()
    b.inputs = [b.tensor(x.shape), b.tensor((1,), code=T.TENSOR_INT32)]
    with pytest.raises(estuary.EstuaryError, match="output operand's dimensions must be fully specified"):
        b.run(Op.RESHAPE, b.inputs, (0,), [x, np.array([-1], np.int32)])


def test_fully_connected_softmax_beta(rng):
    x = rng.standard_normal((2, 3, 2)).astype(np.float32)  # flattened to [2, 6]
    w = rng.standard_normal((4, 6)).astype(np.float32)
    bias = rng.standard_normal(4).astype(np.float32)
    b = Builder()
    b.inputs = [b.tensor(x.shape)]
    fc = b.tensor((2, 4))
    b.m.add_operation(Op.FULLY_CONNECTED, [b.inputs[0], b.tensor(w.shape, w), b.tensor(bias.shape, bias),
                                           b.scalar(1)], [fc])
    got = b.run(Op.SOFTMAX, [fc, b.scalar(0.5, T.FLOAT32)], (2, 4), [x])
    ref = run_onnx([helper.make_node("Reshape", ["x", "s"], ["f"]), helper.make_node("Gemm", ["f", "w", "b"], ["g"], transB=1),
                    helper.make_node("Relu", ["g"], ["r"]), helper.make_node("Mul", ["r", "beta"], ["rb"]),
                    helper.make_node("Softmax", ["rb"], ["y"], axis=1)], {"x": x}, [("y", np.float32, None)],
                   initializers={"s": np.array([2, 6], np.int64), "w": w, "b": bias, "beta": np.float32(0.5)})["y"]
    assert_accumulated(got, ref, 6)


def test_concat_reshape_logistic_tanh(rng):
    a = rng.standard_normal((2, 3)).astype(np.float32)
    b = Builder()
    b.inputs = [b.tensor(a.shape), b.tensor(a.shape)]
    cat = b.tensor((2, 6))
    b.m.add_operation(Op.CONCATENATION, b.inputs + [b.scalar(-1)], [cat])
    sig = b.tensor((2, 6))
    b.m.add_operation(Op.LOGISTIC, [cat], [sig])
    th = b.tensor((2, 6))
    b.m.add_operation(Op.TANH, [sig], [th])
    got = b.run(Op.RESHAPE, [th, b.tensor((2,), np.array([3, -1]), T.TENSOR_INT32)], (3, 4), [a, -a])
    ref = run_onnx([helper.make_node("Concat", ["a", "na"], ["c"], axis=1), helper.make_node("Sigmoid", ["c"], ["s"]),
                    helper.make_node("Tanh", ["s"], ["t"]), helper.make_node("Reshape", ["t", "shape"], ["y"])],
                   {"a": a, "na": -a}, [("y", np.float32, None)], initializers={"shape": np.array([3, 4], np.int64)})["y"]
    np.testing.assert_allclose(got, ref, rtol=2e-6, atol=1e-7)


def test_depth_space_round_trip(rng):
    x = rng.standard_normal((1, 2, 3, 8)).astype(np.float32)
    b = Builder()
    b.inputs = [b.tensor(x.shape)]
    d2s = b.tensor((1, 4, 6, 2))
    b.m.add_operation(Op.DEPTH_TO_SPACE, [b.inputs[0], b.scalar(2)], [d2s])
    got = b.run(Op.SPACE_TO_DEPTH, [d2s, b.scalar(2)], x.shape, [x])
    assert_exact(got, x)
    b2 = Builder()
    b2.inputs = [b2.tensor(x.shape)]
    got = b2.run(Op.DEPTH_TO_SPACE, [b2.inputs[0], b2.scalar(2)], (1, 4, 6, 2), [x])
    ref = run_onnx([helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=2, mode="DCR")], {"x": nchw(x)},
                   [("y", np.float32, None)])["y"]
    assert_exact(got, nhwc(ref))


def test_unsupported_operations_are_listed(monkeypatch):
    """An OperationCode without a converter (removed from the table here: all 29 have one) is listed
    with its operation index and name, also for a model loaded from its JSON form."""
    import estuary
    from estuary.importers.nnapi.ops import OPS

    monkeypatch.delitem(OPS.load()._entries, Op.LSH_PROJECTION)
    b = Builder()
    b.inputs = [b.tensor((1, 4))]
    hashes = b.tensor((2, 3), np.ones((2, 3), np.float32))
    weight = b.m.add_operand(T.TENSOR_FLOAT32, dimensions=[0])
    b.m.set_operand_value(weight, None)
    out = b.m.add_operand(T.TENSOR_INT32, dimensions=[2])
    b.m.add_operation(Op.LSH_PROJECTION, [hashes, b.inputs[0], weight, b.scalar(1)], [out])
    b.m.identify_inputs_and_outputs(b.inputs, [out])
    b.m.finish()
    model = nnapi.Model.from_json(b.m.to_json())
    with pytest.raises(estuary.UnsupportedOpError, match="#0 LSH_PROJECTION"):
        estuary.compile(model)


def test_l2_normalization_and_lrn(rng):
    x = rng.standard_normal((1, 2, 3, 6)).astype(np.float32)
    b = Builder()
    b.inputs = [b.tensor(x.shape)]
    got = b.run(Op.L2_NORMALIZATION, [b.inputs[0]], x.shape, [x])
    ref = run_onnx([helper.make_node("LpNormalization", ["x"], ["y"], axis=-1, p=2)], {"x": x},
                   [("y", np.float32, None)])["y"]
    assert_accumulated(got, ref, 6)
    b = Builder()
    b.inputs = [b.tensor(x.shape)]
    ins = [b.inputs[0], b.scalar(1), b.scalar(2.0, T.FLOAT32), b.scalar(0.5, T.FLOAT32), b.scalar(0.75, T.FLOAT32)]
    got = b.run(Op.LOCAL_RESPONSE_NORMALIZATION, ins, x.shape, [x])
    # ONNX LRN divides alpha by the window size: alpha_onnx = alpha * (2 * radius + 1)
    ref = run_onnx([helper.make_node("LRN", ["x"], ["y"], size=3, alpha=1.5, beta=0.75, bias=2.0)], {"x": nchw(x)},
                   [("y", np.float32, None)])["y"]
    assert_accumulated(got, nhwc(ref), 3, ulp_per_term=4)


@pytest.mark.parametrize("fuse", [1, 4])
def test_rnn(fuse, rng):
    x, h = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal((2, 4)).astype(np.float32)
    w, r = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((4, 4)).astype(np.float32)
    bias = rng.standard_normal(4).astype(np.float32)
    b = Builder()
    b.inputs = [b.tensor(x.shape), b.tensor(h.shape)]
    state = b.tensor((2, 4))
    out = b.tensor((2, 4))
    b.m.add_operation(Op.RNN, [b.inputs[0], b.tensor(w.shape, w), b.tensor(r.shape, r), b.tensor((4,), bias),
                               b.inputs[1], b.scalar(fuse)], [state, out])
    b.m.identify_inputs_and_outputs(b.inputs, [state, out])
    b.m.finish()
    c = nnapi.Compilation(b.m)
    c.finish()
    e = nnapi.Execution(c)
    e.set_input(0, x)
    e.set_input(1, h)
    got_state, got_out = e.compute()
    act = "Relu" if fuse == 1 else "Tanh"
    ref = run_onnx([helper.make_node("Gemm", ["x", "w", "b"], ["a"], transB=1), helper.make_node("Gemm", ["h", "r"], ["c"], transB=1),
                    helper.make_node("Add", ["a", "c"], ["s"]), helper.make_node(act, ["s"], ["y"])],
                   {"x": x, "h": h}, [("y", np.float32, None)], initializers={"w": w, "r": r, "b": bias})["y"]
    assert_accumulated(got_state, ref, 7, ulp_per_term=8)
    assert_exact(got_out, got_state)
