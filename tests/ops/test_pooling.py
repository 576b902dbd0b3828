"""Pooling and resample2d vs onnxruntime.

Oracles: ORT AveragePool (count_include_pad=0), MaxPool, LpPool (p=2) and Resize (half_pixel,
output sizes given). Where WebNN reaches windows ORT's pooling ops refuse or drop (padding as large
as the window, ceil windows that start in the end padding, windows larger than the padded input),
the oracle is composed from ORT Pad + MaxPool / Conv(ones) sums and counts instead.
"""
import numpy as np
import pytest
from onnx import helper

from helpers import assert_accumulated, assert_exact, assert_ulp, graph, op, run_graph, run_onnx

ONNX_POOL = {"averagePool2d": ("AveragePool", {"count_include_pad": 0}), "maxPool2d": ("MaxPool", {}),
             "l2Pool2d": ("LpPool", {"p": 2})}


def _onnx_pads(p):
    return [p[0], p[2], p[1], p[3]]


def _webnn_pool(js, x, target="llvm-cpu", **options):
    doc = graph({"x": x}, [op(js, ("input", "x"), **options)], ["y"])
    return run_graph(doc, {"x": x}, target=target)["y"]


def _nhwc(a):
    return a.transpose(0, 2, 3, 1)


def _compare(js, got, ref, window):
    """Max pooling picks an element: exact. Sums: accumulation tolerance (float16: 2 ULP of the
    float32-computed result, since both sides sum in float32 and round once)."""
    if js == "maxPool2d":
        assert_exact(got, ref.astype(got.dtype))
    elif got.dtype == np.float16:
        assert_ulp(got, ref.astype(np.float16), 2)
    else:
        assert_accumulated(got, ref, window[0] * window[1])


def pool_case(rng, js, k=(3, 3), padding=(0, 0, 0, 0), strides=(1, 1), dilations=(1, 1), rounding="floor",
              layout="nchw", size=(9, 10), dtype=np.float32, output_sizes=None, target="llvm-cpu", global_=False):
    x = rng.standard_normal((2, 3) + size).astype(dtype)
    options = dict(padding=list(padding), strides=list(strides), dilations=list(dilations), roundingType=rounding,
                   layout=layout)
    if not global_:
        options["windowDimensions"] = list(k)
    if output_sizes:
        options["outputSizes"] = list(output_sizes)
    got = _webnn_pool(js, _nhwc(x) if layout == "nhwc" else x, target=target, **options)
    k = size if global_ else k
    ceil = int(rounding == "ceil") if output_sizes is None else int(list(output_sizes) != _floor_sizes(
        size, k, padding, strides, dilations))
    name, extra = ONNX_POOL[js]
    node = helper.make_node(name, ["x"], ["y"], kernel_shape=list(k), pads=_onnx_pads(padding), strides=list(strides),
                            dilations=list(dilations), ceil_mode=ceil, **extra)
    ref = run_onnx([node], {"x": x.astype(np.float32)}, [("y", np.float32, None)])["y"]
    _compare(js, got, _nhwc(ref) if layout == "nhwc" else ref, k)


def _floor_sizes(size, k, padding, strides, dilations):
    return [(s + pb + pe - (kk - 1) * d - 1) // st + 1
            for s, kk, pb, pe, st, d in zip(size, k, padding[0::2], padding[1::2], strides, dilations)]


CASES = [
    {"global_": True},
    {"padding": (1, 1, 1, 1)},
    {"padding": (0, 2, 1, 0), "strides": (2, 3)},
    {"strides": (2, 2), "rounding": "ceil"},
    {"strides": (2, 2), "padding": (1, 1, 1, 1), "rounding": "ceil", "size": (8, 8)},
    {"k": (2, 3), "dilations": (2, 3), "padding": (1, 1, 2, 2)},
    {"layout": "nhwc", "padding": (1, 0, 0, 1), "strides": (2, 1)},
]


@pytest.mark.parametrize("js", ["averagePool2d", "maxPool2d"])
@pytest.mark.parametrize("kw", CASES)
def test_pool(js, kw, rng):
    pool_case(rng, js, **kw)


@pytest.mark.parametrize("kw", [{"padding": (1, 2, 0, 1), "strides": (2, 1), "dilations": (1, 2)},
                                {"global_": True, "layout": "nhwc"}])
def test_l2_pool(kw, rng):
    # ORT's LpPool (p=2) sums the squares of the valid elements only, as WebNN's l2Pool2d does
    pool_case(rng, "l2Pool2d", **kw)


def test_output_sizes_select_ceil(rng):
    # floor rounding asked, but outputSizes picks the ceil sizes (roundingType is ignored)
    pool_case(rng, "maxPool2d", k=(2, 2), strides=(2, 2), size=(9, 7), output_sizes=(5, 4))


def test_output_sizes_select_floor(rng):
    pool_case(rng, "averagePool2d", k=(2, 2), strides=(2, 2), size=(9, 7), output_sizes=(4, 3), rounding="ceil")


@pytest.mark.parametrize("js", ["averagePool2d", "l2Pool2d"])
def test_pool_float16(js, rng):
    pool_case(rng, js, padding=(1, 1, 1, 1), strides=(2, 2), dtype=np.float16)


