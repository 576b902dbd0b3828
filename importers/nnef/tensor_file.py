"""NNEF tensor data files (.dat), decoded as NNEF 1.0 §5.2 specifies.

Header (128 bytes, little-endian): magic 'N' 0xEF, version (major, minor), data length (u32),
rank (u32, <= 8), 8 extents (u32), bits per item (u32, <= 64), quantization code (u32: vendor in
the high half, algorithm in the low half), 32 bytes of algorithm parameters, reserved.

Khronos algorithm codes: 0x00 IEEE float (16/32/64 bits), 0x01 integer (params[0] != 0: signed),
0x10 linear quantization, 0x11 logarithmic quantization. Items are a continuous big-endian-bit
stream (most significant bit first, as the Khronos tools pack 1-bit data) for widths that are not
whole bytes; whole-byte widths are little-endian. Files written by the `nnef` Python package use
its own item-type codes (2 quantized unsigned, 3 quantized signed, 4 signed int, 5 bool); they are
accepted too, so nnef-tools' output loads.

Everything is checked before anything is allocated: magic, version, rank, the extents against
the expected shape, the item count, and the data length against the file size.
"""
import struct

import numpy as np

from estuary.base.errors import ModelImportError

HEADER = 128
MAX_RANK = 8
MAX_ITEMS = 1 << 31

FLOAT, INTEGER, LINEAR, LOGARITHMIC = 0x00, 0x01, 0x10, 0x11
# item-type codes of the `nnef` package's writer (not in §5.2)
PKG_QUINT, PKG_QINT, PKG_INT, PKG_BOOL = 2, 3, 4, 5


class TensorFileError(ModelImportError):
    pass


def _fail(path, message):
    raise TensorFileError(f"{path}: {message}")


def parse_header(raw, path="<tensor>"):
    """Header fields of a .dat file's first 128 bytes."""
    if len(raw) < HEADER:
        _fail(path, f"truncated header ({len(raw)} of {HEADER} bytes)")
    if raw[0] != 0x4E or raw[1] != 0xEF:
        _fail(path, "not an NNEF tensor file (bad magic number)")
    major, minor = raw[2], raw[3]
    if major != 1:
        _fail(path, f"unsupported tensor file version {major}.{minor}")
    data_length, rank = struct.unpack_from("<II", raw, 4)
    extents = struct.unpack_from("<8I", raw, 12)
    bits, code = struct.unpack_from("<II", raw, 44)
    params = raw[52:84]
    if rank > MAX_RANK:
        _fail(path, f"rank {rank} exceeds the maximum of {MAX_RANK}")
    if any(e != 0 for e in extents[rank:]):
        _fail(path, "extents beyond the rank must be zero")
    if not 1 <= bits <= 64:
        _fail(path, f"invalid bits per item {bits} (1..64)")
    return {"version": (major, minor), "data_length": data_length, "shape": list(extents[:rank]),
            "bits": bits, "vendor": code >> 16, "algorithm": code & 0xFFFF, "params": params}


def _unpack(data, bits, count):
    """`count` unsigned integers of `bits` bits from an MSB-first bit stream (as uint64)."""
    if bits in (8, 16, 32, 64):
        return np.frombuffer(data, dtype=f"<u{bits // 8}", count=count).astype(np.uint64)
    stream = np.unpackbits(np.frombuffer(data, dtype=np.uint8))[: count * bits]
    groups = stream.reshape(count, bits).astype(np.uint64)
    weights = (np.uint64(1) << np.arange(bits - 1, -1, -1, dtype=np.uint64))
    return (groups * weights).sum(axis=1, dtype=np.uint64)


def _signed(values, bits):
    """Two's complement reinterpretation of `bits`-wide unsigned values."""
    v = values.astype(np.uint64)
    if bits == 64:
        return v.view(np.int64)
    sign = np.uint64(1) << np.uint64(bits - 1)
    return (v.astype(np.int64) - ((v & sign) != 0).astype(np.int64) * (1 << bits))


def _int_dtype(bits, signed):
    for width in (8, 16, 32, 64):
        if bits <= width:
            return np.dtype(f"{'i' if signed else 'u'}{width // 8}")
    raise AssertionError(bits)


