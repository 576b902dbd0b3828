"""batch / instance / layer normalization (WebNN §7.7.6, §7.7.24, §7.7.25) vs onnxruntime.

The oracles run in float32 (float16 operands are widened by Cast nodes and the result rounded
once), with epsilon first cast to the input's type as the spec's steps do. Where ONNX normalizes
different axes than WebNN asks for, the ONNX graph moves them with Transpose/Reshape or composes
the normalization from ReduceMean/Sub/Mul/Sqrt/Div.
"""
import numpy as np
import pytest
from onnx import TensorProto, helper

from estuary.dialects import core
from helpers import assert_accumulated, graph, op, run_graph, run_onnx


def _eps(epsilon, dtype):
    return float(np.asarray(epsilon, dtype))


def _widen(name):
    """Cast `name` to float32 as `name`32 (a no-op cast for float32)."""
    return helper.make_node("Cast", [name], [name + "32"], to=TensorProto.FLOAT)


def _narrow(src, dst, dtype):
    to = TensorProto.FLOAT16 if dtype == np.float16 else TensorProto.FLOAT
    return helper.make_node("Cast", [src], [dst], to=to)


# ---------------------------------------------------------------- batchNormalization


def _bn_oracle(x, mean, var, scale, bias, axis, epsilon):
    """ONNX BatchNormalization (inference) normalizes axis 1 of [N, C, ...]: move `axis` last,
    flatten to [-1, C], normalize, and undo both."""
    rank, c = x.ndim, x.shape[axis]
    perm = [i for i in range(rank) if i != axis] + [axis]
    moved = [x.shape[i] for i in perm]
    nodes = [_widen("x"),
             helper.make_node("Transpose", ["x32"], ["t"], perm=perm),
             helper.make_node("Reshape", ["t", "flat"], ["f"]),
             helper.make_node("BatchNormalization", ["f", "s", "b", "m", "v"], ["u"],
                              epsilon=_eps(epsilon, x.dtype)),
             helper.make_node("Reshape", ["u", "moved"], ["r"]),
             helper.make_node("Transpose", ["r"], ["y32"], perm=list(np.argsort(perm))),
             _narrow("y32", "y", x.dtype)]
    f32 = lambda v, default: (np.full(c, default, np.float32) if v is None else v.astype(np.float32))  # noqa: E731
    init = {"flat": np.array([-1, c], np.int64), "moved": np.array(moved, np.int64),
            "s": f32(scale, 1.0), "b": f32(bias, 0.0), "m": f32(mean, 0), "v": f32(var, 0)}
    return run_onnx(nodes, {"x": x}, [("y", x.dtype, None)], initializers=init)["y"]


def _bn_case(rng, shape, axis, dtype, affine):
    x = rng.standard_normal(shape).astype(dtype)
    c = shape[axis]
    mean = rng.standard_normal(c).astype(dtype)
    var = (rng.random(c) + 0.5).astype(dtype)
    scale = rng.standard_normal(c).astype(dtype) if "scale" in affine else None
    bias = rng.standard_normal(c).astype(dtype) if "bias" in affine else None
    return x, mean, var, scale, bias


@pytest.mark.parametrize("shape,axis,affine", [
    ((2, 3, 4, 5), 1, "scale,bias"),  # nchw, the default axis
    ((2, 3, 4, 5), 1, ""),
    ((2, 3, 4, 5), 3, "scale,bias"),  # nhwc
    ((2, 3, 4, 5), 0, "scale"),
    ((4, 6), 1, "bias"),
    ((3, 5, 2), 2, "scale,bias"),
    ((7,), 0, "scale,bias"),  # rank 1: every element its own feature
])
def test_batch_normalization(shape, axis, affine, rng):
    x, mean, var, scale, bias = _bn_case(rng, shape, axis, np.float32, affine)
    consts = {"mean": mean, "var": var}
    options = {"epsilon": 1e-3}
    if axis != 1:
        options["axis"] = axis
    for name, v in (("scale", scale), ("bias", bias)):
        if v is not None:
            consts[name] = v
            options[name] = name
    doc = graph({"x": x}, [op("batchNormalization", ("input", "x"), ("mean", "mean"), ("variance", "var"),
                              **options)], ["y"], consts)
    got = run_graph(doc, {"x": x})["y"]
    assert_accumulated(got, _bn_oracle(x, mean, var, scale, bias, axis, 1e-3), 2)


def test_batch_normalization_float16(rng):
    x, mean, var, scale, bias = _bn_case(rng, (2, 4, 3, 3), 1, np.float16, "scale,bias")
    doc = graph({"x": x}, [op("batchNormalization", ("input", "x"), ("mean", "m"), ("variance", "v"), scale="s",
                              bias="b", epsilon=0.1)], ["y"], {"m": mean, "v": var, "s": scale, "b": bias})
    got = run_graph(doc, {"x": x})["y"]
    assert got.dtype == np.float16
    assert_accumulated(got, _bn_oracle(x, mean, var, scale, bias, 1, 0.1), 2)