def composed_oracle(js, x, k, padding, strides, dilations, out):
    """ORT graph: pad to exactly the extent the windows reach (ONNX Pad crops with negative pads),
    then MaxPool over -inf padding, or Conv with ones for window sums (and, for averages, the count
    of input elements per window; an empty window averages to 0, Estuary's documented choice)."""
    n, c, h, w = x.shape
    extent = [(o - 1) * s + (kk - 1) * d + 1 for o, s, kk, d in zip(out, strides, k, dilations)]
    pt, pl = padding[0], padding[2]
    pads = np.array([0, 0, pt, pl, 0, 0, extent[0] - pt - h, extent[1] - pl - w], np.int64)
    conv = dict(kernel_shape=list(k), strides=list(strides), dilations=list(dilations))
    init = {"pads": pads, "ones": np.ones((c, 1) + tuple(k), np.float32),
            "mask": np.ones((1, c, h, w), np.float32), "one": np.array(1, np.float32)}
    if js == "maxPool2d":
        init["fill"] = np.array(-np.inf, np.float32)
        nodes = [helper.make_node("Pad", ["x", "pads", "fill"], ["p"]),
                 helper.make_node("MaxPool", ["p"], ["y"], **conv)]
    else:
        init["zero"] = np.array(0, np.float32)
        square = js == "l2Pool2d"
        nodes = [helper.make_node("Mul", ["x", "x"], ["sq"])] if square else []
        nodes += [helper.make_node("Pad", ["sq" if square else "x", "pads", "zero"], ["p"]),
                  helper.make_node("Conv", ["p", "ones"], ["sum"], group=c, **conv)]
        if square:
            nodes.append(helper.make_node("Sqrt", ["sum"], ["y"]))
        else:
            nodes += [helper.make_node("Pad", ["mask", "pads", "zero"], ["pm"]),
                      helper.make_node("Conv", ["pm", "ones"], ["count"], group=c, **conv),
                      helper.make_node("Max", ["count", "one"], ["divisor"]),
                      helper.make_node("Div", ["sum", "divisor"], ["y"])]
    return run_onnx(nodes, {"x": x}, [("y", np.float32, None)], initializers=init)["y"]


BEYOND = [
    # ceil adds windows that start in the end padding; the last column's windows hold no input at all
    dict(size=(8, 7), k=(3, 2), strides=(3, 2), padding=(1, 2, 0, 3), dilations=(1, 2), rounding="ceil"),
    # window taller than the padded input: ceil((3 - 4) / 2 + 1) = 1 output row
    dict(size=(3, 5), k=(4, 3), strides=(2, 2), padding=(0, 0, 2, 0), dilations=(1, 1), rounding="ceil"),
]


@pytest.mark.parametrize("js", ["averagePool2d", "maxPool2d", "l2Pool2d"])
@pytest.mark.parametrize("case", BEYOND)
def test_pool_windows_beyond_input(js, case, rng):
    x = rng.standard_normal((1, 2) + case["size"]).astype(np.float32)
    got = _webnn_pool(js, x, windowDimensions=list(case["k"]), padding=list(case["padding"]),
                      strides=list(case["strides"]), dilations=list(case["dilations"]), roundingType=case["rounding"])
    ref = composed_oracle(js, x, case["k"], case["padding"], case["strides"], case["dilations"], got.shape[2:])
    _compare(js, got, ref, case["k"])


@pytest.mark.parametrize("dtype", [np.float16, np.uint8, np.int64])
def test_max_pool_dtypes(dtype, rng):
    if np.dtype(dtype).kind == "f":
        x = rng.standard_normal((1, 2, 6, 5)).astype(dtype)
    else:
        info = np.iinfo(dtype)  # 64-bit values within +-2**53, exact in the float64 oracle
        x = rng.integers(max(info.min, -2 ** 53), min(info.max, 2 ** 53), (1, 2, 6, 5), dtype=dtype, endpoint=True)
    got = _webnn_pool("maxPool2d", x, windowDimensions=[2, 3], padding=[1, 1, 1, 1], strides=[2, 1])
    # ORT's MaxPool on the values as float64 (exact for every value drawn here)
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 3], pads=[1, 1, 1, 1], strides=[2, 1])
    ref = run_onnx([node], {"x": x.astype(np.float64)}, [("y", np.float64, None)])["y"]
    assert_exact(got, ref.astype(dtype))


@pytest.mark.parametrize("act,bounds", [("relu", None), ("clamp", (0.0, 6.0)), ("clamp", (-1.0, 6.0))])
@pytest.mark.parametrize("case", [dict(k=[3, 3], padding=[1, 0, 1, 0], strides=[2, 2]),
                                  dict(k=[3, 3], padding=[1, 1, 1, 1], strides=[2, 2], roundingType="ceil"),
                                  dict(k=[2, 2], padding=[0, 1, 0, 1], strides=[2, 2], roundingType="ceil")])
