"""Classic Core ML activation / unary / arithmetic / normalization / shape layers vs float64
numpy implementations of the spec's formulas. Inputs [C, H, W] are rank-5 [1, 1, C, H, W] blobs."""
import numpy as np
import pytest

pytest.importorskip("coremltools")
from coremltools.models import datatypes  # noqa: E402
from coremltools.models.neural_network import NeuralNetworkBuilder  # noqa: E402

from tests.importers.coreml.util import run, save  # noqa: E402
from helpers import assert_accumulated, assert_exact, assert_ulp  # noqa: E402


def builder(inputs, outputs):
    return NeuralNetworkBuilder([(n, datatypes.Array(*s)) for n, s in inputs], [(n, None) for n in outputs])


def f32(v):
    return np.asarray(v).astype(np.float32)


def test_activations_and_unary(tmp_path, rng):
    x = rng.uniform(-3, 3, (4, 3, 5)).astype(np.float32)
    pos = rng.uniform(0.2, 3, (4, 3, 5)).astype(np.float32)
    x64, p64 = x.astype(np.float64), pos.astype(np.float64)
    slope = f32([0.1, -0.2, 0.3, 0.05])
    pa, pb = f32([0.5, 1.0, 1.5, 2.0]), f32([1.0, 0.5, 2.0, 1.5])
    acts = {  # name: (kind, params, reference, ulp)
        "linear": ("LINEAR", [0.5, -1.25], 0.5 * x64 - 1.25, 1),
        "relu": ("RELU", None, np.maximum(x64, 0), 0),
        "leaky": ("LEAKYRELU", [0.3], np.where(x64 >= 0, x64, float(f32(0.3)) * x64), 1),
        "thresh": ("THRESHOLDEDRELU", 0.7, np.where(x64 >= float(f32(0.7)), x64, 0), 0),
        "prelu": ("PRELU", slope, np.where(x64 >= 0, x64, slope.reshape(4, 1, 1) * x64), 1),
        "tanh": ("TANH", None, np.tanh(x64), 8),
        "stanh": ("SCALED_TANH", [1.5, 0.5], 1.5 * np.tanh(0.5 * x64), 6),
        "sigmoid": ("SIGMOID", None, 1 / (1 + np.exp(-x64)), 6),
        "hsig": ("SIGMOID_HARD", [0.25, 0.4], np.clip(0.25 * x64 + float(f32(0.4)), 0, 1), 2),
        "elu": ("ELU", 0.8, np.where(x64 >= 0, x64, float(f32(0.8)) * np.expm1(x64)), 8),
        "softsign": ("SOFTSIGN", None, x64 / (1 + np.abs(x64)), 8),
        "softplus": ("SOFTPLUS", None, np.log1p(np.exp(x64)), 8),
        "psoftplus": ("PARAMETRICSOFTPLUS", [pa, pb],
                      pa.reshape(4, 1, 1) * np.log1p(np.exp(pb.reshape(4, 1, 1) * x64)), 8),
    }
    unary = {  # name: (mode, kwargs, reference on pos, ulp)
        "sqrt": ("sqrt", {}, np.sqrt(p64), 1),
        "rsqrt": ("rsqrt", dict(epsilon=1e-3), 1 / np.sqrt(p64 + float(f32(1e-3))), 8),
        "inverse": ("inverse", dict(epsilon=0.0), 1 / p64, 1),
        "power": ("power", dict(alpha=2.5), p64 ** 2.5, 8),
        "exp": ("exp", dict(scale=0.5, shift=-0.25), np.exp(0.5 * p64 - 0.25), 8),
        "log": ("log", dict(epsilon=0.5), np.log(p64 + 0.5), 8),
        "abs": ("abs", dict(scale=-2.0, shift=1.0), np.abs(-2.0 * p64 + 1.0), 0),
        "threshold": ("threshold", dict(alpha=1.0), np.maximum(p64, 1.0), 0),
    }
    b = builder([("x", x.shape), ("pos", pos.shape)], list(acts) + list(unary))
    for name, (kind, params, _, _) in acts.items():
        b.add_activation(name, kind, "x", name, params=params)
    for name, (mode, kw, _, _) in unary.items():
        b.add_unary(name, "pos", name, mode, **kw)
    got = run(save(b, tmp_path), {"x": x, "pos": pos})
    for name, (_, _, e, ulp) in {**acts, **unary}.items():
        assert got[name].shape == e.shape, name
        assert_ulp(got[name], f32(e), ulp), name