def decode(header, data, path="<tensor>"):
    """The numpy array a header + data block describe (float32/64/16, ints, or dequantized float32)."""
    shape, bits, alg = header["shape"], header["bits"], header["algorithm"]
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if header["vendor"] != 0:
        _fail(path, f"vendor-specific quantization code 0x{header['vendor']:04x}:{alg:04x} is not supported")
    if alg == FLOAT:
        if bits not in (16, 32, 64):
            _fail(path, f"float data needs 16, 32 or 64 bits per item, got {bits}")
        return np.frombuffer(data, dtype=f"<f{bits // 8}", count=count).astype(f"f{bits // 8}").reshape(shape)
    raw = _unpack(data, bits, count)
    if alg in (INTEGER, PKG_INT, PKG_BOOL, PKG_QINT, PKG_QUINT):
        if alg == PKG_BOOL:
            return raw.astype(bool).reshape(shape)
        signed = alg in (PKG_INT, PKG_QINT) or (alg == INTEGER and struct.unpack_from("<I", header["params"])[0] != 0)
        values = _signed(raw, bits) if signed else raw
        return values.astype(_int_dtype(bits, signed)).reshape(shape)
    if alg == LINEAR:
        lo, hi = struct.unpack_from("<ff", header["params"])
        r = float((1 << bits) - 1)
        return (raw.astype(np.float64) / r * (hi - lo) + lo).astype(np.float32).reshape(shape)
    if alg == LOGARITHMIC:
        return _decode_log(raw, bits, header["params"], path).reshape(shape)
    _fail(path, f"unknown quantization algorithm code 0x{alg:02x}")


def _decode_log(raw, bits, params, path):
    """§5.2 logarithmic decoding; min == -max marks signed data (sign bit = the top bit)."""
    lo, hi = struct.unpack_from("<ff", params)
    if hi <= 0:
        _fail(path, f"logarithmic quantization needs max > 0, got {hi}")
    signed = lo != 0
    if signed and lo != -hi:
        _fail(path, f"logarithmic quantization needs min = 0 or -max, got min {lo}, max {hi}")
    b = bits - 1 if signed else bits
    if b < 1:
        _fail(path, "logarithmic quantization needs at least one magnitude bit")
    r = (1 << b) - 1
    m = int(np.ceil(np.log2(hi)))
    q = raw & np.uint64(r) if signed else raw
    mag = np.exp2(q.astype(np.float64) + (m - r))
    if signed:
        negative = (raw >> np.uint64(b)) & np.uint64(1)
        mag = np.where(negative.astype(bool), -mag, mag)
    return mag.astype(np.float32)


def data_size(header, path, expected_shape=None, max_items=MAX_ITEMS):
    """Bytes of data a header announces, after checking it against the expected shape and limits."""
    shape = header["shape"]
    if expected_shape is not None and list(expected_shape) != shape:
        _fail(path, f"tensor shape {shape} does not match {list(expected_shape)} declared in the graph")
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if count > max_items:
        _fail(path, f"declares {count} items, more than the {max_items} supported")
    needed = (count * header["bits"] + 7) // 8
    if header["data_length"] != needed:
        _fail(path, f"header data length {header['data_length']} does not match {count} items of "
                    f"{header['bits']} bits ({needed} bytes)")
    return needed


def decode_blob(blob, path, expected_shape=None):
    """Decode a whole .dat file's bytes (header + data), all checks first."""
    header = parse_header(blob[:HEADER], path)
    needed = data_size(header, path, expected_shape)
    if len(blob) < HEADER + needed:
        _fail(path, f"truncated data: {len(blob) - HEADER} of {needed} bytes")
    return decode(header, blob[HEADER:HEADER + needed], path)


def read_tensor(path, expected_shape=None):
    """Read and decode one .dat file; shapes, lengths and sizes are checked before reading the data."""
    try:
        with open(path, "rb") as f:
            head = f.read(HEADER)
            needed = data_size(parse_header(head, path), path, expected_shape)
            return decode_blob(head + f.read(needed), path, expected_shape)
    except OSError as e:
        _fail(path, f"cannot read ({e.strerror})")
