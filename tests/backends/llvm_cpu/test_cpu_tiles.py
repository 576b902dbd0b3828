"""`cpu-tiles`: the tile rules; convolutions (3x3 stride 1 and 2 at several widths, 1x1 alone,
before a padded depthwise convolution and strided) and a batch-1 LSTM agree with onnxruntime with
the retiling on and off."""
import os
import re
import sys

import numpy as np
import pytest

import estuary
from estuary.backends.llvm_cpu import phases, retune, tile_rules

from helpers import ROOT  # noqa: E402 - the repository
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import models  # noqa: E402
import onnx_to_webnn  # noqa: E402
from helpers import tile_lanes, onnx_model_case  # noqa: E402

IREE_7x7 = ([0, 1, 7, 64, 0, 0, 0], [1, 1, 7, 16, 0, 0, 0], [0, 0, 0, 0, 1, 1, 8])
# The rules take the lanes and the worker count explicitly (CompileOptions.cpu_lanes, .workers);
# these cases are the 2-vCPU machines the rules were measured on
WORKERS = 2
AVX512 = {"lanes": 16, "workers": WORKERS}
AVX2 = {"lanes": 8, "workers": WORKERS}


def test_workgroup_counts_split_evenly():
    """IREE's workers claim a dispatch's workgroups one at a time below 8 per worker, else 8 at
    a time: 16 splits evenly between two workers, 56 (32 / 24), 28 (16 / 12) or 25 do not.
    Claimed one at a time, a count is planned in two shares per worker (`plan_workers`); without
    `split` any multiple of the workers will do."""
    counts = (1, 6, 8, 12, 14, 16, 25, 28, 32, 36, 56, 112)
    assert [n for n in counts if tile_rules.balanced(n, workers=WORKERS)] == [8, 12, 16, 32, 112]
    assert [n for n in counts if tile_rules.balanced(n, workers=WORKERS, split=False)] == [6, 8, 12, 14, 16, 32, 112]
    assert tile_rules.balanced(16, workers=4) and not tile_rules.balanced(12, workers=4)
    assert tile_rules.balanced_rows(7, 1, 8, workers=WORKERS) == 7       # 7 rows x 8 channel blocks: 56 -> 8 workgroups
    assert tile_rules.balanced_rows(224, 8, others=1, workers=WORKERS) == 14       # the image transpose: 28 -> 16
    # a 1000-class classifier's 250-row blocks: 25 -> 10
    assert tile_rules.balanced_rows(250, 10, others=1, workers=WORKERS, split=False) == 25
    assert tile_rules.balanced_rows(256, 32, others=1, workers=WORKERS) == 32      # already 8
    assert tile_rules.balanced_rows(31, 8, others=1, workers=WORKERS) == 8         # nothing balances: unchanged


def test_rule_widens_small_image_tiles():
    """Width <= 7: 7-pixel x 64-channel register tiles in workgroups of all rows x 64 channels
    when those blocks balance between the workers; otherwise balanced groups of rows x 64
    channels."""
    assert tile_rules.conv_tiles([1, 7, 7, 512], *IREE_7x7, **AVX512) == (
        [0, 7, 7, 64, 0, 0, 0], [1, 1, 7, 64, 0, 0, 0], [0, 0, 0, 0, 1, 1, 4])
    assert tile_rules.conv_tiles([1, 7, 7, 256], *IREE_7x7, **AVX512)[0] == [0, 7, 7, 64, 0, 0, 0]
    # 2 blocks: not 4 shares
    assert tile_rules.conv_tiles([1, 7, 7, 128], *IREE_7x7, **AVX512)[0] == [0, 1, 7, 64, 0, 0, 0]
    assert tile_rules.conv_tiles([1, 7, 7, 192], *IREE_7x7, **AVX512)[0] == [0, 1, 7, 64, 0, 0, 0]  # 3 blocks: by rows
    # 7 rows: nothing balances
    assert tile_rules.conv_tiles([1, 7, 7, 64], *IREE_7x7, **AVX512)[0] == [0, 1, 7, 64, 0, 0, 0]
    assert tile_rules.conv_tiles([1, 7, 7, 512], *IREE_7x7, lanes=16, workers=1) == (
        [0, 7, 7, 64, 0, 0, 0], [1, 1, 7, 64, 0, 0, 0], [0, 0, 0, 0, 1, 1, 4])



@pytest.mark.parametrize("shape, iree_tiles, tiles", [
    # up to 14 wide: the whole row in registers (14 x 32 channels = 28 zmm); workgroups of about
    # 98 pixels in equal groups of whole rows x 32 channels (7 rows of 14, 5 of 10, all 8 of 8);
    # a tile of 24 accumulators or more (12-14 pixels) steps 2 input channels
    ([1, 14, 14, 256], ([0, 2, 14, 64, 0, 0, 0], [1, 1, 7, 16, 0, 0, 0], [0, 0, 0, 0, 1, 1, 8]),
     ([0, 7, 14, 32, 0, 0, 0], [1, 1, 14, 32, 0, 0, 0], [0, 0, 0, 0, 1, 1, 2])),
    ([1, 10, 10, 256], ([0, 2, 10, 64, 0, 0, 0], [1, 1, 5, 16, 0, 0, 0], [0, 0, 0, 0, 1, 1, 8]),
     ([0, 5, 10, 32, 0, 0, 0], [1, 1, 10, 32, 0, 0, 0], [0, 0, 0, 0, 1, 1, 8])),
    ([1, 8, 8, 512], (IREE_7x7[0], [1, 1, 8, 16, 0, 0, 0], IREE_7x7[2]),
     ([0, 8, 8, 32, 0, 0, 0], [1, 1, 8, 32, 0, 0, 0], [0, 0, 0, 0, 1, 1, 8])),
    # wider: IREE's 7 or 8 pixels x 32 channels; 14 rows of 28, 7 rows of 56
    ([1, 28, 28, 128], ([0, 4, 28, 64, 0, 0, 0], [1, 1, 7, 16, 0, 0, 0], [0, 0, 0, 0, 1, 1, 8]),
     ([0, 14, 28, 64, 0, 0, 0], [1, 1, 7, 32, 0, 0, 0], [0, 0, 0, 0, 1, 1, 8])),
    ([1, 56, 56, 64], ([0, 4, 56, 64, 0, 0, 0], [1, 1, 8, 16, 0, 0, 0], [0, 0, 0, 0, 1, 1, 8]),
     ([0, 7, 56, 64, 0, 0, 0], [1, 1, 8, 32, 0, 0, 0], [0, 0, 0, 0, 1, 1, 8])),
])
def test_rule_for_wider_images(shape, iree_tiles, tiles):
    assert tile_rules.conv_tiles(shape, *iree_tiles, **AVX512) == tiles
    assert tile_rules.conv_tiles(shape, *iree_tiles, **AVX512, window=3 * 3 * 64) == tiles