def test_arithmetic_and_normalization(tmp_path, rng):
    x = rng.standard_normal((4, 3, 5)).astype(np.float32)
    y = rng.standard_normal((4, 3, 5)).astype(np.float32)
    z = rng.standard_normal((4, 1, 1)).astype(np.float32)  # broadcasts over H, W
    x64, y64, z64 = (v.astype(np.float64) for v in (x, y, z))
    gamma, beta = rng.standard_normal(4).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    mean, var = rng.standard_normal(4).astype(np.float32), rng.uniform(0.5, 2, 4).astype(np.float32)
    sc, bi = rng.standard_normal((4, 3, 5)).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    const = rng.standard_normal((2, 3, 5)).astype(np.float32)
    outs = ["add3", "add_a", "mul", "avg", "max", "min", "dot", "cos", "bn", "bn_mv", "bn_in", "mvn_c", "mvn_hw",
            "mvn_nv", "l2n", "softmax", "lrn", "scale", "bias", "const"]
    b = builder([("x", x.shape), ("y", y.shape), ("z", z.shape)], outs)
    b.add_elementwise("add3", ["x", "y", "z"], "add3", "ADD")
    b.add_elementwise("add_a", ["x"], "add_a", "ADD", alpha=0.75)
    b.add_elementwise("mul", ["x", "z"], "mul", "MULTIPLY")
    b.add_elementwise("avg", ["x", "y", "z"], "avg", "AVE")
    b.add_elementwise("max", ["x", "y"], "max", "MAX")
    b.add_elementwise("min", ["x", "z"], "min", "MIN")
    b.add_elementwise("dot", ["x", "y"], "dot", "DOT")
    b.add_elementwise("cos", ["x", "y"], "cos", "COS")
    b.add_batchnorm("bn", 4, gamma, beta, mean, var, "x", "bn", epsilon=1e-3)
    b.add_batchnorm("bn_mv", 4, gamma, beta, None, None, "x", "bn_mv", compute_mean_var=True,
                    instance_normalization=True, epsilon=1e-3)
    b.spec.neuralNetwork.layers[-1].batchnorm.instanceNormalization = False  # the builder refuses this mode
    b.add_batchnorm("bn_in", 4, gamma, beta, None, None, "x", "bn_in", compute_mean_var=True,
                    instance_normalization=True, epsilon=1e-3)
    b.add_mvn("mvn_c", "x", "mvn_c", across_channels=True, normalize_variance=True, epsilon=1e-4)
    b.add_mvn("mvn_hw", "x", "mvn_hw", across_channels=False, normalize_variance=True, epsilon=1e-4)
    b.add_mvn("mvn_nv", "x", "mvn_nv", across_channels=False, normalize_variance=False)
    b.add_l2_normalize("l2n", "x", "l2n", epsilon=1e-6)
    b.add_softmax("softmax", "x", "softmax")
    b.add_lrn("lrn", "x", "lrn", alpha=0.3, beta=0.75, local_size=3, k=2.0)
    b.add_scale("scale", sc, bi, True, "x", "scale", shape_scale=[4, 3, 5], shape_bias=[4])
    b.add_bias("bias", bi, "x", "bias", shape_bias=[4])
    b.add_load_constant("const", "const", const, [2, 3, 5])
    got = run(save(b, tmp_path), {"x": x, "y": y, "z": z})
    eps = lambda v: float(f32(v))  # noqa: E731
    g4, b4 = gamma.reshape(4, 1, 1).astype(np.float64), beta.reshape(4, 1, 1).astype(np.float64)

    def norm(v, axes, e):
        m = v.mean(axis=axes, keepdims=True)
        return (v - m) / np.sqrt(((v - m) ** 2).mean(axis=axes, keepdims=True) + eps(e))

    lrn_sum = np.stack([(x64[max(0, i - 1):i + 2] ** 2).sum(axis=0) for i in range(4)])
    un = lambda v: v / np.sqrt((v ** 2).sum(axis=0, keepdims=True))  # noqa: E731
    expect = {
        "add3": (x64 + y64 + z64, 2), "add_a": (x64 + 0.75, 0), "mul": (x64 * z64, 0),
        "avg": ((x64 + y64 + z64) / 3, 4), "max": (np.maximum(x64, y64), 0), "min": (np.minimum(x64, z64), 0),
        "dot": ((x64 * y64).sum(axis=0, keepdims=True), 8), "cos": ((un(x64) * un(y64)).sum(axis=0, keepdims=True), 16),
        "bn": (g4 * (x64 - mean.reshape(4, 1, 1)) / np.sqrt(var.reshape(4, 1, 1) + eps(1e-3)) + b4, 8),
        "bn_mv": (g4 * norm(x64, (1, 2), 1e-3) + b4, 16), "bn_in": (g4 * norm(x64, (1, 2), 1e-3) + b4, 16),
        "mvn_c": (norm(x64, (0, 1, 2), 1e-4), 32), "mvn_hw": (norm(x64, (1, 2), 1e-4), 16),
        "mvn_nv": (x64 - x64.mean(axis=(1, 2), keepdims=True), 8),
        "l2n": (x64 / np.sqrt((x64 ** 2).sum() + eps(1e-6)), 8),
        "softmax": (np.exp(x64) / np.exp(x64).sum(axis=0, keepdims=True), 8),
        "lrn": (x64 / (2.0 + eps(0.3) / 3 * lrn_sum) ** 0.75, 16),
        "scale": (x64 * sc + bi.reshape(4, 1, 1), 1), "bias": (x64 + bi.reshape(4, 1, 1), 0),
        "const": (const.astype(np.float64), 0),
    }
    for name, (e, ulp) in expect.items():
        assert got[name].shape == e.shape, name
        if name in ("mvn_nv", "mvn_c", "mvn_hw", "bn_mv", "bn_in", "cos", "dot", "add3", "avg"):
            assert_accumulated(got[name], f32(e), 60)
        else:
            assert_ulp(got[name], f32(e), ulp)