def test_max_pool_of_nonnegative_input(act, bounds, case, rng):
    """Max pooling after relu / clamp(0, 6) (lowered with zero padding where every window holds
    an input element, else -inf) against ORT's activation + MaxPool; a third of the inputs are 0.
    clamp(-1, 6) may be negative and keeps -inf: with 0 the all-negative border windows differ."""
    x = rng.standard_normal((1, 3, 9, 9)).astype(np.float32) - 0.5
    x[rng.random(x.shape) < 1 / 3] = 0.0
    options = {"minValue": bounds[0], "maxValue": bounds[1]} if bounds else {}
    pool = dict(windowDimensions=case["k"], padding=case["padding"], strides=case["strides"],
                roundingType=case.get("roundingType", "floor"))
    doc = graph({"x": x}, [op(act, ("input", "x"), outputs="a", **options),
                           op("maxPool2d", ("input", "a"), **pool)], ["y"])
    got = run_graph(doc, {"x": x})["y"]
    inits = {"lo": np.float32(bounds[0]), "hi": np.float32(bounds[1])} if bounds else None
    nodes = [helper.make_node("Clip" if bounds else "Relu", ["x", "lo", "hi"] if bounds else ["x"], ["a"]),
             helper.make_node("MaxPool", ["a"], ["y"], kernel_shape=case["k"], pads=_onnx_pads(case["padding"]),
                              strides=case["strides"], ceil_mode=int(pool["roundingType"] == "ceil"))]
    ref = run_onnx(nodes, {"x": x}, [("y", np.float32, None)], initializers=inits)["y"]
    assert_exact(got, ref)


@pytest.mark.vulkan
@pytest.mark.parametrize("js", ["maxPool2d", "averagePool2d"])
def test_vulkan_pool(js, rng):
    pool_case(rng, js, padding=(1, 1, 1, 1), strides=(2, 2), dilations=(1, 2), target="vulkan-spirv")


# ---------------------------------------------------------------- resample2d


def resample_case(rng, mode, scales=None, sizes=None, axes=None, shape=(1, 2, 5, 6), target="llvm-cpu",
                  dtype=np.float32):
    x = rng.standard_normal(shape).astype(dtype)
    options = {"mode": mode}
    for key, value in (("scales", scales), ("sizes", sizes), ("axes", axes)):
        if value is not None:
            options[key] = list(value)
    got = run_graph(graph({"x": x}, [op("resample2d", ("input", "x"), **options)], ["y"]), {"x": x},
                    target=target)["y"]
    # WebNN samples at half-pixel centres with scale = outputSize / inputSize, so ORT gets the
    # output sizes (with `scales` ORT would use the requested, not the realised, scale). Nearest
    # takes ceil(x - 0.5): ORT's round_prefer_floor. ORT clamps linear coordinates as WebNN does.
    axes = axes or (2, 3)
    full = list(shape)
    for a, s in zip(axes, sizes or [int(np.floor(shape[a] * float(np.float32(f)))) for a, f in zip(axes, scales)]):
        full[a] = s
    attrs = dict(mode={"linear": "linear", "nearest-neighbor": "nearest"}[mode],
                 coordinate_transformation_mode="half_pixel", nearest_mode="round_prefer_floor")
    init = {"roi": np.array([], np.float32), "scales": np.array([], np.float32), "sizes": np.array(full, np.int64)}
    ref = run_onnx([helper.make_node("Resize", ["x", "roi", "scales", "sizes"], ["y"], **attrs)],
                   {"x": x.astype(np.float32)}, [("y", np.float32, None)], initializers=init)["y"]
    if mode == "nearest-neighbor":
        assert_exact(got, ref.astype(dtype))
    elif dtype == np.float16:
        assert_ulp(got, ref.astype(np.float16), 2)
    else:
        assert_accumulated(got, ref, 4)


RESAMPLE = [
    {"scales": (2, 2)},
    {"scales": (0.5, 1.5)},  # width 6 -> 9 puts sample points exactly halfway: ties go down
    {"sizes": (9, 4)},
    {"sizes": (3, 11), "axes": (1, 2), "shape": (1, 5, 6, 2)},  # nhwc-like
    {"scales": (1.7, 3)},  # 5 * 1.7 -> 8 rows: sampled with the realised scale 8/5, not 1.7
]


@pytest.mark.parametrize("mode", ["nearest-neighbor", "linear"])
@pytest.mark.parametrize("kw", RESAMPLE)
def test_resample2d(mode, kw, rng):
    resample_case(rng, mode, **kw)


def test_resample2d_downsample_ties(rng):
    # 2x down-sampling: every sample point is halfway between two pixels; WebNN takes the first
    resample_case(rng, "nearest-neighbor", sizes=(3, 4), shape=(1, 2, 6, 8))


def test_resample2d_axes_reversed(rng):
    resample_case(rng, "linear", sizes=(7, 3), axes=(3, 2), shape=(2, 1, 4, 5))


def test_resample2d_float16(rng):
    resample_case(rng, "linear", scales=(2, 0.75), dtype=np.float16)


@pytest.mark.vulkan
def test_vulkan_resample2d(rng):
    resample_case(rng, "linear", scales=(2, 1.5), target="vulkan-spirv")