def test_rule_scales_workgroups_for_small_windows():
    """A 7x7 stem over 3 channels (147 multiply-adds per output, a quarter of 3x3x64) gets twice
    the pixels per workgroup: 7 rows of 112 instead of 3."""
    iree = ([0, 4, 112, 64, 0, 0, 0], [1, 1, 8, 16, 0, 0, 0], [0, 0, 0, 0, 1, 1, 8])
    assert tile_rules.conv_tiles([1, 112, 112, 64], *iree, **AVX512, window=7 * 7 * 3)[0] == [0, 7, 112, 64, 0, 0, 0]
    assert tile_rules.conv_tiles([1, 112, 112, 64], *iree, **AVX512)[0] == [0, 3, 112, 64, 0, 0, 0]
    assert tile_rules.conv_tiles([1, 56, 56, 64], *iree, **AVX512, window=3 * 3 * 128)[0] == [0, 7, 56, 64, 0, 0, 0]
    assert [tile_rules._work_factor(w) for w in (None, 147, 288, 576, 4608)] == [1, 2, 2, 1, 1]


@pytest.mark.parametrize("shape, tiles", [
    ([1, 7, 7, 96], IREE_7x7),                                       # channels not a multiple of 64
    ([1, 7, 7, 512], (IREE_7x7[0], [1, 1, 7, 8, 0, 0, 0], IREE_7x7[2])),  # 8 lanes: not AVX-512
    ([1, 30, 30, 64], (IREE_7x7[0], [1, 1, 8, 16, 0, 0, 0], IREE_7x7[2])),  # 8 pixels do not divide 30
    ([1, 7, 7, 512], ([0, 1, 7, 64, 0, 0], [1, 1, 7, 16, 0, 0], [0, 0, 0, 0, 1, 3])),  # depthwise
])
def test_rule_keeps_iree_tiles(shape, tiles):
    assert tile_rules.conv_tiles(shape, *tiles, **AVX512) is None


def test_pointwise_rule():
    iree = ([7, 14, 64, 0], [1, 7, 16, 0], [0, 0, 0, 16])
    assert tile_rules.pointwise_tiles([14, 14, 512], *iree, **AVX512) == ([7, 14, 64, 0], [1, 7, 32, 0], [0, 0, 0, 4])
    assert tile_rules.pointwise_tiles([7, 7, 1024], [7, 7, 64, 0], [1, 7, 16, 0], [0, 0, 0, 16], **AVX512) == (
        [7, 7, 64, 0], [1, 7, 64, 0], [0, 0, 0, 2])
    # wider than 14: about 392 pixels (7 rows of 56: 16 workgroups, where 4 rows made 28, 16 / 12)
    assert tile_rules.pointwise_tiles([56, 56, 128], [8, 56, 64, 0], [1, 8, 16, 0], [0, 0, 0, 16], **AVX512) == (
        [7, 56, 64, 0], [1, 8, 32, 0], [0, 0, 0, 4])
    # none balances from 14 rows up (6 or 3 workgroups): the most rows below that do (12)
    assert tile_rules.pointwise_tiles([28, 28, 192], [4, 28, 64, 0], [1, 7, 16, 0], [0, 0, 0, 16],
                                      **AVX512)[0] == [7, 28, 64, 0]
    assert tile_rules.pointwise_tiles([14, 14, 96], *iree, **AVX512) is None      # channels not a multiple of 64
    assert tile_rules.pointwise_tiles([14, 14, 512], iree[0], [1, 7, 8, 0], iree[2], **AVX512) is None  # not AVX-512


def test_transpose_rule():
    want = {"distribution": [3, 14, 224], "vector_common_parallel": [3, 1, 16]}
    assert tile_rules.transpose_tiles([3, 224, 224], workers=WORKERS) == want
    assert tile_rules.transpose_tiles([1, 31, 48], workers=WORKERS)["vector_common_parallel"] == [1, 1, 16]
    assert tile_rules.transpose_tiles([3, 56, 56], workers=WORKERS) is None    # not a whole number of 16-pixel vectors
    assert tile_rules.transpose_tiles([16, 32, 32], workers=WORKERS) is None   # a feature map, not an image


def test_winograd_product_rule_takes_six_batches():
    """The 36 batched products of a Winograd convolution: 3 batches with all their rows and
    columns per workgroup (12 workgroups, which two workers claim one at a time; 3 on one
    worker); other batched products keep IREE's workgroups."""
    iree = ([1, 1, 2, 0, 0, 0, 0], [1, 1, 1, 0, 16, 16, 0], [0, 0, 0, 1, 0, 0, 1])
    assert tile_rules.batch_mmt4d_tiles([36, 13, 4, 16, 16], *iree, workers=WORKERS) == (
        [3, 13, 0, 0, 0, 0, 0], iree[1], iree[2])
    assert tile_rules.batch_mmt4d_tiles([36, 1, 16, 16, 16], *iree, workers=WORKERS)[0] == [3, 1, 0, 0, 0, 0, 0]
    assert tile_rules.batch_mmt4d_tiles([36, 1, 16, 16, 16], *iree, workers=1)[0] == [12, 1, 0, 0, 0, 0, 0]
    assert tile_rules.batch_mmt4d_tiles([4, 8, 8, 16, 16], *iree, workers=WORKERS) is None  # attention heads


