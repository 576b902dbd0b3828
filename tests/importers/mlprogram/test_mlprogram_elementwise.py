"""Element-wise ops and activations of MIL programs against the float64 numpy formulas of
coremltools' op definitions. Each test builds one program with many outputs (one compile)."""
import math

import numpy as np

from tests.importers.mlprogram.util import close, run, save

ERF = np.vectorize(math.erf)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


UNARY = {  # MIL op -> (kwargs, formula, input domain)
    "abs": ({}, np.abs, "any"), "acos": ({}, np.arccos, "unit"), "asin": ({}, np.arcsin, "unit"),
    "atan": ({}, np.arctan, "any"), "atanh": ({}, np.arctanh, "unit"), "ceil": ({}, np.ceil, "any"),
    "cos": ({}, np.cos, "any"), "cosh": ({}, np.cosh, "any"), "erf": ({}, ERF, "any"), "exp": ({}, np.exp, "any"),
    "exp2": ({}, np.exp2, "any"), "floor": ({}, np.floor, "any"), "round": ({}, np.round, "any"),
    "sign": ({}, np.sign, "any"), "sin": ({}, np.sin, "any"), "sinh": ({}, np.sinh, "any"),
    "sqrt": ({}, np.sqrt, "pos"), "square": ({}, np.square, "any"), "tan": ({}, np.tan, "unit"),
    "tanh": ({}, np.tanh, "any"), "relu": ({}, lambda x: np.maximum(x, 0), "any"),
    "relu6": ({}, lambda x: np.clip(x, 0, 6), "any"), "sigmoid": ({}, sigmoid, "any"),
    "silu": ({}, lambda x: x * sigmoid(x), "any"), "softplus": ({}, lambda x: np.log1p(np.exp(x)), "any"),
    "softsign": ({}, lambda x: x / (1 + np.abs(x)), "any"),
    "inverse": ({"epsilon": 0.5}, lambda x: 1 / (x + 0.5), "pos"),
    "log": ({"epsilon": 0.25}, lambda x: np.log(x + 0.25), "pos"),
    "rsqrt": ({"epsilon": 0.5}, lambda x: 1 / np.sqrt(x + 0.5), "pos"),
    "clip": ({"alpha": -0.5, "beta": 0.7}, lambda x: np.clip(x, -0.5, 0.7), "any"),
    "threshold": ({"alpha": 0.3}, lambda x: np.maximum(x, 0.3), "any"),
    "elu": ({"alpha": 0.7}, lambda x: np.where(x > 0, x, 0.7 * (np.exp(x) - 1)), "any"),
    "leaky_relu": ({"alpha": 0.2}, lambda x: np.where(x >= 0, x, 0.2 * x), "any"),
    "linear_activation": ({"alpha": 1.5, "beta": -0.25}, lambda x: 1.5 * x - 0.25, "any"),
    "clamped_relu": ({"alpha": 0.1, "beta": 1.0}, lambda x: np.minimum(1.0, np.where(x >= 0, x, 0.1 * x)), "any"),
    "thresholded_relu": ({"alpha": 0.4}, lambda x: np.where(x > 0.4, x, 0), "any"),
    "scaled_tanh": ({"alpha": 2.0, "beta": 0.5}, lambda x: 2.0 * np.tanh(0.5 * x), "any"),
    "sigmoid_hard": ({"alpha": 0.3, "beta": 0.4}, lambda x: np.clip(0.3 * x + 0.4, 0, 1), "any"),
}
GELU = {
    "EXACT": lambda x: 0.5 * x * (1 + ERF(x / math.sqrt(2))),
    "TANH_APPROXIMATION": lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))),
    "SIGMOID_APPROXIMATION": lambda x: x * sigmoid(1.702 * x),
}


