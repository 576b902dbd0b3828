"""conv2d / convTranspose2d vs onnxruntime Conv / ConvTranspose."""
import numpy as np
import pytest
from onnx import helper

from helpers import assert_accumulated, graph, op, run_graph, run_onnx

# layout -> permutation from OIHW (conv) / IOHW (transpose) to that layout
FROM_OIHW = {"oihw": (0, 1, 2, 3), "hwio": (2, 3, 1, 0), "ohwi": (0, 2, 3, 1), "ihwo": (1, 2, 3, 0)}
FROM_IOHW = {"iohw": (0, 1, 2, 3), "hwoi": (2, 3, 1, 0), "ohwi": (1, 2, 3, 0)}


def _onnx_pads(p):
    return [p[0], p[2], p[1], p[3]]  # WebNN [t, b, l, r] -> ONNX [t, l, b, r]


def conv_case(rng, cin=4, cout=6, size=(9, 8), k=(3, 3), padding=(0, 0, 0, 0), strides=(1, 1),
              dilations=(1, 1), groups=1, bias=True, input_layout="nchw", filter_layout="oihw", dtype=np.float32,
              target="llvm-cpu"):
    x = rng.standard_normal((2, cin) + size).astype(np.float32)
    w = rng.standard_normal((cout, cin // groups) + k).astype(np.float32)
    b = rng.standard_normal(cout).astype(np.float32)
    x, w, b = (a.astype(dtype).astype(np.float32) for a in (x, w, b))  # the oracle sees what we see
    xin = x.transpose(0, 2, 3, 1) if input_layout == "nhwc" else x
    feeds = {"x": xin.astype(dtype)}
    consts = {"w": w.transpose(FROM_OIHW[filter_layout]).astype(dtype)}
    options = dict(padding=list(padding), strides=list(strides), dilations=list(dilations), groups=groups,
                   inputLayout=input_layout, filterLayout=filter_layout)
    if bias:
        consts["b"] = b.astype(dtype)
        options["bias"] = "b"
    doc = graph({"x": feeds["x"]}, [op("conv2d", ("input", "x"), ("filter", "w"), **options)], ["y"], consts)
    got = run_graph(doc, feeds, target=target)["y"]
    ref = run_onnx([helper.make_node("Conv", ["x", "w"] + (["b"] if bias else []), ["y"], pads=_onnx_pads(padding),
                                     strides=list(strides), dilations=list(dilations), group=groups)],
                   {"x": x}, [("y", np.float32, None)], initializers={"w": w, **({"b": b} if bias else {})})["y"]
    if input_layout == "nhwc":
        ref = ref.transpose(0, 2, 3, 1)
    _compare(got, ref, dtype, (cin // groups) * k[0] * k[1])


def _compare(got, ref_f32, dtype, n):
    """float16 results against the float32 oracle (run on the same float16-rounded data), cast."""
    assert got.dtype == dtype
    assert_accumulated(got, ref_f32.astype(dtype), n)


@pytest.mark.parametrize("kw", [
    {},
    {"padding": (1, 1, 1, 1)},
    {"padding": (0, 2, 1, 0), "strides": (2, 3)},
    {"strides": (2, 2), "padding": (1, 0, 1, 0)},
    {"dilations": (2, 3), "padding": (2, 2, 3, 3)},
    {"bias": False},
    {"groups": 2},
    # grouped (not depthwise): one grouped convolution over [N, H, W, G, C/G] in the lowering
    {"groups": 3, "cin": 6, "cout": 9, "padding": (0, 2, 1, 0), "strides": (2, 1), "dilations": (1, 2)},
    {"groups": 4, "cin": 8, "cout": 8, "k": (1, 1), "strides": (2, 2)},
    {"groups": 2, "cin": 4, "cout": 6, "bias": False, "padding": (1, 1, 1, 1), "dtype": np.float16},
    {"groups": 4, "cin": 4, "cout": 8},  # depthwise, multiplier 2
    {"groups": 4, "cin": 4, "cout": 4, "strides": (2, 2), "padding": (1, 1, 1, 1)},
    {"k": (1, 1)},
    {"k": (5, 2), "padding": (2, 2, 0, 1)},
    # every window reads only the begin padding along an axis (output = bias there): the lowering
    # pads to the stride instead of slicing the input away
    {"size": (1, 1), "k": (1, 1), "padding": (1, 0, 1, 0), "strides": (2, 2)},
    {"size": (1, 3), "k": (1, 2), "padding": (1, 0, 0, 0), "strides": (3, 1)},
    {"size": (2, 2), "k": (1, 1), "padding": (2, 0, 0, 0), "strides": (4, 1), "groups": 4, "cin": 4, "cout": 4},
])
def test_conv2d(kw, rng):
    conv_case(rng, **kw)


@pytest.mark.parametrize("input_layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("filter_layout", ["oihw", "hwio", "ohwi", "ihwo"])
def test_conv2d_layouts(input_layout, filter_layout, rng):
    conv_case(rng, input_layout=input_layout, filter_layout=filter_layout, padding=(1, 0, 0, 1), strides=(1, 2))


def test_conv2d_float16(rng):
    conv_case(rng, dtype=np.float16, padding=(1, 1, 1, 1))


def transpose_case(rng, cin=4, cout=3, size=(5, 4), k=(3, 3), padding=(0, 0, 0, 0), strides=(1, 1),
                   dilations=(1, 1), output_padding=(0, 0), output_sizes=None, groups=1, bias=True,
                   input_layout="nchw", filter_layout="iohw", dtype=np.float32, target="llvm-cpu"):
    x = rng.standard_normal((2, cin) + size).astype(dtype).astype(np.float32)
    w = rng.standard_normal((cin, cout // groups) + k).astype(dtype).astype(np.float32)
    b = rng.standard_normal(cout).astype(dtype).astype(np.float32)
    xin = (x.transpose(0, 2, 3, 1) if input_layout == "nhwc" else x).astype(dtype)
    consts = {"w": w.transpose(FROM_IOHW[filter_layout]).astype(dtype)}
    options = dict(padding=list(padding), strides=list(strides), dilations=list(dilations), groups=groups,
                   outputPadding=list(output_padding), inputLayout=input_layout, filterLayout=filter_layout)
    if output_sizes:
        options["outputSizes"] = list(output_sizes)
    if bias:
        consts["b"] = b.astype(dtype)
        options["bias"] = "b"
    doc = graph({"x": xin}, [op("convTranspose2d", ("input", "x"), ("filter", "w"), **options)], ["y"], consts)
    got = run_graph(doc, {"x": xin}, target=target)["y"]
    if output_sizes:
        # WebNN keeps the given padding and grows the end, i.e. outputPadding = outputSizes - the size
        # without it; ONNX output_shape would instead re-derive the pads, so give the oracle that padding
        output_padding = [o - ((i - 1) * s + (kk - 1) * d + 1 - pb - pe) for o, i, s, kk, d, pb, pe in
                          zip(output_sizes, size, strides, k, dilations, padding[0::2], padding[1::2])]
    attrs = dict(pads=_onnx_pads(padding), strides=list(strides), dilations=list(dilations), group=groups,
                 output_padding=list(output_padding))
    ref = run_onnx([helper.make_node("ConvTranspose", ["x", "w"] + (["b"] if bias else []), ["y"], **attrs)],
                   {"x": x}, [("y", np.float32, None)], initializers={"w": w, **({"b": b} if bias else {})})["y"]
    if input_layout == "nhwc":
        ref = ref.transpose(0, 2, 3, 1)
    _compare(got, ref, dtype, (cin // groups) * k[0] * k[1])


@pytest.mark.parametrize("kw", [
    {},
    {"strides": (2, 2)},
    {"strides": (2, 3), "padding": (1, 0, 1, 2), "output_padding": (1, 2)},
    {"dilations": (2, 1), "padding": (1, 1, 0, 0)},
    {"strides": (3, 2), "padding": (2, 2, 1, 1)},
    {"k": (2, 2), "strides": (3, 3), "padding": (2, 1, 3, 0)},  # padding beyond the kernel extent: crops
    # spec-valid corner: the only output row lies past every scattered input row (bias only)
    {"size": (1, 4), "k": (1, 3), "strides": (3, 1), "padding": (2, 0, 1, 1), "output_padding": (2, 0)},
    {"groups": 2, "cin": 4, "cout": 6, "strides": (2, 2)},
    {"groups": 4, "cin": 4, "cout": 4, "strides": (2, 2), "padding": (1, 1, 1, 1)},  # depthwise
    {"dilations": (2, 2), "strides": (2, 3), "padding": (1, 2, 0, 1), "output_sizes": (11, 13)},
    {"strides": (2, 2), "output_sizes": (12, 10)},
    {"bias": False, "k": (2, 4)},
])
def test_conv_transpose2d(kw, rng):
    transpose_case(rng, **kw)


@pytest.mark.parametrize("input_layout,filter_layout", [("nhwc", "hwoi"), ("nchw", "ohwi"), ("nhwc", "iohw")])
def test_conv_transpose2d_layouts(input_layout, filter_layout, rng):
    transpose_case(rng, input_layout=input_layout, filter_layout=filter_layout, strides=(2, 2))


def test_conv_transpose2d_float16(rng):
    transpose_case(rng, dtype=np.float16, strides=(2, 2), padding=(1, 0, 0, 1), output_padding=(1, 0))


@pytest.mark.vulkan
def test_vulkan_conv2d(rng):
    conv_case(rng, padding=(1, 1, 1, 1), strides=(2, 2), target="vulkan-spirv")


@pytest.mark.vulkan
def test_vulkan_conv_transpose2d(rng):
    transpose_case(rng, strides=(2, 2), target="vulkan-spirv")
