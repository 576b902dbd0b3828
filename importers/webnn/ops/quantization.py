"""WebNN mappings: quantizeLinear and dequantizeLinear, composed from nn element-wise ops.

`scale` and `zeroPoint` (one shape) are block-wise broadcast to the input: each of their
dimensions is 1, the input's, or a divisor of the input's (then each scale entry covers a block of
consecutive elements); a lower rank is padded with leading 1s (numpy broadcasting). int4 / uint4
operands are int8 / uint8 inside (four_bit.py); a 4-bit zero point bounds quantizeLinear's result.
    dequantizeLinear: (input - zeroPoint) * scale, in scale's data type
    quantizeLinear:   clamp(roundEven(input / scale) + zeroPoint), in zeroPoint's data type
"""
import numpy as np

from estuary.base import dtypes
from estuary.importers.webnn import four_bit
from estuary.importers.webnn.ops import OPS

QUANTIZED = ("int8", "uint8", "int32")


def _blockwise(c, v, shape, what):
    """`v` repeated block-wise so that it broadcasts to `shape` (numpy rules)."""
    vshape = list(c.spec(v).shape)
    c.check(len(vshape) <= len(shape), f"{what} rank {len(vshape)} exceeds the input rank {len(shape)}")
    vshape = [1] * (len(shape) - len(vshape)) + vshape
    if vshape != list(c.spec(v).shape):
        v = c.reshape(v, vshape)
    for d, (s, n) in enumerate(zip(vshape, shape)):
        if s in (1, n):
            continue
        c.check(n % s == 0, f"{what} shape {list(c.spec(v).shape)} is not block-wise broadcastable to the input "
                            f"shape {list(shape)} (dimension {d}: {n} is not a multiple of {s})")
        block = n // s
        split = vshape[:d + 1] + [1] + vshape[d + 1:]
        grown = vshape[:d + 1] + [block] + vshape[d + 1:]
        v = c.op("expand", [c.reshape(v, split)], new_shape=grown)
        vshape = vshape[:d] + [n] + vshape[d + 1:]
        v = c.reshape(v, vshape)
    return v


def _check_pair(c, scale, zero_point):
    ss, zs = c.spec(scale), c.spec(zero_point)
    c.check(ss.shape == zs.shape, f"scale {list(ss.shape)} and zeroPoint {list(zs.shape)} must have the same shape")
    c.check(ss.dtype in dtypes.FLOATS, f"scale data type must be float32 or float16, got {ss.dtype}")


def _f32(c, v):
    return v if c.spec(v).dtype == "float32" else c.op("cast", [v], to="float32")


@OPS.op("dequantizeLinear", params={"input": "MLOperand", "scale": "MLOperand", "zeroPoint": "MLOperand"}, options={})
def dequantize_linear(c, input, scale, zero_point, options):
    _check_pair(c, scale, zero_point)
    ins, out_type = c.spec(input), c.spec(scale).dtype
    c.check(ins.dtype in QUANTIZED, f"input data type must be one of {list(QUANTIZED)}, got {ins.dtype}")
    c.check(c.spec(zero_point).dtype == ins.dtype,
            f"zeroPoint data type {c.spec(zero_point).dtype} must be the input's ({ins.dtype})")
    zp = _blockwise(c, zero_point, ins.shape, "zeroPoint")
    sc = _blockwise(c, _f32(c, scale), ins.shape, "scale")
    if ins.dtype == "int32":  # the difference of two int32 values needs 33 bits
        diff = _f32(c, c.op("sub", [c.op("cast", [input], to="int64"), c.op("cast", [zp], to="int64")]))
    else:
        diff = c.op("sub", [_f32(c, input), _f32(c, zp)])
    y = c.op("mul", [diff, sc])
    return y if out_type == "float32" else c.op("cast", [y], to=out_type)


@OPS.op("quantizeLinear", params={"input": "MLOperand", "scale": "MLOperand", "zeroPoint": "MLOperand"}, options={})
def quantize_linear(c, input, scale, zero_point, options):
    _check_pair(c, scale, zero_point)
    ins, qtype = c.spec(input), c.spec(zero_point).dtype
    c.check(ins.dtype in dtypes.FLOATS, f"input data type must be float32 or float16, got {ins.dtype}")
    c.check(c.spec(scale).dtype == ins.dtype, f"scale data type {c.spec(scale).dtype} must be the input's ({ins.dtype})")
    c.check(qtype in QUANTIZED, f"zeroPoint data type must be one of {list(QUANTIZED)}, got {qtype}")
    zp = _blockwise(c, zero_point, ins.shape, "zeroPoint")
    sc = _blockwise(c, _f32(c, scale), ins.shape, "scale")
    q = c.op("round", [c.op("div", [_f32(c, input), sc])])  # round half to even
    info = np.iinfo(dtypes.to_numpy(qtype))
    narrow = four_bit.kind(c.graph, zero_point)  # an int4 / uint4 zero point: its 4-bit range
    lo, hi = four_bit.value_range(narrow) if narrow else (int(info.min), int(info.max))
    if qtype == "int32":  # exact integer addition: float32 cannot hold every int32
        wide = c.op("add", [c.op("cast", [q], to="int64"), c.op("cast", [zp], to="int64")])
        wide = c.op("clamp", [wide], min_value=float(lo), max_value=float(hi))
        return c.op("cast", [wide], to=qtype)
    y = c.op("clamp", [c.op("add", [q, _f32(c, zp)])], min_value=float(lo), max_value=float(hi))
    return four_bit.mark(c.graph, c.op("cast", [y], to=qtype), narrow or qtype)
