"""Quantization fragments (§4.9.5): zero_point_linear_quantize converted directly (its library body
uses the non-standard `cast`); the others are expanded from their bodies.
"""
import numpy as np

from estuary.importers.nnef import quant
from estuary.importers.nnef.ops import OPS


@OPS.op("zero_point_linear_quantize")
def zero_point_linear_quantize(c, inv):
    """The library fragment's formula (its body needs the non-standard `cast`): s = round(x / scale) + z,
    q = clamp(s, lo, r), y = (q - z) scale with r = 2^(bits-1) - 1 (signed) or 2^bits - 1, and lo = 0
    (unsigned), -r (signed symmetric) or -r - 1 (signed)."""
    x = c.tensor(inv.inputs["x"])
    zero = c.tensor(inv.inputs["zero_point"])
    if c.spec(zero).dtype != "float32":
        zero = c.op("cast", [zero], to="float32")
    scale = c.tensor(inv.inputs["scale"])
    bits, signed, symmetric = int(inv.attribs["bits"]), inv.attribs["signed"], inv.attribs["symmetric"]
    c.check(0 < bits <= 32, f"bits must be in [1, 32], got {bits}")
    r = 2 ** (bits - 1) - 1 if signed else 2 ** bits - 1
    lo = (-r if symmetric else -r - 1) if signed else 0
    x, zero, scale = c.align(x, zero, scale)
    s = c.op("add", [quant.round_half_up(c, c.op("div", [x, scale])), zero])
    q = c.op("max", [c.op("min", [s, c.const(np.float32(r))]), c.const(np.float32(lo))])
    return c.op("mul", [c.op("sub", [q, zero]), scale])


# Supported through the expansion of their fragment bodies into the converters above.
OPS.expand("linear_quantize", "min_max_linear_quantize", "logarithmic_quantize")
