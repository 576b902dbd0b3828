"""matmul (§4.7) and linear (§4.9.2)."""
from estuary.importers.nnef.ops import OPS
from estuary.importers.nnef.ops.convolution import add_bias


def _swap_last(c, v):
    rank = c.spec(v).rank
    return c.op("transpose", [v], permutation=list(range(rank - 2)) + [rank - 1, rank - 2])


def matmul_values(c, a, b, ta=False, tb=False):
    c.check(c.spec(a).rank >= 2 and c.spec(b).rank >= 2,
            f"A and B must have rank >= 2, got {list(c.spec(a).shape)} and {list(c.spec(b).shape)}")
    # batch axes broadcast; a lower rank gains leading unit axes (tract's broadcasting matmul)
    rank = max(c.spec(a).rank, c.spec(b).rank)
    a, b = (c.reshape(v, [1] * (rank - c.spec(v).rank) + list(c.spec(v).shape)) for v in (a, b))
    if ta:
        a = _swap_last(c, a)
    if tb:
        b = _swap_last(c, b)
    return c.op("matmul", [a, b])


@OPS.op("matmul")
def matmul(c, inv):
    a, b = c.tensor(inv.inputs["A"]), c.tensor(inv.inputs["B"])
    return matmul_values(c, a, b, inv.attribs.get("transposeA", False), inv.attribs.get("transposeB", False))


@OPS.op("linear")
def linear(c, inv):
    """matmul(input, filter, transposeB) + bias. On inputs of rank 3 and more (tract's broadcasting
    matmul, torch-to-nnef's exports) the bias [1, C] / [C] / [1, ..., 1, C] applies to the last axis."""
    x, w = c.tensor(inv.inputs["input"]), c.tensor(inv.inputs["filter"])
    y = matmul_values(c, x, w, False, True)
    channels = c.spec(y).shape[-1]
    if c.spec(y).rank <= 2:
        return add_bias(c, inv, y, channels)
    b = inv.inputs.get("bias", 0.0)
    if c.is_zero(b):
        return y
    bv = c.tensor(b)
    bshape = list(c.spec(bv).shape)
    c.check(bshape[-1:] in ([], [1], [channels]) and all(d == 1 for d in bshape[:-1]) and len(bshape) <= c.spec(y).rank,
            f"bias shape {bshape} must be [1, {channels}] or singular")
    bv = c.reshape(bv, [1] * (c.spec(y).rank - len(bshape)) + bshape)
    return c.op("add", [y, bv])
