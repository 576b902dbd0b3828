"""Pooling vs onnxruntime (AveragePool count_include_pad=0, MaxPool, LpPool) and torch-free checks."""
import numpy as np
import pytest
from onnx import helper

from helpers import assert_accumulated, assert_exact, graph, op, run_graph, run_onnx


def _pads(p):
    return [p[0], p[2], p[1], p[3]]


def pool_case(rng, js, k=(3, 3), padding=(0, 0, 0, 0), strides=(1, 1), dilations=(1, 1), rounding="floor",
              layout="nchw", size=(9, 10), dtype=np.float32, output_sizes=None, target="llvm-cpu", global_=False):
    x = rng.standard_normal((2, 3) + size).astype(np.float32)
    xin = (x.transpose(0, 2, 3, 1) if layout == "nhwc" else x).astype(dtype)
    options = dict(padding=list(padding), strides=list(strides), dilations=list(dilations), roundingType=rounding,
                   layout=layout)
    if not global_:
        options["windowDimensions"] = list(k)
    if output_sizes:
        options["outputSizes"] = list(output_sizes)
    doc = graph({"x": xin}, [op(js, ("input", "x"), **options)], ["y"])
    got = run_graph(doc, {"x": xin}, target=target)["y"]
    ceil = int(rounding == "ceil" or output_sizes is not None)  # the tests ask outputSizes for ceil sizes
    if global_:
        k = size
    attrs = dict(kernel_shape=list(k), pads=_pads(padding), strides=list(strides), ceil_mode=ceil)
    if js == "averagePool2d":
        node = helper.make_node("AveragePool", ["x"], ["y"], count_include_pad=0, dilations=list(dilations), **attrs)
    elif js == "maxPool2d":
        node = helper.make_node("MaxPool", ["x"], ["y"], dilations=list(dilations), **attrs)
    else:
        node = helper.make_node("LpPool", ["x"], ["y"], p=2, dilations=list(dilations), **attrs)
    ref = run_onnx([node], {"x": x}, [("y", np.float32, None)], opset=21)["y"]
    if layout == "nhwc":
        ref = ref.transpose(0, 2, 3, 1)
    if js == "maxPool2d":
        assert_exact(got.astype(np.float32), ref.astype(dtype).astype(np.float32))
    else:
        assert_accumulated(got.astype(np.float32), ref, k[0] * k[1], ulp_per_term=2 if dtype == np.float32 else 4096)


CASES = [
    {},
    {"global_": True},
    {"padding": (1, 1, 1, 1)},
    {"padding": (0, 2, 1, 0), "strides": (2, 3)},
    {"strides": (2, 2), "rounding": "ceil"},
    {"strides": (2, 2), "padding": (1, 1, 1, 1), "rounding": "ceil", "size": (8, 8)},
    {"dilations": (2, 2), "padding": (1, 1, 2, 2)},
    {"layout": "nhwc", "padding": (1, 0, 0, 1), "strides": (2, 1)},
    {"k": (2, 4), "strides": (2, 2)},
]


@pytest.mark.parametrize("js", ["averagePool2d", "maxPool2d"])
@pytest.mark.parametrize("kw", CASES)
def test_pool(js, kw, rng):
    pool_case(rng, js, **kw)


@pytest.mark.parametrize("kw", [{}, {"padding": (1, 1, 1, 1)}, {"strides": (2, 2)}, {"global_": True}])
def test_l2_pool(kw, rng):
    # onnxruntime's LpPool (p=2) sums the squares of the valid elements, as WebNN's l2Pool2d does
    pool_case(rng, "l2Pool2d", **kw)


def test_output_sizes_selects_ceil(rng):
    pool_case(rng, "maxPool2d", strides=(2, 2), size=(8, 8), output_sizes=(4, 4))
    pool_case(rng, "averagePool2d", strides=(2, 2), size=(8, 8), output_sizes=(4, 4), rounding="ceil")


def test_average_pool_float16(rng):
    pool_case(rng, "averagePool2d", padding=(1, 1, 1, 1), dtype=np.float16)


def test_max_pool_integers(rng):
    x = rng.integers(-100, 100, (1, 2, 5, 5)).astype(np.int32)
    doc = graph({"x": x}, [op("maxPool2d", ("input", "x"), windowDimensions=[2, 2], padding=[1, 1, 1, 1])], ["y"])
    got = run_graph(doc, {"x": x})["y"]
    ref = run_onnx([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], pads=[1, 1, 1, 1])],
                   {"x": x.astype(np.float32)}, [("y", np.float32, None)])["y"]
    assert_exact(got, ref.astype(np.int32))


@pytest.mark.vulkan
@pytest.mark.parametrize("js", ["maxPool2d", "averagePool2d"])
def test_vulkan_pool(js, rng):
    pool_case(rng, js, padding=(1, 1, 1, 1), strides=(2, 2), target="vulkan-spirv")


def resample_case(rng, mode, scales=None, sizes=None, axes=None, shape=(1, 2, 5, 6), target="llvm-cpu",
                  dtype=np.float32):
    x = rng.standard_normal(shape).astype(np.float32)
    options = {"mode": mode}
    if scales:
        options["scales"] = list(scales)
    if sizes:
        options["sizes"] = list(sizes)
    if axes:
        options["axes"] = list(axes)
    xin = x.astype(dtype)
    got = run_graph(graph({"x": xin}, [op("resample2d", ("input", "x"), **options)], ["y"]), {"x": xin},
                    target=target)["y"]
    ax = axes or [2, 3]
    onnx_mode = {"linear": "linear", "nearest-neighbor": "nearest"}[mode]
    attrs = dict(mode=onnx_mode, coordinate_transformation_mode="half_pixel", nearest_mode="round_prefer_ceil")
    if sizes:
        full = list(shape)
        for a, s in zip(ax, sizes):
            full[a] = s
        init = {"roi": np.array([], np.float32), "scales": np.array([], np.float32), "sizes": np.array(full, np.int64)}
        inputs = ["x", "roi", "scales", "sizes"]
    else:
        full = [1.0] * 4
        for a, s in zip(ax, scales):
            full[a] = s
        init = {"roi": np.array([], np.float32), "scales": np.array(full, np.float32)}
        inputs = ["x", "roi", "scales"]
    ref = run_onnx([helper.make_node("Resize", inputs, ["y"], **attrs)], {"x": x}, [("y", np.float32, None)],
                   initializers=init)["y"]
    if mode == "nearest-neighbor":
        assert_exact(got.astype(np.float32), ref.astype(dtype).astype(np.float32))
    else:
        assert_accumulated(got.astype(np.float32), ref, 2, ulp_per_term=2 if dtype == np.float32 else 4096)


@pytest.mark.parametrize("mode", ["nearest-neighbor", "linear"])
@pytest.mark.parametrize("kw", [{"scales": (2, 2)}, {"scales": (0.5, 1.5)}, {"sizes": (9, 4)},
                                {"sizes": (3, 11), "axes": (1, 2), "shape": (1, 5, 6, 2)}, {"scales": (1.7, 3)}])
def test_resample2d(mode, kw, rng):
    resample_case(rng, mode, **kw)


def test_resample2d_float16(rng):
    resample_case(rng, "linear", scales=(2, 2), dtype=np.float16)


@pytest.mark.vulkan
def test_vulkan_resample2d(rng):
    resample_case(rng, "linear", scales=(2, 1.5), target="vulkan-spirv")