def test_winograd_transform_rule():
    """A Winograd transform pass computes all its transform rows per vector step (the loop its
    coefficient vectors index) and splits workgroups along the next loops down to IREE's count."""
    rows = tile_rules.transform_tiles([6, 14, 58, 64], 0, [1, 7, 58, 64], [1, 1, 1, 16])
    assert rows == ([6, 1, 58, 64], [6, 1, 1, 16])                      # 14 workgroups (IREE: 12)
    cols = tile_rules.transform_tiles([6, 6, 14, 14, 64], 1, [1, 3, 14, 14, 64], [1, 1, 1, 1, 16])
    assert cols == ([1, 6, 7, 14, 64], [1, 6, 1, 1, 16])                # 12 workgroups, as IREE's
    out_rows = tile_rules.transform_tiles([14, 4, 56, 64], 1, [1, 4, 56, 64], [1, 1, 1, 16])
    assert out_rows == ([1, 4, 56, 64], [1, 4, 1, 16])
    assert tile_rules.transform_tiles([6, 14, 58, 64], 3, [1, 7, 58, 64], [1, 1, 1, 16]) is None  # channels
    assert tile_rules.transform_tiles([6, 14, 58, 48], 0, [1, 7, 58, 48], [1, 1, 1, 8]) is None   # not a zmm


def test_matvec_rule_vectorizes_the_reduction():
    assert tile_rules.matvec_tiles(256, [32, 0], [4, 0], [0, 16], workers=WORKERS) == ([32, 0], [1, 0], [0, 256])
    assert tile_rules.matvec_tiles(1024, [1, 32, 0], [1, 4, 0], [0, 0, 16], workers=WORKERS) == (
        [1, 32, 0], [1, 1, 0], [0, 0, 256])
    assert tile_rules.matvec_tiles(40, [8, 0], [4, 0], [0, 16], workers=WORKERS)[2] == [0, 40]
    assert tile_rules.matvec_tiles(256, [32, 0, 0], [4, 0, 0], [0, 16, 16], workers=WORKERS) is None  # two reductions


