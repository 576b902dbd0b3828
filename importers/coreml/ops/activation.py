"""Core ML activations: activation (every ActivationParams kind), unary, clip, clampedReLU, gelu."""
import math

from estuary.importers.coreml.classic import per_channel, scalar, vector
from estuary.importers.coreml.nd import scalar_like
from estuary.importers.coreml.ops import OPS


def _channels(c, x):
    shape = c.spec(x).shape
    c.check(len(shape) >= 3, f"per-channel parameters need an input of rank >= 3, got shape {list(shape)}")
    return shape[-3]


@OPS.op("activation")
def activation(c, layer):
    return apply_activation(c, layer.activation, c.input(layer))


def apply_activation(c, a, x):
    """Apply ActivationParams `a` to x (per-channel parameters along axis -3)."""
    kind = a.WhichOneof("NonlinearityType")
    p = getattr(a, kind) if kind else None
    if kind == "linear":
        return c.op("linear", [x], alpha=float(p.alpha), beta=float(p.beta))
    if kind == "ReLU":
        return c.op("relu", [x])
    if kind == "leakyReLU":
        return c.op("leaky_relu", [x], alpha=float(p.alpha))
    if kind == "thresholdedReLU":
        keep = c.op("greater_or_equal", [x, scalar(c, p.alpha)])
        return c.op("where", [keep, x, scalar(c, 0.0)])
    if kind == "PReLU":
        slope = vector(c, p.alpha, _channels(c, x), "alpha")
        return c.op("prelu", [x, per_channel(c, slope, x)])
    if kind == "tanh":
        return c.op("tanh", [x])
    if kind == "scaledTanh":
        t = c.op("tanh", [c.op("mul", [x, scalar(c, p.beta)])])
        return c.op("mul", [t, scalar(c, p.alpha)])
    if kind == "sigmoid":
        return c.op("sigmoid", [x])
    if kind == "sigmoidHard":
        return c.op("hard_sigmoid", [x], alpha=float(p.alpha), beta=float(p.beta))
    if kind == "ELU":
        return c.op("elu", [x], alpha=float(p.alpha))
    if kind == "softsign":
        return c.op("softsign", [x])
    if kind == "softplus":
        return c.op("softplus", [x])
    if kind == "parametricSoftplus":
        ch = _channels(c, x)
        alpha = per_channel(c, vector(c, p.alpha, ch, "alpha"), x)
        beta = per_channel(c, vector(c, p.beta, ch, "beta"), x)
        return c.op("mul", [c.op("softplus", [c.op("mul", [x, beta])]), alpha])
    c.fail(f"unsupported activation kind {kind!r}")


@OPS.op("unary")
def unary(c, layer):
    p = layer.unary
    x = c.input(layer)
    if p.scale != 1.0 or p.shift != 0.0:
        x = c.op("add", [c.op("mul", [x, scalar(c, p.scale)]), scalar(c, p.shift)])
    kind = {0: "SQRT", 1: "RSQRT", 2: "INVERSE", 3: "POWER", 4: "EXP", 5: "LOG", 6: "ABS", 7: "THRESHOLD"}.get(p.type)
    eps = lambda v: c.op("add", [v, scalar(c, p.epsilon)])  # noqa: E731
    if kind == "SQRT":
        return c.op("sqrt", [x])
    if kind == "RSQRT":
        return c.op("reciprocal", [c.op("sqrt", [eps(x)])])
    if kind == "INVERSE":
        return c.op("reciprocal", [eps(x)])
    if kind == "POWER":
        return c.op("pow", [x, scalar(c, p.alpha)])
    if kind == "EXP":
        return c.op("exp", [x])
    if kind == "LOG":
        return c.op("log", [eps(x)])
    if kind == "ABS":
        return c.op("abs", [x])
    if kind == "THRESHOLD":
        return c.op("max", [x, scalar(c, p.alpha)])
    c.fail(f"unknown unary operation {p.type}")


@OPS.op("clip")
def convert_clip(c, layer):
    p = layer.clip
    c.check(p.minVal <= p.maxVal, f"minVal {p.minVal} is greater than maxVal {p.maxVal}")
    return c.op("clamp", [c.input(layer)], min_value=float(p.minVal), max_value=float(p.maxVal))


@OPS.op("clampedReLU")
def convert_clamped_relu(c, layer):
    """min(beta, x >= 0 ? x : alpha * x)."""
    p = layer.clampedReLU
    y = c.op("leaky_relu", [c.input(layer)], alpha=float(p.alpha))
    return c.op("min", [y, scalar_like(c, p.beta, y)])


@OPS.op("gelu")
def convert_gelu(c, layer):
    x = c.input(layer)
    mode = layer.gelu.mode
    if mode == 0:  # EXACT: 0.5 x (1 + erf(x / sqrt 2))
        return c.op("gelu", [x])
    if mode == 1:  # TANH_APPROXIMATION: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        cube = c.op("mul", [c.op("mul", [x, x]), x])
        inner = c.op("add", [x, c.op("mul", [cube, scalar_like(c, 0.044715, x)])])
        t = c.op("tanh", [c.op("mul", [inner, scalar_like(c, math.sqrt(2 / math.pi), x)])])
        half_x = c.op("mul", [x, scalar_like(c, 0.5, x)])
        return c.op("mul", [half_x, c.op("add", [t, scalar_like(c, 1.0, x)])])
    if mode == 2:  # SIGMOID_APPROXIMATION: x sigmoid(1.702 x)
        return c.op("mul", [x, c.op("sigmoid", [c.op("mul", [x, scalar_like(c, 1.702, x)])])])
    c.fail(f"unknown gelu mode {mode}")
