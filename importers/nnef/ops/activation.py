"""Activation fragments of §4.9.1 converted directly (one nn op each): sigmoid, relu, leaky_relu,
prelu, elu, softplus, softmax; selu, gelu (the parser library's x * sigmoid(1.702 x), not the
erf form), silu and softabs are expanded from their fragment bodies.
"""
from estuary.importers.nnef.ops import OPS


@OPS.op("sigmoid")
def sigmoid(c, inv):
    return c.op("sigmoid", [c.tensor(inv.inputs["x"])])


@OPS.op("relu")
def relu(c, inv):
    return c.op("relu", [c.tensor(inv.inputs["x"])])


@OPS.op("softplus")
def softplus(c, inv):
    return c.op("softplus", [c.tensor(inv.inputs["x"])])


@OPS.op("leaky_relu")
def leaky_relu(c, inv):
    """select(x < 0, alpha x, x): nn.leaky_relu (x >= 0 ? x : alpha x) is the same function."""
    return c.op("leaky_relu", [c.tensor(inv.inputs["x"])], alpha=float(inv.attribs["alpha"]))


@OPS.op("elu")
def elu(c, inv):
    """select(x < 0, alpha (exp(x) - 1), x); both sides give 0 at x = 0."""
    return c.op("elu", [c.tensor(inv.inputs["x"])], alpha=float(inv.attribs.get("alpha", 1.0)))


@OPS.op("prelu")
def prelu(c, inv):
    x, alpha = c.align(c.tensor(inv.inputs["x"]), c.tensor(inv.inputs["alpha"]))
    return c.op("prelu", [x, alpha])


@OPS.op("softmax")
def softmax(c, inv):
    x = c.tensor(inv.inputs["x"])
    rank = c.spec(x).rank
    axes = sorted(inv.attribs.get("axes", [1]))
    c.check(len(set(axes)) == len(axes) and all(0 <= a < rank for a in axes),
            f"axes {axes} must be unique, non-negative and less than the rank {rank}")
    if len(axes) == 1:
        return c.op("softmax", [x], axis=axes[0])
    if not axes:  # e / e
        return c.op("div", [c.op("exp", [c.op("sub", [x, x])])] * 2)
    e = c.op("exp", [c.op("sub", [x, c.op("reduce_max", [x], axes=axes, keep_dimensions=True)])])
    return c.op("div", [e, c.op("reduce_sum", [e], axes=axes, keep_dimensions=True)])


# Supported through the expansion of their fragment bodies into the converters above.
OPS.expand("selu", "gelu", "silu", "softabs")