def test_batch_normalization_reference(rng):
    x, mean, var, scale, bias = _bn_case(rng, (2, 3, 4, 5), 2, np.float32, "scale,bias")
    ref = core.get("batch_normalization").reference(x, mean, var, scale, bias, axis=2, epsilon=1e-3)
    assert_accumulated(ref.astype(np.float32), _bn_oracle(x, mean, var, scale, bias, 2, 1e-3), 2)


# ---------------------------------------------------------------- instanceNormalization


def _in_oracle(x, scale, bias, layout, epsilon):
    """ONNX InstanceNormalization is NCHW only: nhwc goes through Transposes in the graph."""
    c = x.shape[1] if layout == "nchw" else x.shape[3]
    nodes = [_widen("x")]
    src = "x32"
    if layout == "nhwc":
        nodes.append(helper.make_node("Transpose", ["x32"], ["xt"], perm=[0, 3, 1, 2]))
        src = "xt"
    nodes.append(helper.make_node("InstanceNormalization", [src, "s", "b"], ["n"], epsilon=_eps(epsilon, x.dtype)))
    if layout == "nhwc":
        nodes.append(helper.make_node("Transpose", ["n"], ["y32"], perm=[0, 2, 3, 1]))
    else:
        nodes.append(helper.make_node("Identity", ["n"], ["y32"]))
    nodes.append(_narrow("y32", "y", x.dtype))
    init = {"s": np.ones(c, np.float32) if scale is None else scale.astype(np.float32),
            "b": np.zeros(c, np.float32) if bias is None else bias.astype(np.float32)}
    return run_onnx(nodes, {"x": x}, [("y", x.dtype, None)], initializers=init)["y"]


@pytest.mark.parametrize("shape,layout,affine,dtype,epsilon", [
    ((2, 3, 5, 6), "nchw", True, np.float32, 1e-4),
    ((2, 5, 6, 3), "nhwc", True, np.float32, 1e-4),
    ((2, 3, 5, 6), "nchw", False, np.float32, 1e-4),
    # One element per instance: variance 0, output = bias. onnxruntime folds x into x * s' + b',
    # whose rounding grows with 1/sqrt(epsilon), hence a larger epsilon for this case.
    ((1, 4, 1, 1), "nchw", True, np.float32, 0.5),
    ((2, 4, 4, 3), "nhwc", True, np.float16, 1e-4),
])
def test_instance_normalization(shape, layout, affine, dtype, epsilon, rng):
    x = rng.standard_normal(shape).astype(dtype)
    c = shape[1] if layout == "nchw" else shape[3]
    scale = rng.standard_normal(c).astype(dtype) if affine else None
    bias = rng.standard_normal(c).astype(dtype) if affine else None
    options = {"layout": layout, "epsilon": epsilon} | ({"scale": "s", "bias": "b"} if affine else {})
    consts = {"s": scale, "b": bias} if affine else {}
    doc = graph({"x": x}, [op("instanceNormalization", ("input", "x"), **options)], ["y"], consts)
    got = run_graph(doc, {"x": x})["y"]
    assert got.dtype == dtype
    n = shape[2] * shape[3] if layout == "nchw" else shape[1] * shape[2]
    assert_accumulated(got, _in_oracle(x, scale, bias, layout, epsilon), n)


def test_instance_normalization_reference(rng):
    x = rng.standard_normal((2, 5, 6, 3)).astype(np.float32)
    scale, bias = rng.standard_normal(3).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    ref = core.get("instance_normalization").reference(x, scale, bias, epsilon=1e-4, layout="nhwc")
    assert_accumulated(ref.astype(np.float32), _in_oracle(x, scale, bias, "nhwc", 1e-4), 30)


# ---------------------------------------------------------------- layerNormalization


def _placed(v, axes, shape):
    """scale/bias (dims in the order of `axes`) laid out to broadcast against the input."""
    order = np.argsort(axes) if axes else []
    return v.astype(np.float32).transpose(order).reshape(shape)


