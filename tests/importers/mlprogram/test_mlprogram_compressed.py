"""Compressed weights from coremltools.optimize.coreml (palettized, int8/int4 quantized, pruned,
and palettized on top of pruning), for the iOS16 constexpr ops (iOS17 target) and the iOS18 ones.
The weights are built so that each compression is lossless (<= 16 distinct values per group, an
integer grid times a per-row or per-block scale with the extreme code present, exactly half
zeros), so the oracle is the float64 product with the original weights."""
import collections

import numpy as np
import pytest

import estuary
from tests.importers.mlprogram.util import ct

OUT, IN = 16, 32


def weights(kind, rng):
    if kind in ("palettize", "palettize_grouped"):
        return rng.choice(np.linspace(-1, 1, 16), size=(OUT, IN)).astype(np.float32)
    if kind == "int8":
        k = rng.integers(-127, 128, size=(OUT, IN))
        k[:, 0] = 127
        return (k * rng.uniform(0.001, 0.01, (OUT, 1))).astype(np.float32)
    if kind == "int4_block":
        k = rng.integers(-7, 8, size=(OUT, IN))
        k[:, ::8] = 7  # the largest magnitude in every block of 8
        return (k * np.repeat(rng.uniform(0.01, 0.1, (OUT, IN // 8)), 8, axis=1)).astype(np.float32)
    w = rng.standard_normal((OUT, IN)).astype(np.float32)
    w[rng.permutation(OUT * IN)[: OUT * IN // 2] // IN, rng.permutation(OUT * IN)[: OUT * IN // 2] % IN] = 0
    flat = w.reshape(-1)
    flat[np.argsort(np.abs(flat))[: OUT * IN // 2]] = 0  # exactly half are zero
    return w


def compress(model, kind, target):
    cto = pytest.importorskip("coremltools.optimize.coreml")
    if kind == "palettize":
        return cto.palettize_weights(model, cto.OptimizationConfig(
            cto.OpPalettizerConfig(mode="unique", weight_threshold=1)))
    if kind == "palettize_grouped":
        return cto.palettize_weights(model, cto.OptimizationConfig(cto.OpPalettizerConfig(
            mode="unique", granularity="per_grouped_channel", group_size=4, weight_threshold=1)))
    if kind == "int8":
        return cto.linear_quantize_weights(model, cto.OptimizationConfig(
            cto.OpLinearQuantizerConfig(mode="linear_symmetric", dtype="int8", weight_threshold=1)))
    if kind == "int4_block":
        return cto.linear_quantize_weights(model, cto.OptimizationConfig(cto.OpLinearQuantizerConfig(
            mode="linear_symmetric", dtype="int4", granularity="per_block", block_size=8, weight_threshold=1)))
    pruned = cto.prune_weights(model, cto.OptimizationConfig(
        cto.OpMagnitudePrunerConfig(target_sparsity=0.5, weight_threshold=1)))
    if kind == "prune":
        return pruned
    return cto.palettize_weights(pruned, cto.OptimizationConfig(  # joint: palettize the non-zero values
        cto.OpPalettizerConfig(mode="unique", weight_threshold=1)), joint_compression=True)


CASES = [("palettize", "iOS17", "constexpr_lut_to_dense"), ("int8", "iOS17", "constexpr_affine_dequantize"),
         ("prune", "iOS17", "constexpr_sparse_to_dense"), ("palettize", "iOS18", "constexpr_lut_to_dense"),
         ("palettize_grouped", "iOS18", "constexpr_lut_to_dense"),
         ("int8", "iOS18", "constexpr_blockwise_shift_scale"),
         ("int4_block", "iOS18", "constexpr_blockwise_shift_scale"),
         ("prune", "iOS18", "constexpr_sparse_to_dense"), ("prune_palettize", "iOS18", "constexpr_lut_to_sparse")]


@pytest.mark.parametrize("kind,target,expected_op", CASES, ids=[f"{k}-{t}" for k, t, _ in CASES])
def test_compressed_linear(tmp_path, kind, target, expected_op):
    from coremltools.converters.mil import Builder as mb

    c = ct()
    rng = np.random.default_rng(5)
    w = weights(kind if kind != "prune_palettize" else "prune", rng)
    if kind == "prune_palettize":  # the non-zero values from a 16-value palette
        w[w != 0] = rng.choice(np.linspace(-1, 1, 16), size=int((w != 0).sum())).astype(np.float32)

    @mb.program(input_specs=[mb.TensorSpec(shape=(3, IN))], opset_version=getattr(c.target, target))
    def prog(x):
        return mb.linear(x=x, weight=w, name="y")

    model = c.convert(prog, convert_to="mlprogram", minimum_deployment_target=getattr(c.target, target),
                      compute_precision=c.precision.FLOAT32)
    model = compress(model, kind, target)
    f = model.get_spec().mlProgram.functions["main"]
    ops = collections.Counter(op.type for op in f.block_specializations[f.opset].operations)
    assert ops[expected_op] == 1, dict(ops)
    path = str(tmp_path / "model.mlpackage")
    model.save(path)
    x = rng.standard_normal((3, IN)).astype(np.float32)
    got = estuary.load(estuary.compile(path)).run({"x": x})["y"]
    np.testing.assert_allclose(got, x.astype(np.float64) @ w.T.astype(np.float64), rtol=1e-5, atol=1e-5)


CONV_CASES = [("palettize", "iOS17"), ("int8", "iOS17"), ("palettize_grouped", "iOS18"), ("int8", "iOS18"),
              ("int4_block", "iOS18")]


@pytest.mark.parametrize("kind,target", CONV_CASES, ids=[f"{k}-{t}" for k, t in CONV_CASES])
def test_compressed_conv(tmp_path, kind, target):
    """Compressed conv weights [OUT, C, 2, 2] (rank 4: per-channel scales and grouped palettes on
    axis 0, blocks of 8 input channels x the kernel), kept compressed in the artefact;
    oracle: torch's conv2d in float64 with the original weights."""
    torch = pytest.importorskip("torch")
    from coremltools.converters.mil import Builder as mb

    c = ct()
    rng = np.random.default_rng(6)
    w = weights(kind, rng).reshape(OUT, 4, 2, 4)[..., :2].copy()  # [16, 4, 2, 2]; keeps each row's extreme code
    if kind == "int4_block":  # a conv block is 8 input channels x the whole kernel: [16, 16, 2, 2], 2 blocks
        k = rng.integers(-7, 8, size=(OUT, 16, 2, 2))
        k[:, [0, 8], 0, 0] = 7
        w = (k * np.repeat(rng.uniform(0.01, 0.1, (OUT, 2, 1, 1)), 8, axis=1)).astype(np.float32)

    @mb.program(input_specs=[mb.TensorSpec(shape=(2, w.shape[1], 5, 6))], opset_version=getattr(c.target, target))
    def prog(x):
        return mb.conv(x=x, weight=w, pad_type="valid", name="y")

    model = c.convert(prog, convert_to="mlprogram", minimum_deployment_target=getattr(c.target, target),
                      compute_precision=c.precision.FLOAT32)
    if kind == "int4_block":
        cto = pytest.importorskip("coremltools.optimize.coreml")
        model = cto.linear_quantize_weights(model, cto.OptimizationConfig(cto.OpLinearQuantizerConfig(
            mode="linear_symmetric", dtype="int4", granularity="per_block", block_size=8, weight_threshold=1)))
    else:
        model = compress(model, kind, target)
    path = str(tmp_path / "conv.mlpackage")
    model.save(path)
    x = rng.standard_normal((2, w.shape[1], 5, 6)).astype(np.float32)
    got = estuary.load(estuary.compile(path)).run({"x": x})["y"]
    want = torch.nn.functional.conv2d(torch.from_numpy(x).double(), torch.from_numpy(w).double()).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_artefact_keeps_weights_compressed(tmp_path):
    """A 256 x 512 linear weight (512 KB in float32) quantized to int8 or palettized to 16 values
    is stored as one byte per weight in the .vmfb, not expanded at compile time."""
    from coremltools.converters.mil import Builder as mb

    c = ct()
    rng = np.random.default_rng(8)
    w = rng.choice(np.round(np.linspace(-127, 127, 16)) / 127, size=(256, 512)).astype(np.float32)
    w[:, 0] = 1.0  # 16 values on the int8 grid of scale 1/127 (each row's largest is 1): both lossless

    @mb.program(input_specs=[mb.TensorSpec(shape=(4, 512))], opset_version=c.target.iOS18)
    def prog(x):
        return mb.linear(x=x, weight=w, name="y")

    base = c.convert(prog, convert_to="mlprogram", minimum_deployment_target=c.target.iOS18,
                     compute_precision=c.precision.FLOAT32)
    x = rng.standard_normal((4, 512)).astype(np.float32)
    sizes = {}
    for kind in ("none", "palettize", "int8"):
        model = base if kind == "none" else compress(base, kind, "iOS18")
        path = str(tmp_path / f"{kind}.mlpackage")
        model.save(path)
        art = estuary.compile(path)
        sizes[kind] = len(art.vmfb)
        got = estuary.load(art).run({"x": x})["y"]
        want = x.astype(np.float64) @ w.T.astype(np.float64)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    for kind in ("palettize", "int8"):
        assert sizes[kind] < sizes["none"] - 300_000, sizes
