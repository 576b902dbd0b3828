"""matmul (§4.7) and linear (§4.9.2)."""
from estuary.importers.nnef.ops import OPS
from estuary.importers.nnef.ops.convolution import add_bias


def _swap_last(c, v):
    rank = c.spec(v).rank
    return c.op("transpose", [v], permutation=list(range(rank - 2)) + [rank - 1, rank - 2])


def matmul_values(c, a, b, ta=False, tb=False):
    c.check(c.spec(a).rank == c.spec(b).rank and c.spec(a).rank >= 2,
            f"A and B must have the same rank >= 2, got {list(c.spec(a).shape)} and {list(c.spec(b).shape)}")
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
    x, w = c.tensor(inv.inputs["input"]), c.tensor(inv.inputs["filter"])
    y = matmul_values(c, x, w, False, True)
    return add_bias(c, inv, y, c.spec(y).shape[-1])