def test_dense_reduce_and_shapes(tmp_path, rng):
    x = rng.standard_normal((4, 2, 6)).astype(np.float32)
    v = rng.standard_normal((6, 1, 1)).astype(np.float32)
    ids = np.asarray([[[2.0]]], np.float32)
    x64 = x.astype(np.float64)
    w, bias = rng.standard_normal((3, 6)).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    table, tb = rng.standard_normal((5, 4)).astype(np.float32), rng.standard_normal(5).astype(np.float32)
    reduces = {"sum": np.sum, "avg": np.mean, "prod": np.prod, "sumsquare": lambda a, axis, keepdims:
               np.sum(a * a, axis=axis, keepdims=keepdims), "L1": lambda a, axis, keepdims:
               np.sum(np.abs(a), axis=axis, keepdims=keepdims), "L2": lambda a, axis, keepdims:
               np.sqrt(np.sum(a * a, axis=axis, keepdims=keepdims)), "max": np.max, "min": np.min}
    axes = {"CHW": (0, 1, 2), "HW": (1, 2), "C": (0,), "H": (1,), "W": (2,)}
    outs = ["ip", "emb", "argmax_w", "logsum", "rs_first", "rs_last", "fl_first", "fl_last", "perm", "cat",
            "sp0", "sp1", "sl_c", "sl_w", "s2d", "d2s", "shuffle", "seqrep"]
    outs += [f"r_{m}_{a}" for m in reduces for a in axes]
    b = builder([("x", x.shape), ("v", v.shape), ("ids", ids.shape)], outs)
    b.add_inner_product("ip", w, bias, 6, 3, True, "v", "ip")
    b.add_embedding("emb", table, tb, 4, 5, True, "ids", "emb")
    for m in reduces:
        for a in axes:
            b.add_reduce(f"r_{m}_{a}", "x", f"r_{m}_{a}", a, m)
    b.add_reduce("argmax_w", "x", "argmax_w", "W", "argmax")
    b.add_reduce("logsum", "x", "logsum", "HW", "logsum")
    b.add_reshape("rs_first", "x", "rs_first", (2, 4, 6), 0)
    b.add_reshape("rs_last", "x", "rs_last", (2, 4, 6), 1)
    b.add_flatten("fl_first", 0, "x", "fl_first")
    b.add_flatten("fl_last", 1, "x", "fl_last")
    b.add_permute("perm", (0, 3, 1, 2), "x", "perm")
    b.add_elementwise("cat", ["x", "x"], "cat", "CONCAT")
    b.add_split("split", "x", ["sp0", "sp1"])
    b.add_slice("sl_c", "x", "sl_c", "channel", 1, 4, 2)
    b.add_slice("sl_w", "x", "sl_w", "width", 0, -1, 1)
    b.spec.neuralNetwork.layers[-1].slice.startIndex = -5  # negative start: the builder refuses it
    b.add_reorganize_data("s2d", "x", "s2d", "SPACE_TO_DEPTH", 2)
    b.add_reorganize_data("d2s", "x", "d2s", "DEPTH_TO_SPACE", 2)
    b.add_reorganize_data("shuffle", "x", "shuffle", "PIXEL_SHUFFLE", 2)
    b.add_sequence_repeat("seqrep", 3, "x", "seqrep")
    got = run(save(b, tmp_path), {"x": x, "v": v, "ids": ids})
    # 0.5 * |x| keeps the logsum of HW sums positive
    expect = {"ip": ((w.astype(np.float64) @ v.reshape(6)) + bias).reshape(3, 1, 1),
              "emb": (table[:, 2] + tb).astype(np.float64).reshape(5, 1, 1),
              "argmax_w": np.argmax(x64, axis=2)[:, :, None].astype(np.float64)}
    for m, fn in reduces.items():
        for a, ax in axes.items():
            expect[f"r_{m}_{a}"] = fn(x64, axis=ax, keepdims=True)
    cl = x64.transpose(1, 2, 0).reshape(-1)  # channel-last order
    expect.update({
        "rs_first": x64.reshape(2, 4, 6), "rs_last": cl.reshape(4, 6, 2).transpose(2, 0, 1),
        "fl_first": x64.reshape(-1, 1, 1), "fl_last": cl.reshape(-1, 1, 1),
        "perm": x64[None].transpose(0, 3, 1, 2)[0], "cat": np.concatenate([x64, x64]),
        "sp0": x64[:2], "sp1": x64[2:], "sl_c": x64[1:4:2], "sl_w": x64[:, :, 1:5],
        "seqrep": np.tile(x64[None, None], (3, 1, 1, 1, 1)),
    })
    # reorganizeData: the spec's index formulas
    c, h, wd = x.shape
    s2d = np.zeros((c * 4, h // 2, wd // 2))
    d2s = np.zeros((c // 4, h * 2, wd * 2))
    shuf = np.zeros((c // 4, h * 2, wd * 2))
    for ch in range(c):
        for i in range(h):
            for j in range(wd):
                s2d[((i % 2) * 2 + j % 2) * c + ch, i // 2, j // 2] = x64[ch, i, j]
    for co in range(c // 4):
        for i in range(h * 2):
            for j in range(wd * 2):
                d2s[co, i, j] = x64[((i % 2) * 2 + j % 2) * (c // 4) + co, i // 2, j // 2]
                shuf[co, i, j] = x64[co * 4 + (i % 2) * 2 + j % 2, i // 2, j // 2]
    expect.update({"s2d": s2d, "d2s": d2s, "shuffle": shuf})
    for name, e in expect.items():
        assert got[name].shape == e.shape, name
        if name in ("ip",) or name.startswith(("r_sum", "r_avg", "r_prod", "r_sumsq", "r_L")):
            assert_accumulated(got[name], f32(e), 24)
        else:
            assert_exact(got[name], f32(e))
    assert got["logsum"].shape == (4, 1, 1)
    with np.errstate(invalid="ignore"):
        ls = np.log(x64.sum(axis=(1, 2), keepdims=True))
    ok = ~np.isnan(ls)
    assert_accumulated(got["logsum"][ok], f32(ls[ok]), 24)
