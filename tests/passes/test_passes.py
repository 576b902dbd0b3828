"""The nn-level optimization passes: a small residual conv net (conv, batch-norm, relu, max pool,
per-channel scale, residual add, depthwise conv, average pool, gemm) agrees with onnxruntime with
every pass on, with each layout/folding pass off, and with all passes off."""
import os
import sys

import numpy as np
import pytest

import estuary
from estuary.base.errors import EstuaryError
from estuary.backends import pipeline

from helpers import ROOT  # noqa: E402 - the repository
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import models  # noqa: E402
from helpers import onnx_model_case  # noqa: E402


def _net():
    net, rng = models.Net(7), np.random.default_rng(107)
    x = rng.standard_normal((1, 4, 12, 12)).astype(np.float32)
    y = net.node("Relu", [net.bn(net.conv("x", 4, 8, 3, 12), 8)])
    y = net.node("MaxPool", [y], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    scale = net.const((1 + 0.1 * rng.standard_normal((8, 1, 1))).astype(np.float32), "s")
    z = net.node("Mul", [net.bn(net.conv(y, 8, 8, 3, 6, bias=False), 8), scale])
    y = net.node("Relu", [net.node("Add", [z, y])])
    y = net.node("Relu", [net.conv(y, 8, 8, 3, 6, groups=8)])
    y = net.node("Flatten", [net.node("GlobalAveragePool", [y])])
    net.gemm(y, 8, 5, trans_b=True)
    net.nodes[-1].output[0] = "y"
    return net.model({"x": x}, ["y"], {"x": x})


@pytest.fixture(scope="module", params=["webnn", "coreml"])
def case(tmp_path_factory, request):
    """The net as WebNN JSON (NCHW convs) and as a Core ML model (NCHW, explicitly padded pool)."""
    model, feeds, _ = _net()
    return onnx_model_case(model, feeds, tmp_path_factory.mktemp("passes"), request.param)


@pytest.mark.parametrize("optimize, disable", [
    (True, ()),
    (True, ("nn-layout-nhwc", "nn-canonicalize-transposes")),
    (True, ("nn-fold-batch-norm",)),
    (False, ()),
])
def test_net_matches_onnxruntime(case, optimize, disable):
    path, feeds, ref = case
    got = estuary.load(estuary.compile(path, optimize=optimize, disable_passes=disable)).run(feeds)["y"]
    np.testing.assert_allclose(got, ref, rtol=2e-5, atol=2e-5 * float(np.abs(ref).max()))


def test_unknown_disabled_pass_is_a_clear_error(case):
    with pytest.raises(EstuaryError, match="cannot disable pass.*nn-no-such-pass"):
        estuary.compile(case[0], disable_passes=["nn-no-such-pass"])


def test_optimizations_are_registered_passes():
    from estuary.passes import load_all

    assert set(pipeline.OPTIMIZATIONS) <= set(load_all())


def _optimized_ops(path):
    """Counter of the nn op names left after the optimization passes."""
    from collections import Counter

    from estuary.importers import import_model
    from estuary.passes.lowering import nn_ops

    nn = import_model(path)
    pipeline.run(nn, ["nn-verify"] + pipeline.OPTIMIZATIONS)
    return Counter(o.name[3:] for o in nn_ops(nn.module.operation))


def test_pipeline_removes_batch_norm_and_per_layer_transposes(case):
    ops = _optimized_ops(case[0])
    assert ops["batch_normalization"] == 0 and ops["mul"] == 0 and ops["conv2d"] == 3
    assert ops["transpose"] == 1  # the NCHW input only; the pooled output leaves through a reshape


def test_cli_disable_pass(case, tmp_path):
    from estuary import cli

    out = tmp_path / "net.vmfb"
    assert cli.main(["compile", case[0], "-o", str(out), "--quiet", "--disable-pass", "nn-layout-nhwc",
                     "--disable-pass", "nn-fold-batch-norm"]) in (0, None)
    got = estuary.load(str(out)).run(case[1])["y"]
    np.testing.assert_allclose(got, case[2], rtol=2e-5, atol=2e-5 * float(np.abs(case[2]).max()))
    assert cli.main(["compile", case[0], "-o", str(out), "--quiet", "--disable-pass", "nn-bogus"]) not in (0, None)


@pytest.mark.parametrize("keep", [True, False])
@pytest.mark.parametrize("optimize", [True, False])
def test_transposes_sink_through_pads_and_reductions(keep, optimize, tmp_path):
    """NCHW conv (run in NHWC) -> pad -> reductions over kept and dropped axes: the transposes move
    below the pad and the reductions, and the numbers stay onnxruntime's."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    from estuary import webnn

    rng = np.random.default_rng(109)
    x = rng.standard_normal((1, 3, 7, 6)).astype(np.float32)
    w = rng.standard_normal((5, 3, 3, 3)).astype(np.float32)
    pads, sum_axes, max_axes = ([0, 0, 1, 2], [0, 0, 3, 0]), [1, 3], [2]

    b = webnn.MLGraphBuilder(webnn.ML().createContext())
    y = b.relu(b.conv2d(b.input("x", {"dataType": "float32", "shape": list(x.shape)}),
                        b.constant({"dataType": "float32", "shape": list(w.shape)}, w), {"padding": [1, 1, 1, 1]}))
    y = b.pad(y, *pads)
    graph = b.build({"s": b.reduceSum(y, {"axes": sum_axes, "keepDimensions": keep}),
                     "m": b.reduceMax(y, {"axes": max_axes, "keepDimensions": keep})})
    path = str(tmp_path / "g.json")
    graph.to_json(path)
    got = estuary.load(estuary.compile(path, optimize=optimize)).run({"x": x})
    if optimize:  # the input's transpose and one after reduce_max; the pad and both reductions run in NHWC
        assert _optimized_ops(path)["transpose"] == 2

    def const(name, value):
        return numpy_helper.from_array(np.asarray(value), name)

    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Pad", ["r", "pads"], ["p"]),
             helper.make_node("ReduceSum", ["p", "sa"], ["s"], keepdims=int(keep)),
             helper.make_node("ReduceMax", ["p", "ma"], ["m"], keepdims=int(keep))]
    model = helper.make_model(helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("s", "m")],
        [const("w", w), const("pads", np.array(pads[0] + pads[1], np.int64)),
         const("sa", np.array(sum_axes, np.int64)), const("ma", np.array(max_axes, np.int64))]),
        opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(["s", "m"],
                                                                                                  {"x": x})
    for name, want in zip(("s", "m"), ref):
        assert got[name].shape == want.shape
        np.testing.assert_allclose(got[name], want, rtol=1e-5, atol=1e-5)
