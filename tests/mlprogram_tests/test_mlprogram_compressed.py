"""Compressed weights from coremltools.optimize.coreml (palettized, int8/int4 quantized, pruned,
and palettized on top of pruning), for the iOS16 constexpr ops (iOS17 target) and the iOS18 ones.
The weights are built so that each compression is lossless (<= 16 distinct values per group, an
integer grid times a per-row or per-block scale with the extreme code present, exactly half
zeros), so the oracle is the float64 product with the original weights."""
import collections

import numpy as np
import pytest

import estuary
from util import ct

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