def _ln_oracle(x, axes, scale, bias, epsilon):
    """ONNX LayerNormalization when `axes` are the trailing ones in order (its `axis` attribute),
    else the spec's decomposition in ONNX ops (ReduceMean of x and of the squared deviation)."""
    rank = x.ndim
    eps = _eps(epsilon, x.dtype)
    shape = [x.shape[i] if i in axes else 1 for i in range(rank)]
    norm_shape = [x.shape[a] for a in axes]
    scale = np.ones(norm_shape, np.float32) if scale is None else scale
    bias = np.zeros(norm_shape, np.float32) if bias is None else bias
    nodes = [_widen("x")]
    if axes and list(axes) == list(range(rank - len(axes), rank)):
        nodes.append(helper.make_node("LayerNormalization", ["x32", "s", "b"], ["y32"], axis=rank - len(axes),
                                      epsilon=eps))
        init = {"s": scale.astype(np.float32), "b": bias.astype(np.float32)}
    else:
        mean = dict(keepdims=1, noop_with_empty_axes=1)  # empty axes: no reduction, as in WebNN
        nodes += [helper.make_node("ReduceMean", ["x32", "ax"], ["m"], **mean),
                  helper.make_node("Sub", ["x32", "m"], ["d"]),
                  helper.make_node("Mul", ["d", "d"], ["d2"]),
                  helper.make_node("ReduceMean", ["d2", "ax"], ["v"], **mean),
                  helper.make_node("Add", ["v", "eps"], ["ve"]),
                  helper.make_node("Sqrt", ["ve"], ["sd"]),
                  helper.make_node("Div", ["d", "sd"], ["n"]),
                  helper.make_node("Mul", ["n", "s"], ["ns"]),
                  helper.make_node("Add", ["ns", "b"], ["y32"])]
        init = {"ax": np.array(axes, np.int64), "eps": np.float32(eps), "s": _placed(scale, axes, shape),
                "b": _placed(bias, axes, shape)}
    nodes.append(_narrow("y32", "y", x.dtype))
    return run_onnx(nodes, {"x": x}, [("y", x.dtype, None)], initializers=init, opset=18)["y"]


def _ln_run(x, axes, scale, bias, epsilon=1e-5, target="llvm-cpu"):
    options = {"epsilon": epsilon} | ({"axes": axes} if axes is not None else {})
    consts = {}
    for name, v in (("scale", scale), ("bias", bias)):
        if v is not None:
            consts[name] = v
            options[name] = name
    doc = graph({"x": x}, [op("layerNormalization", ("input", "x"), **options)], ["y"], consts)
    return run_graph(doc, {"x": x}, target=target)["y"]


def _ln_case(rng, shape, axes, dtype, affine=True):
    x = rng.standard_normal(shape).astype(dtype)
    ax = list(range(1, len(shape))) if axes is None else axes
    sizes = [shape[a] for a in ax]
    scale = rng.standard_normal(sizes).astype(dtype) if affine else None
    bias = rng.standard_normal(sizes).astype(dtype) if affine else None
    return x, ax, scale, bias


@pytest.mark.parametrize("shape,axes,affine", [
    ((2, 3, 4), None, True),  # default: all but the first
    ((2, 3, 4), [2], True),
    ((2, 3, 4), [0, 2], True),  # non-trailing
    ((2, 3, 4), [2, 1], True),  # unsorted: scale is [4, 3]
    ((2, 3, 4), [], True),  # empty: nothing reduced, output = bias
    ((2, 3, 4, 5), None, False),
    ((6,), None, True),  # rank 1: default axes are empty
    ((3, 2, 64), [2], True),
])
def test_layer_normalization(shape, axes, affine, rng):
    x, ax, scale, bias = _ln_case(rng, shape, axes, np.float32, affine)
    got = _ln_run(x, axes, scale, bias)
    assert_accumulated(got, _ln_oracle(x, ax, scale, bias, 1e-5), max(1, int(np.prod([shape[a] for a in ax]))))


@pytest.mark.parametrize("shape,axes", [((4, 8), None), ((2, 5, 3), [1])])
def test_layer_normalization_float16(shape, axes, rng):
    x, ax, scale, bias = _ln_case(rng, shape, axes, np.float16)
    got = _ln_run(x, axes, scale, bias, epsilon=1e-3)
    assert got.dtype == np.float16
    assert_accumulated(got, _ln_oracle(x, ax, scale, bias, 1e-3), int(np.prod([shape[a] for a in ax])))


@pytest.mark.parametrize("axes", [[2, 1], [], [0, 2]])
def test_layer_normalization_reference(axes, rng):
    x, ax, scale, bias = _ln_case(rng, (2, 3, 4), axes, np.float32)
    ref = core.get("layer_normalization").reference(x, scale, bias, axes=axes, epsilon=1e-5)
    assert_accumulated(ref.astype(np.float32), _ln_oracle(x, ax, scale, bias, 1e-5), 12)


@pytest.mark.vulkan
def test_vulkan_layer_normalization(rng):
    x, ax, scale, bias = _ln_case(rng, (2, 3, 4), [2, 1], np.float32)
    got = _ln_run(x, [2, 1], scale, bias, target="vulkan-spirv")
    assert_accumulated(got, _ln_oracle(x, ax, scale, bias, 1e-5), 12)
