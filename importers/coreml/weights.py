"""Core ML WeightParams -> float32 numpy arrays.

floatValue, float16Value (little-endian IEEE half), rawValue (float32 bytes, or n-bit quantized
values packed most significant bit first when `quantization` is set), int8RawValue (signed 8-bit
with a linear quantization). Linear quantization: w = scale[c] * q + bias[c] with c the index along
the channel axis (a single scale/bias applies to all); lookup table: w = table[q].
"""
import numpy as np


def unpack_bits(data, count, nbits):
    """`count` unsigned nbits-wide integers packed MSB first in `data`."""
    raw = np.frombuffer(data, dtype=np.uint8)
    if nbits == 8:
        return raw[:count].astype(np.int64)
    bits = np.unpackbits(raw)[:count * nbits].reshape(count, nbits).astype(np.int64)
    return bits @ (1 << np.arange(nbits - 1, -1, -1))


def dequantize(wp, shape, fail, what="weights", axis=0):
    """The float32 array of WeightParams `wp` with `shape` (checks the element count)."""
    shape = tuple(int(d) for d in shape)
    count = int(np.prod(shape))
    q = wp.quantization if wp.HasField("quantization") else None
    kinds = [k for k in ("floatValue", "float16Value", "rawValue", "int8RawValue") if len(getattr(wp, k)) > 0]
    if not kinds:
        if count == 0:
            return np.zeros(shape, np.float32)
        fail(f"{what}: no values (expected {count})")
    if len(kinds) > 1:
        fail(f"{what}: several value fields are set ({', '.join(kinds)})")
    kind = kinds[0]
    if kind == "floatValue":
        values = np.asarray(wp.floatValue, dtype=np.float32)
    elif kind == "float16Value":
        if len(wp.float16Value) != 2 * count:
            fail(f"{what}: float16Value has {len(wp.float16Value)} bytes, {2 * count} expected for shape {list(shape)}")
        values = np.frombuffer(wp.float16Value, dtype="<f2").astype(np.float32)
    elif kind == "int8RawValue":
        if len(wp.int8RawValue) != count:
            fail(f"{what}: int8RawValue has {len(wp.int8RawValue)} bytes, {count} expected")
        values = _linear(np.frombuffer(wp.int8RawValue, dtype=np.int8).astype(np.float64), q, shape, fail, what,
                         axis)
    elif q is None or q.WhichOneof("QuantizationType") is None:
        if len(wp.rawValue) != 4 * count:
            fail(f"{what}: rawValue has {len(wp.rawValue)} bytes, {4 * count} expected for shape {list(shape)} "
                 f"(float32)")
        values = np.frombuffer(wp.rawValue, dtype="<f4").astype(np.float32)
    else:
        nbits = int(q.numberOfBits)
        if not 1 <= nbits <= 8:
            fail(f"{what}: numberOfBits {nbits} is not in 1..8")
        need = (count * nbits + 7) // 8
        if len(wp.rawValue) < need:
            fail(f"{what}: rawValue has {len(wp.rawValue)} bytes, {need} needed for {count} {nbits}-bit values")
        codes = unpack_bits(wp.rawValue, count, nbits)
        if q.WhichOneof("QuantizationType") == "lookupTableQuantization":
            table = np.asarray(q.lookupTableQuantization.floatValue, dtype=np.float32)
            if len(table) != 2 ** nbits:
                fail(f"{what}: lookup table has {len(table)} entries, 2^{nbits} = {2 ** nbits} expected")
            values = table[codes]
        else:
            values = _linear(codes.astype(np.float64), q, shape, fail, what, axis)
    if values.size != count:
        fail(f"{what}: {values.size} values, {count} expected for shape {list(shape)}")
    return np.asarray(values, dtype=np.float32).reshape(shape)


def _linear(codes, q, shape, fail, what, axis):
    if q is None or q.WhichOneof("QuantizationType") != "linearQuantization":
        fail(f"{what}: 8-bit integer weights need a linear quantization")
    scale = np.asarray(q.linearQuantization.scale, dtype=np.float64)
    bias = np.asarray(q.linearQuantization.bias, dtype=np.float64)
    if len(bias) == 0:
        bias = np.zeros(1)
    channels = shape[axis] if shape else 1
    for name, v in (("scale", scale), ("bias", bias)):
        if len(v) not in (1, channels):
            fail(f"{what}: linear quantization has {len(v)} {name} values; 1 or {channels} (one per channel) expected")
    codes = codes.reshape(shape if shape else (1,))
    bshape = [1] * codes.ndim
    bshape[axis] = -1
    out = codes * scale.reshape(bshape) + bias.reshape(bshape)
    return out.astype(np.float32)