def _conv_net(hw, c, f, k, stride):
    net, rng = models.Net(11), np.random.default_rng(111)
    x = rng.standard_normal((1, c, hw, hw)).astype(np.float32)
    y = net.node("Relu", [net.conv("x", c, f, k, hw // stride, stride=stride, bias=True)])
    net.nodes[-1].output[0] = "y"
    return net.model({"x": x}, ["y"], {"x": x})


@pytest.mark.parametrize("hw, c, f, k, stride, retuned", [
    (7, 64, 64, 3, 1, 1),
    (7, 32, 256, 3, 1, 1),    # one 128-channel block per worker, two register tiles each
    (14, 32, 128, 3, 2, 1),   # 7x7 output from a stride-2 window
    (14, 64, 128, 3, 1, 1),
    (10, 32, 64, 3, 1, 1),    # two workgroups of 5 rows x 32 channels per 64 channels
    (56, 3, 64, 7, 2, 1),     # a stem: 7x7 window over 3 channels, larger workgroups
    (32, 3, 64, 3, 1, 2),     # an image 32 wide: its NCHW -> NHWC transpose is retiled too
    (7, 64, 64, 1, 1, 0),     # a lone 1x1 convolution is data-tiled by IREE (mmt4d)
    (28, 16, 64, 3, 1, 1),
    (28, 16, 48, 3, 1, 0),    # 48 channels: IREE's tiles stay
])
def test_convolution_matches_onnxruntime(tmp_path, hw, c, f, k, stride, retuned):
    import onnxruntime as ort

    model, feeds, _ = _conv_net(hw, c, f, k, stride)
    path = onnx_to_webnn.convert(model, str(tmp_path / "conv.json"))
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(["y"], feeds)[0]
    # the direct convolutions (Winograd, which would take some of these, is tested on its own)
    on = estuary.compile(path, disable_passes=["cpu-winograd"])
    off = estuary.compile(path, disable_passes=["cpu-tiles", "cpu-winograd"])
    # on AVX2 a convolution at most 7 wide is im2col and a matmul (backends/llvm_cpu/lowering/im2col.py)
    im2col = tile_lanes() == 8 and k > 1 and hw // stride <= 7
    assert on.stats["cpu_tiles"] == (retuned if tile_lanes() and not im2col else 0)
    assert off.stats["cpu_tiles"] == 0  # the limits every llvm-cpu compile gets leave convolutions alone
    for art in (on, off):
        got = estuary.load(art).run(feeds)["y"]
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


def _pointwise_net(hw, c, f, stride, pool=False):
    """A 1x1 convolution, then (MobileNet) a padded depthwise 3x3 convolution or a global average
    pooling, or (ResNet, strided) a sum with a second strided 1x1 branch."""
    net, rng = models.Net(12), np.random.default_rng(112)
    x = rng.standard_normal((1, c, hw, hw)).astype(np.float32)
    y = net.node("Relu", [net.conv("x", c, f, 1, hw // stride, stride=stride, pad=0)])
    if pool:
        y = net.node("GlobalAveragePool", [y])
    elif stride == 1:
        y = net.node("Relu", [net.conv(y, f, f, 3, hw, groups=f)])
    else:
        y = net.node("Add", [y, net.conv("x", c, f, 1, hw // stride, stride=stride, pad=0)])
    net.nodes[-1].output[0] = "y"
    return net.model({"x": x}, ["y"], {"x": x})


@pytest.mark.parametrize("hw, c, f, stride, pool", [(14, 64, 128, 1, False), (7, 32, 64, 1, False),
                                                    (28, 16, 64, 2, False), (15, 32, 64, 2, False),
                                                    (7, 64, 128, 1, True),
                                                    # AVX2's blocked weights: unstrided, strided, pooled
                                                    (14, 32, 256, 1, False), (16, 32, 128, 2, False),
                                                    (28, 16, 192, 1, True),
                                                    # AVX-512's: 32-channel blocks (padded consumer:
                                                    # a copy), 64 at width 7 (pooled, strided),
                                                    # 8-pixel tiles, a strided 8-wide row
                                                    (14, 32, 512, 1, False), (7, 64, 512, 1, True),
                                                    (14, 32, 512, 2, False), (8, 16, 512, 1, False),
                                                    (16, 16, 512, 2, False)])
def test_pointwise_convolution_matches_onnxruntime(tmp_path, hw, c, f, stride, pool):
    """1x1 convolutions are built with [C, F] weights (passes/lowering/pointwise.py) and retiled;
    a global pooling of one reads it through an extra zero row (kept off IREE's data tiling)."""
    import onnxruntime as ort

    model, feeds, _ = _pointwise_net(hw, c, f, stride, pool)
    path = onnx_to_webnn.convert(model, str(tmp_path / "pw.json"))
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(["y"], feeds)[0]
    on = estuary.compile(path)
    # on AVX2 an unstrided product at most 7 wide is a plain matmul (data-tiled), not retiled
    if tile_lanes() and stride == 1 and (hw > 7 or tile_lanes() == 16):
        assert on.stats["cpu_tiles"] >= 1
    for art in (on, estuary.compile(path, disable_passes=["cpu-tiles"])):
        np.testing.assert_allclose(estuary.load(art).run(feeds)["y"], ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("hw, expand, out, residual", [(14, 96, 160, False), (7, 96, 64, True),
                                                      (8, 64, 96, False), (28, 144, 24, True),
                                                      (16, 96, 32, False)])
def test_inverted_residual_block_matches_onnxruntime(tmp_path, monkeypatch, hw, expand, out, residual):
    """MobileNetV2's inverted residual block: its linear 1x1 projection of the depthwise
    convolution's result takes blocked weights on AVX-512 (`pointwise_block`, projection),
    with an odd count of blocks (160), before a residual add, and in 8- and 16-channel blocks
    (24 and 32 channels)."""
    from estuary.backends.llvm_cpu.lowering import pointwise

    asked = []
    monkeypatch.setattr(pointwise, "pointwise_block",
                        lambda *a, **k: asked.append(k.get("projection")) or tile_rules.pointwise_block(*a, **k))
    net, rng = models.Net(15), np.random.default_rng(115)
    x = rng.standard_normal((1, 32, hw, hw)).astype(np.float32)
    relu6 = lambda y: net.node("Clip", [y, net.const(np.float32(0)), net.const(np.float32(6))])  # noqa: E731
    block_in = relu6(net.conv("x", 32, out, 1, hw, pad=0))  # NHWC inside, as a residual is in a model
    h = relu6(net.conv(block_in, out, expand, 1, hw, pad=0))
    h = relu6(net.conv(h, expand, expand, 3, hw, groups=expand))
    y = net.conv(h, expand, out, 1, hw, pad=0)
    if residual:
        y = net.node("Add", [block_in, y])
    y = net.conv(y, out, 128, 1, hw, pad=0)  # the next block's expansion: the projection is not an output
    net.nodes[-1].output[0] = "y"
    path, feeds, ref = onnx_model_case(*net.model({"x": x}, ["y"], {"x": x})[:2], tmp_path, "webnn")
    for art in (estuary.compile(path), estuary.compile(path, disable_passes=["cpu-tiles"])):
        np.testing.assert_allclose(estuary.load(art).run(feeds)["y"], ref, rtol=1e-4, atol=1e-4)
    assert asked.count(True) == 2  # the projection, with and without cpu-tiles


@pytest.mark.parametrize("output", [True, False])
def test_pointwise_result_transposed_later_keeps_unblocked_weights(tmp_path, monkeypatch, output):
    """A 1x1 convolution whose NCHW result is the model's output is transposed after it; IREE
    fuses that transpose into the product, so it keeps [C, F] weights (blocked, its writes went
    across the pixels: 14x14x512x512 on one core 7.3 ms against 0.99 ms). Followed by a depthwise
    convolution it may take blocks."""
    from estuary.backends.llvm_cpu.lowering import pointwise

    asked = []
    monkeypatch.setattr(pointwise, "pointwise_block",
                        lambda *a, **k: asked.append(a) or tile_rules.pointwise_block(*a, **k))
    net, rng = models.Net(13), np.random.default_rng(113)
    x = rng.standard_normal((1, 32, 14, 14)).astype(np.float32)
    y = net.node("Relu", [net.conv("x", 32, 512, 1, 14, pad=0)])
    if not output:
        y = net.node("Relu", [net.conv(y, 512, 512, 3, 14, groups=512)])
    net.nodes[-1].output[0] = "y"
    path, feeds, ref = onnx_model_case(*net.model({"x": x}, ["y"], {"x": x})[:2], tmp_path, "webnn")
    got = estuary.load(estuary.compile(path)).run(feeds)["y"]
    assert bool(asked) is not output
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


def test_downsampling_block_products_are_contractions(tmp_path):
    """ResNet-50's downsampling block: a computed input feeds an unstrided 1x1 convolution and a
    strided one. The strided product reads a strided slice, so IREE compiles it as a contraction
    ("matmul_like"); with the stride in its indexing map it became a generic reduction, 20x
    slower (pointwise.py)."""
    net, rng = models.Net(14), np.random.default_rng(114)
    x = rng.standard_normal((1, 256, 16, 16)).astype(np.float32)
    block_in = net.node("Relu", [net.node("Add", ["x", net.conv("x", 256, 256, 1, 16, pad=0)])])
    main = net.node("Relu", [net.conv(block_in, 256, 128, 1, 16, pad=0)])
    main = net.conv(net.node("Relu", [net.conv(main, 128, 128, 3, 8, stride=2)]), 128, 512, 1, 8, pad=0)
    y = net.node("Relu", [net.node("Add", [main, net.conv(block_in, 256, 512, 1, 8, stride=2, pad=0)])])
    net.nodes[-1].output[0] = "y"
    path, feeds, ref = onnx_model_case(*net.model({"x": x}, ["y"], {"x": x})[:2], tmp_path, "webnn")
    art = estuary.compile(path)
    np.testing.assert_allclose(estuary.load(art).run(feeds)["y"], ref, rtol=1e-4, atol=1e-4)
    assert re.search(rb"main_dispatch_\d+_matmul_like_8x8x512x256_f32", art.vmfb)
    assert not re.search(rb"main_dispatch_\d+_reduction_", art.vmfb)


@pytest.fixture(scope="module")
def small_conv(tmp_path_factory):
    model, feeds, _ = _conv_net(7, 64, 64, 3, 1)
    return onnx_to_webnn.convert(model, str(tmp_path_factory.mktemp("tiles") / "conv.json")), feeds


def test_passes_off_environment_keeps_iree_tiles(small_conv, monkeypatch):
    monkeypatch.setenv("ESTUARY_OPTIMIZE", "0")
    assert estuary.compile(small_conv[0]).stats["cpu_tiles"] == 0


def test_iree_without_phase_control_compiles_in_one_go(small_conv, monkeypatch):
    path, feeds = small_conv
    monkeypatch.setattr(phases, "_phase_setters", lambda: None)
    art = estuary.compile(path)
    assert "cpu_tiles" not in art.stats
    np.testing.assert_allclose(estuary.load(art).run(feeds)["y"],
                               estuary.load(estuary.compile(path, optimize=False)).run(feeds)["y"], rtol=1e-5, atol=1e-5)


def test_vulkan_compile_is_not_retiled(small_conv):
    assert "cpu_tiles" not in estuary.compile(small_conv[0], target="vulkan-spirv").stats


@pytest.mark.parametrize("form", ["webnn", "coreml", "nnef"])
@pytest.mark.parametrize("hidden", [16, 40, 64])
def test_lstm_matches_onnxruntime(tmp_path, hidden, form):
    """The LSTM benchmark's three forms (one nn.lstm; per-gate gemms; per-step matmuls) all take
    the vector form of their one-row products."""
    model, feeds, _ = models.lstm(steps=5, inputs=12, hidden=hidden, classes=3)
    path, feeds, ref = onnx_model_case(model, feeds, tmp_path, form)
    on = estuary.compile(path)
    off = estuary.compile(path, disable_passes=["cpu-tiles"])
    # the recurrent product (IREE shares one executable among identical steps) and the classifier
    assert on.stats["cpu_tiles"] >= (2 if tile_lanes() else 0)
    for art in (on, off):
        np.testing.assert_allclose(estuary.load(art).run(feeds)["y"], ref, rtol=1e-5, atol=1e-5)


def test_softmax_rule():
    assert tile_rules.softmax_tiles(128, {"vector_common_parallel": [1, 8]}) == {"vector_common_parallel": [1, 2]}
    assert tile_rules.softmax_tiles(256, {"distribution": [1, 32, 0], "vector_common_parallel": [1, 8, 0],
                                         "vector_reduction": [0, 0, 16]}) == {
        "distribution": [1, 32, 0], "vector_common_parallel": [1, 2, 0], "vector_reduction": [0, 0, 128]}
    assert tile_rules.softmax_tiles(64, {"vector_common_parallel": [1, 8, 0], "vector_inner_parallel": [0, 0, 16]}) == {
        "vector_common_parallel": [1, 2, 0], "vector_inner_parallel": [0, 0, 64]}
    assert tile_rules.softmax_tiles(40, {"vector_common_parallel": [1, 8]}) is None  # rows not a multiple of 16


@pytest.mark.parametrize("shape, retuned", [((4, 128, 128), True), ((2, 64, 256), True), ((3, 40, 40), False)])
def test_softmax_matches_onnxruntime(tmp_path, shape, retuned):
    """Softmax over the last axis (a Transformer's attention weights), retiled and not."""
    import onnxruntime as ort

    net = models.Net(13)
    x = np.random.default_rng(113).standard_normal(shape).astype(np.float32) * 4
    net.node("Softmax", ["x"], axis=-1)
    net.nodes[-1].output[0] = "y"
    model, feeds, _ = net.model({"x": x}, ["y"], {"x": x})
    path = onnx_to_webnn.convert(model, str(tmp_path / "softmax.json"))
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(["y"], feeds)[0]
    on = estuary.compile(path)
    assert on.stats["cpu_tiles"] == (1 if retuned and tile_lanes() else 0)
    for art in (on, estuary.compile(path, disable_passes=["cpu-tiles"])):
        np.testing.assert_allclose(estuary.load(art).run(feeds)["y"], ref, rtol=1e-5, atol=1e-6)


# IREE's AVX2 choices (8-lane registers): 4 pixels x 4 channels x 8 input channels for ResNet-18's
# 7x7x512 3x3 convolutions, 2 x 8 at 56 wide
@pytest.mark.parametrize("shape, iree_tiles, tiles", [
    ([1, 7, 7, 512], ([0, 1, 7, 64, 0, 0, 0], [1, 1, 4, 4, 0, 0, 0], [0, 0, 0, 0, 1, 1, 8]),
     ([0, 7, 7, 64, 0, 0, 0], [1, 1, 7, 32, 0, 0, 0], [0, 0, 0, 0, 1, 1, 8])),   # odd width: whole rows, all of them
    ([1, 56, 56, 64], ([0, 4, 56, 64, 0, 0], [1, 1, 2, 8, 0, 0, 0], [0, 0, 0, 0, 1, 1, 8]), None),  # not 7 loops
    ([1, 56, 56, 64], ([0, 4, 56, 64, 0, 0, 0], [1, 1, 2, 8, 0, 0, 0], [0, 0, 0, 0, 1, 1, 3]),
     ([0, 4, 56, 64, 0, 0, 0], [1, 1, 2, 32, 0, 0, 0], [0, 0, 0, 0, 1, 1, 8])),
    ([1, 14, 14, 256], ([0, 2, 14, 64, 0, 0, 0], [1, 1, 4, 4, 0, 0, 0], [0, 0, 0, 0, 1, 1, 8]),
     ([0, 2, 14, 64, 0, 0, 0], [1, 1, 2, 32, 0, 0, 0], [0, 0, 0, 0, 1, 1, 8])),
    ([1, 7, 7, 96], ([0, 1, 7, 32, 0, 0, 0], [1, 1, 7, 8, 0, 0, 0], [0, 0, 0, 0, 1, 1, 8]), None),  # 96 channels
    ([1, 9, 9, 64], ([0, 1, 9, 64, 0, 0, 0], [1, 1, 3, 8, 0, 0, 0], [0, 0, 0, 0, 1, 1, 8]), None),  # odd, wider than 7
])
def test_avx2_convolution_rule(shape, iree_tiles, tiles):
    assert tile_rules.conv_tiles(shape, *iree_tiles, **AVX2) == tiles


def test_avx2_pointwise_rule():
    assert tile_rules.pointwise_tiles([56, 56, 128], [8, 56, 64, 0], [1, 8, 8, 0], [0, 0, 0, 8], **AVX2) == (
        [1, 56, 64, 0], [1, 2, 32, 0], [0, 0, 0, 8])
    assert tile_rules.pointwise_tiles([7, 7, 1024], [7, 7, 64, 0], [1, 7, 8, 0], [0, 0, 0, 8], **AVX2) == (
        [7, 7, 64, 0], [1, 7, 16, 0], [0, 0, 0, 2])
    assert tile_rules.pointwise_tiles([9, 9, 64], [1, 9, 64, 0], [1, 3, 8, 0], [0, 0, 0, 8], **AVX2) is None
    assert tile_rules.pointwise_tiles([14, 14, 96], [7, 14, 32, 0], [1, 7, 8, 0], [0, 0, 0, 8], **AVX2) is None


def test_avx2_blocked_pointwise_rule():
    """Blocked 1x1 products (lowering/pointwise.py on AVX2): 2 pixels x one 32-channel block per register
    tile, workgroups of two blocks; pixel loops IREE folded into one take groups of <= 98 pixels."""
    tiles = ([2, 1, 32, 0], [0, 0, 0, 8])
    assert tile_rules.blocked_pointwise_tiles([196, 16, 32], [14, 16, 32, 0], **AVX2) == ([98, 2, 0, 0], *tiles)
    assert tile_rules.blocked_pointwise_tiles([784, 8, 32], [28, 8, 32, 0], **AVX2) == ([98, 2, 0, 0], *tiles)
    assert tile_rules.blocked_pointwise_tiles([8, 8, 4, 32], [1, 8, 4, 32, 0], **AVX2) == (
        [1, 8, 2, 0, 0], [1, 2, 1, 32, 0], [0, 0, 0, 0, 8])
    assert tile_rules.blocked_pointwise_tiles([196, 32, 16], [14, 16, 32, 0], **AVX2) is None  # other block width
    assert tile_rules.blocked_pointwise_tiles([49, 16, 32], [7, 16, 32, 0], **AVX2) is None  # no even group of pixels
    assert tile_rules.blocked_pointwise_tiles([196, 3, 32], [14, 3, 32, 0], **AVX2) is None  # odd block count
    assert tile_rules.blocked_pointwise_tiles([7, 7, 4, 32], [1, 7, 4, 32, 0], **AVX2) is None  # odd width


def test_avx512_blocked_pointwise_rule():
    """Blocked 1x1 products on AVX-512: 7 or 8 pixels x one block (32 channels, 64 at width <= 7)
    per register tile, 4 (2 for 64-channel blocks) input channels a step; folded pixel loops
    take `balanced` groups of <= 98 pixels."""
    rule = tile_rules.blocked_pointwise_tiles
    assert rule([196, 16, 32], [14, 16, 32, 0], **AVX512) == ([98, 2, 0, 0], [7, 1, 32, 0], [0, 0, 0, 4])
    assert rule([49, 16, 64], [1, 16, 64, 0], **AVX512) == ([49, 1, 0, 0], [7, 1, 64, 0], [0, 0, 0, 2])
    assert rule([64, 16, 32], [8, 16, 32, 0], **AVX512) == ([64, 2, 0, 0], [8, 1, 32, 0], [0, 0, 0, 4])
    assert rule([7, 7, 8, 64], [1, 7, 8, 64, 0], **AVX512) == ([7, 7, 1, 0, 0], [1, 7, 1, 64, 0], [0, 0, 0, 0, 2])
    assert rule([8, 8, 16, 32], [1, 8, 16, 32, 0], **AVX512) == ([1, 8, 2, 0, 0], [1, 8, 1, 32, 0], [0, 0, 0, 0, 4])
    assert rule([25, 8, 64], [5, 8, 64, 0], **AVX512) is None   # no tile of 7 or 8 pixels divides 25
    assert rule([196, 16, 24], [14, 16, 32, 0], **AVX512) is None  # not a block width of these rules
    # projections in 16- and 8-channel blocks: 16 pixels a register tile, 8 input channels a step
    assert rule([784, 2, 16], [28, 2, 16, 0], **AVX512) == ([16, 1, 0, 0], [16, 1, 16, 0], [0, 0, 0, 8])
    assert rule([3136, 3, 8], [56, 3, 8, 0], **AVX512) == ([64, 1, 0, 0], [16, 1, 8, 0], [0, 0, 0, 8])
    assert rule([196, 16, 32], [14, 16, 32, 0], **AVX2) == ([98, 2, 0, 0], [2, 1, 32, 0], [0, 0, 0, 8])  # AVX2
    # an odd count of 32-channel blocks (a 160-channel projection): one block a workgroup
    assert rule([49, 5, 32], [7, 5, 32, 0], **AVX512) == ([49, 1, 0, 0], [7, 1, 32, 0], [0, 0, 0, 4])
    assert rule([196, 3, 32], [14, 3, 32, 0], **AVX2) is None  # AVX2: never built so


@pytest.mark.parametrize("oh, ow, f, lanes, strided, projection, block", [
    (14, 14, 160, 16, False, True, 32), (7, 7, 320, 16, False, True, 32),  # projections
    (14, 14, 160, 16, False, False, None),
    (28, 28, 32, 16, False, True, 16), (56, 56, 24, 16, False, True, 8),  # narrow projections
    (112, 112, 16, 16, False, True, 8), (14, 14, 48, 16, False, True, 16),
    (14, 14, 8, 16, False, True, None),    # one block: IREE would fold it away
    (14, 14, 20, 16, False, True, None),   # not a multiple of 8
    (5, 5, 32, 16, False, True, None),     # no register tile divides 25 pixels
    (14, 14, 160, 8, False, True, None),   # AVX2: no projection rule
])
def test_projection_block(oh, ow, f, lanes, strided, projection, block):
    assert tile_rules.pointwise_block(oh, ow, f, lanes, strided, projection) == block


@pytest.mark.parametrize("oh, ow, f, lanes, strided, block", [
    (14, 14, 512, 16, False, 32), (7, 7, 1024, 16, False, 64), (7, 7, 512, 16, True, 64),
    (14, 14, 256, 16, False, None),   # fewer than 512 channels on AVX-512
    (5, 5, 512, 16, False, None),     # 25 pixels: no register tile of 7 or 8
    (5, 5, 512, 16, True, 64),        # strided: the whole 5-pixel row
    (1, 5, 512, 16, True, None),      # IREE drops the unit height: 5 pixels again
    (14, 14, 448, 16, False, None),   # not a multiple of 64 channels
    (14, 14, 128, 8, False, 32), (7, 7, 128, 8, False, None), (14, 14, 512, None, False, None),
])
def test_pointwise_block(oh, ow, f, lanes, strided, block):
    assert tile_rules.pointwise_block(oh, ow, f, lanes, strided) == block


def test_image_convolution_rule():
    """An image (3 channels) into 32 channels on AVX-512: IREE's pixels x 32 channels, a whole
    filter row of every channel per reduction step, >= 8-row balanced workgroups (8 rows make 14,
    not 4 shares of two workers; 14 rows make 8)."""
    iree = ([0, 16, 56, 32, 0, 0, 0], [1, 1, 8, 16, 0, 0, 0], [0, 0, 0, 0, 1, 1, 3])
    assert tile_rules.image_conv_tiles([1, 112, 112, 32], [3, 3, 3, 32], *iree, workers=WORKERS) == (
        [0, 14, 112, 32, 0, 0, 0], [1, 1, 8, 32, 0, 0, 0], [0, 0, 0, 0, 1, 3, 3])
    assert tile_rules.image_conv_tiles([1, 112, 112, 64], [3, 3, 3, 64], *iree, workers=WORKERS) is None  # conv_tiles'
    assert tile_rules.image_conv_tiles([1, 112, 112, 32], [3, 3, 16, 32], *iree, workers=WORKERS) is None  # no image
    # a register tile's row
    assert tile_rules.image_conv_tiles([1, 14, 14, 32], [3, 3, 3, 32], *iree, workers=WORKERS) is None


@pytest.mark.skipif(tile_lanes() != 16, reason="the image rule is AVX-512's")
def test_image_convolution_matches_onnxruntime(tmp_path):
    import onnxruntime as ort

    model, feeds, _ = _conv_net(32, 3, 32, 3, 2)
    path = onnx_to_webnn.convert(model, str(tmp_path / "stem.json"))
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(["y"], feeds)[0]
    on = estuary.compile(path)
    assert on.stats["cpu_tiles"] == 2  # the convolution and the image's NCHW -> NHWC transpose
    for art in (on, estuary.compile(path, disable_passes=["cpu-tiles"])):
        np.testing.assert_allclose(estuary.load(art).run(feeds)["y"], ref, rtol=1e-4, atol=1e-4)


def test_column_vector_rule():
    """Column-vector products (matvec.unit_products): a block of 2 x lanes columns per vector
    step, 8 reduction steps, two workgroups of whole blocks per worker where they divide."""
    assert tile_rules.unit_tiles([8, 32], 16, workers=WORKERS) == ([2, 32, 0], [1, 32, 0], [0, 0, 8])
    assert tile_rules.unit_tiles([6, 32], 16, workers=WORKERS) == ([3, 32, 0], [1, 32, 0], [0, 0, 8])  # two workgroups
    assert tile_rules.unit_tiles([5, 32], 16, workers=WORKERS) == ([1, 32, 0], [1, 32, 0], [0, 0, 8])  # one per block
    assert tile_rules.unit_tiles([32], 16, workers=WORKERS) == ([32, 0], [32, 0], [0, 8])  # IREE dropped the one block
    assert tile_rules.unit_tiles([8, 16], 8, workers=WORKERS) == ([2, 16, 0], [1, 16, 0], [0, 0, 8])  # AVX2
    assert tile_rules.unit_tiles([8, 16], 16, workers=WORKERS) is None
    assert tile_rules.unit_tiles([8, 32], None, workers=WORKERS) is None


@pytest.mark.parametrize("k, n, column", [(256, 300, True), (1024, 1000, True), (3, 512, True), (64, 256, True),
                                          (64, 255, False), (2048, 1024, False)])
def test_one_row_product_matches_onnxruntime(tmp_path, k, n, column):
    """A row times a constant matrix (a classifier, a merged recurrent step): the column-vector
    form on x86 CPUs from 256 columns up to 1 M elements (N padded to whole blocks), else the row
    form or IREE's kernel."""
    import onnxruntime as ort

    net = models.Net(13)
    x = np.random.default_rng(113).standard_normal((1, k)).astype(np.float32)
    net.node("Relu", [net.gemm("x", k, n)])
    net.nodes[-1].output[0] = "y"
    model, feeds, _ = net.model({"x": x}, ["y"], {"x": x})
    path = onnx_to_webnn.convert(model, str(tmp_path / "fc.json"))
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(["y"], feeds)[0]
    on = estuary.compile(path)
    if column and tile_lanes():
        assert on.stats["cpu_tiles"] >= 1
    for art in (on, estuary.compile(path, disable_passes=["cpu-tiles"])):
        np.testing.assert_allclose(estuary.load(art).run(feeds)["y"], ref, rtol=1e-5, atol=1e-5)


def test_depthwise_rule():
    """A depthwise convolution at most 7 wide whose register tile does not divide the row (IREE's
    2 pixels on AVX2) takes the whole row; others keep IREE's tiles."""
    iree = ([0, 1, 7, 64, 0, 0], [1, 1, 2, 8, 0, 0], [0, 0, 0, 0, 1, 3])
    assert tile_rules.depthwise_tiles([1, 7, 7, 512], *iree) == (iree[0], [1, 1, 7, 8, 0, 0], iree[2])
    assert tile_rules.depthwise_tiles([1, 14, 14, 512], *iree) is None      # 2 divides 14
    assert tile_rules.depthwise_tiles([1, 9, 9, 64], *iree) is None         # wider than 7
    assert tile_rules.depthwise_tiles([1, 7, 7, 512], iree[0], [1, 1, 7, 16, 0, 0], iree[2]) is None
    assert tile_rules.depthwise_tiles([1, 7, 7, 512], [0, 1, 7, 64, 0, 0, 0], [1, 1, 2, 8, 0, 0, 0],
                                     [0, 0, 0, 0, 1, 1, 3]) is None        # a direct convolution's 7 loops


@pytest.mark.parametrize("hw, stride", [(7, 1), (14, 2), (5, 1)])
def test_depthwise_convolution_matches_onnxruntime(tmp_path, hw, stride):
    """MobileNet's narrow depthwise layers, retiled where IREE's pixel tile does not divide the row."""
    import onnxruntime as ort

    net, rng = models.Net(14), np.random.default_rng(114)
    x = rng.standard_normal((1, 64, hw, hw)).astype(np.float32)
    out = (hw - 1) // stride + 1
    net.node("Relu", [net.conv("x", 64, 64, 3, out, stride=stride, groups=64)])
    net.nodes[-1].output[0] = "y"
    model, feeds, _ = net.model({"x": x}, ["y"], {"x": x})
    path = onnx_to_webnn.convert(model, str(tmp_path / "dw.json"))
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(["y"], feeds)[0]
    for art in (estuary.compile(path), estuary.compile(path, disable_passes=["cpu-tiles"])):
        np.testing.assert_allclose(estuary.load(art).run(feeds)["y"], ref, rtol=1e-4, atol=1e-4)


def test_several_workers_plan_twice_the_workgroups():
    """Convolution dispatches are balanced for twice the workers when there are several (one
    workgroup per worker waits for the slowest core); one worker plans for one."""
    assert [tile_rules.plan_workers(n) for n in (1, 2, 4)] == [1, 4, 8]


def test_column_sum_rule():
    """A global pooling's column sum: 16-channel vectors, one row a step, workgroups of whole
    vectors (4 on two workers where the channels divide so)."""
    assert tile_rules.column_sum_tiles(1280, 16, workers=WORKERS) == ([320, 0], [16, 0], [0, 1])
    assert tile_rules.column_sum_tiles(2048, 16, workers=1) == ([2048, 0], [16, 0], [0, 1])
    assert tile_rules.column_sum_tiles(96, 16, workers=WORKERS) == ([48, 0], [16, 0], [0, 1])  # 6 vectors: one a worker
    assert tile_rules.column_sum_tiles(1000, 16, workers=WORKERS) is None                      # not whole vectors


@pytest.mark.skipif(tile_lanes() != 16, reason="the rule applies where the target's lanes are known; measured on AVX-512")
def test_pooling_before_classifier_matches_onnxruntime(tmp_path, monkeypatch):
    """MobileNetV2's tail: a 1x1 convolution, global average pooling and a classifier. IREE tiles
    the pooling one channel per vector when the classifier's data-tiling pack shares its dispatch;
    `_retune_column_sum` gives it whole vectors."""
    chosen = []
    monkeypatch.setattr(retune, "column_sum_tiles",
                        lambda *a, **k: chosen.append(a[0]) or tile_rules.column_sum_tiles(*a, **k))
    net, rng = models.Net(16), np.random.default_rng(116)
    x = rng.standard_normal((1, 64, 7, 7)).astype(np.float32)
    y = net.node("Relu", [net.conv("x", 64, 1280, 1, 7, pad=0)])
    y = net.node("Flatten", [net.node("GlobalAveragePool", [y])])
    net.gemm(y, 1280, 1000, trans_b=True)
    net.nodes[-1].output[0] = "y"
    path, feeds, ref = onnx_model_case(*net.model({"x": x}, ["y"], {"x": x})[:2], tmp_path, "webnn")
    for art in (estuary.compile(path), estuary.compile(path, disable_passes=["cpu-tiles"])):
        np.testing.assert_allclose(estuary.load(art).run(feeds)["y"], ref, rtol=1e-4, atol=1e-4)
    assert chosen == [1280]  # with cpu-tiles only