def test_unary_and_activations(tmp_path):
    from coremltools.converters.mil import Builder as mb

    shape = (2, 3, 4)

    @mb.program(input_specs=[mb.TensorSpec(shape=shape), mb.TensorSpec(shape=shape), mb.TensorSpec(shape=shape)])
    def prog(a, u, p):
        outs = []
        for name, (kw, _, dom) in UNARY.items():
            src = {"any": a, "unit": u, "pos": p}[dom]
            outs.append(getattr(mb, name)(x=src, name=f"o_{name}", **kw))
        for mode in GELU:
            outs.append(mb.gelu(x=a, mode=mode, name=f"o_gelu_{mode}"))
        outs.append(mb.softmax(x=a, axis=1, name="o_softmax"))
        return tuple(outs)

    rng = np.random.default_rng(0)
    a = (rng.standard_normal(shape) * 2).astype(np.float32)
    a.flat[:4] = [0.5, 1.5, -2.5, 0.0]  # round: halves go to even
    u = rng.uniform(-0.9, 0.9, shape).astype(np.float32)
    p = rng.uniform(0.1, 3, shape).astype(np.float32)
    got = run(save(prog, tmp_path), {"a": a, "u": u, "p": p})
    src = {"any": a, "unit": u, "pos": p}
    for name, (_, fn, dom) in UNARY.items():
        close(got[f"o_{name}"], fn(src[dom].astype(np.float64)), rtol=2e-6, atol=1e-6)
    for mode, fn in GELU.items():
        close(got[f"o_gelu_{mode}"], fn(a.astype(np.float64)), rtol=2e-6, atol=1e-6)
    e = np.exp(a - a.max(axis=1, keepdims=True))
    close(got["o_softmax"], e / e.sum(axis=1, keepdims=True))


def test_binary_compare_logical(tmp_path):
    from coremltools.converters.mil import Builder as mb

    binary = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "real_div": np.divide,
              "maximum": np.maximum, "minimum": np.minimum, "floor_div": np.floor_divide, "mod": np.mod}
    compare = {"equal": np.equal, "not_equal": np.not_equal, "greater": np.greater,
               "greater_equal": np.greater_equal, "less": np.less, "less_equal": np.less_equal}

    @mb.program(input_specs=[mb.TensorSpec(shape=(3, 4)), mb.TensorSpec(shape=(4,)), mb.TensorSpec(shape=(3, 4))])
    def prog(x, y, p):
        outs = [getattr(mb, n)(x=x, y=y, name=f"o_{n}") for n in binary]
        outs.append(mb.pow(x=p, y=y, name="o_pow"))
        for n in compare:
            outs.append(mb.cast(x=getattr(mb, n)(x=x, y=y), dtype="fp32", name=f"o_{n}"))
        gx, gy = mb.greater(x=x, y=0.0), mb.greater(x=y, y=0.0)
        for n in ("logical_and", "logical_or", "logical_xor"):
            outs.append(mb.cast(x=getattr(mb, n)(x=gx, y=gy), dtype="fp32", name=f"o_{n}"))
        outs.append(mb.cast(x=mb.logical_not(x=gx), dtype="fp32", name="o_logical_not"))
        outs.append(mb.cast(x=mb.cast(x=x, dtype="int32"), dtype="fp32", name="o_cast_int"))
        return tuple(outs)

    rng = np.random.default_rng(1)
    x = (rng.standard_normal((3, 4)) * 3).astype(np.float32)
    y = np.array([1.5, -2.0, 0.75, 3.0], np.float32)
    x[0, :2] = y[:2]  # some equal pairs
    p = rng.uniform(0.5, 2, (3, 4)).astype(np.float32)
    got = run(save(prog, tmp_path), {"x": x, "y": y, "p": p})
    xd, yd = x.astype(np.float64), y.astype(np.float64)
    for n, fn in binary.items():
        close(got[f"o_{n}"], fn(xd, yd), rtol=2e-6, atol=2e-6)
    close(got["o_pow"], np.power(p.astype(np.float64), yd), rtol=4e-6)
    for n, fn in compare.items():
        close(got[f"o_{n}"], fn(x, y).astype(np.float64), rtol=0, atol=0)
    gx, gy = x > 0, y > 0
    close(got["o_logical_and"], gx & gy, rtol=0, atol=0)
    close(got["o_logical_or"], gx | gy, rtol=0, atol=0)
    close(got["o_logical_xor"], gx ^ gy, rtol=0, atol=0)
    close(got["o_logical_not"], ~gx, rtol=0, atol=0)
    close(got["o_cast_int"], np.trunc(xd), rtol=0, atol=0)
