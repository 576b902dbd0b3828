"""NNEF .dat decoding (§5.2): files are written here by independent encoders."""
import io
import struct

import numpy as np
import pytest

from estuary.base.errors import ModelImportError
from estuary.importers.nnef.tensor_file import read_tensor


def header(shape, bits, code, params=b"", data_length=None, magic=b"N\xef", version=(1, 0)):
    count = int(np.prod(shape)) if shape else 1
    length = (count * bits + 7) // 8 if data_length is None else data_length
    h = magic + bytes(version) + struct.pack("<II", length, len(shape))
    h += struct.pack("<8I", *(list(shape) + [0] * (8 - len(shape))))
    h += struct.pack("<II", bits, code) + params.ljust(32, b"\0")
    return h.ljust(128, b"\0")


def pack_msb_first(values, bits):
    """Independent bit-stream packer: each value's bits, most significant first, back to back."""
    stream = "".join(format(int(v), f"0{bits}b") for v in values)
    stream += "0" * (-len(stream) % 8)
    return bytes(int(stream[i:i + 8], 2) for i in range(0, len(stream), 8))


def write(tmp_path, blob, name="t.dat"):
    p = tmp_path / name
    p.write_bytes(blob)
    return str(p)


@pytest.mark.parametrize("dtype,bits", [(np.float16, 16), (np.float32, 32), (np.float64, 64)])
def test_float(tmp_path, dtype, bits):
    x = np.linspace(-3, 3, 24).astype(dtype).reshape(2, 3, 4)
    p = write(tmp_path, header([2, 3, 4], bits, 0x00) + x.astype(x.dtype.newbyteorder("<")).tobytes())
    got = read_tensor(p, [2, 3, 4])
    assert got.dtype == dtype and np.array_equal(got, x)


@pytest.mark.parametrize("bits,signed", [(8, True), (8, False), (16, True), (32, False), (64, True),
                                         (1, False), (3, False), (4, True), (12, True), (33, False)])
def test_integers_any_width(tmp_path, bits, signed):
    rng = np.random.default_rng(bits)
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    values = [int(v) for v in rng.integers(lo, hi, 10, endpoint=True, dtype=np.int64)]
    if bits % 8 == 0:
        fmt = {8: "b", 16: "h", 32: "i", 64: "q"}[bits]
        data = struct.pack("<" + str(len(values)) + (fmt if signed else fmt.upper()), *values)
    else:
        data = pack_msb_first([v & ((1 << bits) - 1) for v in values], bits)
    p = write(tmp_path, header([10], bits, 0x01, struct.pack("<I", int(signed))) + data)
    got = read_tensor(p)
    assert got.tolist() == values


def test_linear_quantized(tmp_path):
    q = [0, 1, 7, 255, 128]
    lo, hi = -2.0, 2.5
    p = write(tmp_path, header([5], 8, 0x10, struct.pack("<ff", lo, hi)) + bytes(q))
    expected = [v / 255 * (hi - lo) + lo for v in q]  # §5.2 decoding formula
    np.testing.assert_allclose(read_tensor(p), expected, rtol=1e-6)


def test_linear_quantized_4bit(tmp_path):
    q = [0, 15, 3, 9, 1]
    p = write(tmp_path, header([5], 4, 0x10, struct.pack("<ff", 0.0, 1.5)) + pack_msb_first(q, 4))
    np.testing.assert_allclose(read_tensor(p), [v / 15 * 1.5 for v in q], rtol=1e-6)


def test_logarithmic_quantized_unsigned_and_signed(tmp_path):
    # unsigned: b = 4, r = 15, max = 8 -> m = 3, x = 2^(q + m - r)
    q = [15, 14, 0, 10]
    p = write(tmp_path, header([4], 4, 0x11, struct.pack("<ff", 0.0, 8.0)) + pack_msb_first(q, 4))
    np.testing.assert_allclose(read_tensor(p), [2.0 ** (v + 3 - 15) for v in q], rtol=1e-6)
    # signed: 5 bits = sign + 4 magnitude bits, min = -max
    codes = [(1 << 4) | 15, 15, (1 << 4) | 12]
    p = write(tmp_path, header([3], 5, 0x11, struct.pack("<ff", -8.0, 8.0)) + pack_msb_first(codes, 5), "s.dat")
    np.testing.assert_allclose(read_tensor(p), [-8.0, 8.0, -(2.0 ** (12 + 3 - 15))], rtol=1e-6)


def test_files_from_the_khronos_package(tmp_path):
    """The `nnef` package (official tools) writes its own item-type codes; they load too."""
    nnef = pytest.importorskip("nnef")
    for i, arr in enumerate([np.arange(12, dtype=np.float32).reshape(3, 4), np.array([-5, 7, 0], np.int32),
                             np.array([True, False, True, True, False, False, True, False, True])]):
        p = tmp_path / f"k{i}.dat"
        with open(p, "wb") as f:
            nnef.write_tensor(f, arr)
        got = read_tensor(str(p), list(arr.shape))
        assert np.array_equal(got, arr) and got.dtype == arr.dtype


@pytest.mark.parametrize("blob,message", [
    (header([2], 32, 0) + b"\0" * 4, "truncated data"),
    (header([2], 32, 0)[:100], "truncated header"),
    (header([2], 32, 0, magic=b"XX") + b"\0" * 8, "bad magic"),
    (header([2], 32, 0, version=(2, 0)) + b"\0" * 8, "unsupported tensor file version"),
    (header([2], 32, 0, data_length=4) + b"\0" * 8, "header data length 4 does not match"),
    (header([2], 32, 0x20) + b"\0" * 8, "unknown quantization algorithm"),
    (header([2], 12, 0) + b"\0" * 3, "float data needs 16, 32 or 64 bits"),
    (header([1 << 20, 1 << 20], 32, 0, data_length=0), "more than"),
])
def test_malformed(tmp_path, blob, message):
    with pytest.raises(ModelImportError, match=message):
        read_tensor(write(tmp_path, blob))


def test_shape_mismatch_with_graph(tmp_path):
    p = write(tmp_path, header([2, 3], 32, 0) + b"\0" * 24)
    with pytest.raises(ModelImportError, match=r"\[2, 3\] does not match \[3, 2\]"):
        read_tensor(p, [3, 2])
