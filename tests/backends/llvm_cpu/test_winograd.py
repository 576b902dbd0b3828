"""`cpu-winograd`: 3x3 stride-1 convolutions as Winograd F(4x4, 3x3) on llvm-cpu, against
onnxruntime (and numpy's correlation for the transform matrices); where it applies and where not."""
import numpy as np
import pytest
from onnx import helper

import estuary
from estuary.backends.llvm_cpu.lowering import winograd
from helpers import assert_accumulated, graph, tile_lanes, op, run_onnx


def test_matrices_compute_a_correlation(rng):
    """One dimension: A^T [(G g) * (B^T d)] is the 4-output valid correlation of 6 inputs with 3
    taps (numpy.correlate)."""
    for _ in range(20):
        d, g = rng.standard_normal(6), rng.standard_normal(3)
        y = winograd.AT @ ((winograd.G @ g) * (winograd.BT @ d))
        np.testing.assert_allclose(y, np.correlate(d, g, mode="valid"), rtol=1e-12, atol=1e-12)


def _case(rng, size, cin, cout, padding=(1, 1, 1, 1), bias=True, residual=False, strides=(1, 1),
          dilations=(1, 1), groups=1, constant_filter=True, disable=(), layout="nhwc"):
    """A conv2d (optionally + the input and a relu) compiled for llvm-cpu; returns (stats, got, ref).
    NHWC by default: an NCHW result is transposed after the convolution, which keeps it direct."""
    x = rng.standard_normal((1, cin) + size).astype(np.float32)
    w = (rng.standard_normal((cout, cin // groups, 3, 3)) / np.sqrt(9 * cin)).astype(np.float32)
    b = rng.standard_normal(cout).astype(np.float32)
    options = dict(padding=list(padding), strides=list(strides), dilations=list(dilations), groups=groups,
                   inputLayout=layout)
    consts = {"b": b} if bias else {}
    if bias:
        options["bias"] = "b"
    x_nchw, x = x, (x.transpose(0, 2, 3, 1).copy() if layout == "nhwc" else x)
    inputs = {"x": x}
    if constant_filter:
        consts["w"] = w
    else:
        inputs["w"] = w
    ops = [op("conv2d", ("input", "x"), ("filter", "w"), outputs="c" if residual else "y", **options)]
    nodes = [helper.make_node("Conv", ["x", "w"] + (["b"] if bias else []), ["c" if residual else "y"],
                              pads=[padding[0], padding[2], padding[1], padding[3]], strides=list(strides),
                              dilations=list(dilations), group=groups)]
    if residual:
        ops += [op("add", ("a", "c"), ("b", "x"), outputs="s"), op("relu", ("input", "s"), outputs="y")]
        nodes += [helper.make_node("Add", ["c", "x"], ["s"]), helper.make_node("Relu", ["s"], ["y"])]
    art = estuary.compile(graph(inputs, ops, ["y"], consts), target="llvm-cpu", format="webnn",
                          disable_passes=list(disable))
    got = estuary.load(art).run(inputs)["y"]
    ref = run_onnx(nodes, {"x": x_nchw}, [("y", np.float32, None)],
                   initializers={k: v for k, v in (("w", w), ("b", b))})["y"]
    return art.stats, got, (ref.transpose(0, 2, 3, 1) if layout == "nhwc" else ref)


@pytest.mark.parametrize("size, cin, cout, kw", [
    ((16, 16), 32, 32, {}),                                   # whole 4x4 tiles
    ((15, 21), 16, 48, {}),                                   # partial tiles, not square
    ((17, 16), 24, 16, {"padding": (0, 2, 1, 0)}),            # uneven padding, 17x15 output
    ((18, 18), 16, 16, {"padding": (0, 0, 0, 0), "bias": False}),  # no padding, no bias
    ((14, 14), 64, 64, {"residual": True}),                   # ResNet's block tail: add + relu
    ((28, 28), 128, 128, {}),
    ((14, 14), 512, 256, {"residual": False}),                # a long reduction (ResNet's deepest)
])
def test_matches_onnxruntime(rng, size, cin, cout, kw):
    stats, got, ref = _case(rng, size, cin, cout, **kw)
    assert stats["winograd"] == 1
    assert_accumulated(got, ref, cin * 9)


@pytest.mark.parametrize("size, cin, cout", [((16, 16), 32, 32), ((15, 21), 16, 48)])
def test_transform_tiles_on_and_off(rng, size, cin, cout):
    """cpu-tiles retiles the four transform passes and the batched product (5 ops) on AVX-512;
    the result matches onnxruntime either way."""
    for disable, tiled in (((), {16: 5, 8: 1}.get(tile_lanes(), 0)), (("cpu-tiles",), 0)):
        stats, got, ref = _case(rng, size, cin, cout, disable=disable)
        assert stats["winograd"] == 1 and stats.get("cpu_tiles") == tiled  # 0: IREE's own tiles, limits only
        assert_accumulated(got, ref, cin * 9)


@pytest.mark.parametrize("kw", [
    {"strides": (2, 2)},
    {"dilations": (2, 2), "padding": (2, 2, 2, 2)},
    {"groups": 2},
    {"size": (7, 7)},              # too small to gain
    {"cin": 8},                    # too few channels
    {"constant_filter": False},    # the filter transform needs constant weights
])
def test_direct_convolution_where_it_does_not_apply(rng, kw):
    args = dict(size=(16, 16), cin=32, cout=32)
    args.update(kw)
    stats, got, ref = _case(rng, args.pop("size"), args.pop("cin"), args.pop("cout"), **args)
    assert stats["winograd"] == 0
    assert_accumulated(got, ref, 32 * 9)


def test_direct_when_an_nchw_result_is_transposed_after_it(rng):
    stats, got, ref = _case(rng, (16, 16), 32, 32, layout="nchw", residual=True)
    assert stats["winograd"] == 0
    assert_accumulated(got, ref, 32 * 9)


def test_switch_off(rng):
    stats, got, ref = _case(rng, (16, 16), 32, 32, disable=["cpu-winograd"])
    assert "winograd" not in stats
    assert_accumulated(got, ref, 32 * 9)
