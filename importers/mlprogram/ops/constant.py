"""MIL constants and compressed weights, all expanded in numpy at import: const, constexpr_cast,
constexpr_affine_dequantize, constexpr_lut_to_dense (iOS16 packed and iOS18 block-wise / vector
palettes), constexpr_sparse_to_dense (iOS16 packed bit mask and iOS18 uint1 mask),
constexpr_blockwise_shift_scale, constexpr_lut_to_sparse, constexpr_sparse_blockwise_shift_scale.

The results are float arrays that become ordinary nn constants where an op uses them, except
8-bit-or-narrower quantized and palettized weights of matmul-like ops, which stay compressed in
the artefact (compressed.py).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from estuary.importers.mlprogram.ops import OPS, compressed
from estuary.importers.mlprogram.values import DTYPE_NAMES, numpy_dtype


def _attr_or_input(c: Any, op: Any, key: str) -> Any:
    """A const's value lives in its `val` attribute (older writers: an input)."""
    from estuary.importers.mlprogram import values

    if key in op.proto.attributes:
        return values.immediate(op.proto.attributes[key], c.pb, c.read_blob, c.where())
    return c.val(op, key)


@OPS.op("const")
def convert_const(c: Any, op: Any) -> Any:
    return _attr_or_input(c, op, "val")


@OPS.op("constexpr_cast", since=16)
def convert_constexpr_cast(c: Any, op: Any) -> Any:
    src = np.asarray(c.val(op, "source_val"))
    dtype = str(c.val(op, "output_dtype"))
    c.check(dtype in DTYPE_NAMES, f"unknown output_dtype {dtype!r}")
    return src.astype(numpy_dtype(DTYPE_NAMES[dtype]))


def _along(param: np.ndarray, axis: int, rank: int) -> np.ndarray:
    """A scalar or 1-D per-channel parameter shaped to broadcast along `axis`."""
    p = np.asarray(param)
    if p.ndim == 0 or p.size == 1:
        return p.reshape(())
    shape = [1] * rank
    shape[axis] = p.size
    return p.reshape(shape)


@OPS.op("constexpr_affine_dequantize", since=16)
def convert_affine_dequantize(c: Any, op: Any) -> Any:
    """(quantized_data - zero_point) * scale, per tensor or per channel along `axis`."""
    q = np.asarray(c.val(op, "quantized_data"))
    zp, scale = np.asarray(c.val(op, "zero_point")), np.asarray(c.val(op, "scale"))
    axis = int(c.scalar(op, "axis"))
    c.check(-q.ndim <= axis < q.ndim, f"axis {axis} is out of range for rank {q.ndim}")
    axis %= q.ndim
    for name, p in (("zero_point", zp), ("scale", scale)):
        c.check(p.size == 1 or (p.ndim == 1 and p.size == q.shape[axis]),
                f"{name} has {p.size} values; expected 1 or {q.shape[axis]} (axis {axis})")
    if q.dtype in compressed.NARROW and compressed.feeds_weights_only(c, op):
        return compressed.shift_scale(c, q, compressed.per_axis(scale, axis, q.ndim, q.shape[axis]),
                                      compressed.per_axis(zp, axis, q.ndim, q.shape[axis]))
    out = (q.astype(np.float32) - _along(zp, axis, q.ndim).astype(np.float32)) * _along(scale, axis, q.ndim)
    return out.astype(scale.dtype)


def _unpack(packed: np.ndarray, nbits: int, count: int) -> np.ndarray:
    flat = np.unpackbits(np.asarray(packed, dtype=np.uint8), bitorder="little")
    if flat.size < count * nbits:
        raise ValueError(f"the packed data holds {flat.size} bits, fewer than {count} x {nbits}")
    bits = flat[: count * nbits].reshape(count, nbits).astype(np.int64)
    return np.asarray((bits << np.arange(nbits)).sum(axis=1))


def _blocks(c: Any, data_shape: tuple[int, ...], param_shape: tuple[int, ...], what: str) -> list[int]:
    c.check(len(param_shape) == len(data_shape), f"{what} has rank {len(param_shape)}, the data {len(data_shape)}")
    for d, p in zip(data_shape, param_shape):
        c.check(p > 0 and d % p == 0, f"{what} shape {list(param_shape)} does not divide {list(data_shape)}")
    return [d // p for d, p in zip(data_shape, param_shape)]


def _expand_blocks(p: np.ndarray, blocks: list[int]) -> np.ndarray:
    for axis, b in enumerate(blocks):
        if b > 1:
            p = np.repeat(p, b, axis=axis)
    return p


def lut_dense(c: Any, indices: np.ndarray, lut: np.ndarray, vector_axis: Any) -> np.ndarray:
    """iOS18 palettes: lut [*G, PALETTES, V] over blocks of `indices`; V > 1 fills V values
    along `vector_axis`."""
    rank = indices.ndim
    c.check(lut.ndim == rank + 2, f"lut has rank {lut.ndim}; expected {rank + 2} for indices of rank {rank}")
    blocks = _blocks(c, indices.shape, lut.shape[:rank], "lut")
    c.check(int(indices.max(initial=0)) < lut.shape[-2], "an index is past the end of the palette")
    grids = np.meshgrid(*[np.arange(n) // b for n, b in zip(indices.shape, blocks)], indexing="ij")
    vals = lut[tuple(grids) + (indices.astype(np.int64),)]  # indices.shape + [V]
    v = lut.shape[-1]
    if v == 1:
        return vals[..., 0]
    c.check(vector_axis is not None, "vector palettes (VECTOR_SIZE > 1) need vector_axis")
    axis = int(vector_axis) % rank
    vals = np.moveaxis(vals, -1, axis + 1)
    shape = list(indices.shape)
    shape[axis] *= v
    return vals.reshape(shape)


@OPS.op("constexpr_lut_to_dense", since=16)
def convert_lut_to_dense(c: Any, op: Any) -> Any:
    indices = np.asarray(c.val(op, "indices"))
    lut = np.asarray(c.val(op, "lut"))
    if c.opset < 18:  # iOS16: packed uint8 indices, a 1-D lut and the output shape
        shape = c.ints(op, "shape")
        nbits = int(np.log2(lut.size))
        c.check(lut.ndim == 1 and lut.size == 1 << nbits and nbits in (1, 2, 4, 6, 8),
                f"lut must hold 2, 4, 16, 64 or 256 values, has {lut.size}")
        idx = _unpack(indices, nbits, int(np.prod(shape)))
        if nbits <= 8 and compressed.feeds_weights_only(c, op):
            return compressed.palette(c, idx.reshape(shape), lut.reshape([1] * len(shape) + [lut.size, 1]))
        return lut[idx].reshape(shape)
    if lut.ndim == indices.ndim + 2 and lut.shape[-1] == 1 and lut.shape[-2] <= 256 \
            and compressed.feeds_weights_only(c, op):
        _blocks(c, indices.shape, lut.shape[:indices.ndim], "lut")
        c.check(int(indices.max(initial=0)) < lut.shape[-2], "an index is past the end of the palette")
        kept = compressed.palette(c, indices, lut)
        if kept is not None:
            return kept
    return lut_dense(c, indices, lut, c.scalar(op, "vector_axis", None))


def sparse_dense(c: Any, nonzero: np.ndarray, mask: np.ndarray) -> np.ndarray:
    flat = mask.reshape(-1) != 0
    c.check(int(flat.sum()) == nonzero.size, f"the mask sets {int(flat.sum())} positions for {nonzero.size} values")
    out = np.zeros(mask.shape, dtype=nonzero.dtype).reshape(-1)
    out[flat] = nonzero.reshape(-1)
    return out.reshape(mask.shape)


@OPS.op("constexpr_sparse_to_dense", since=16)
def convert_sparse_to_dense(c: Any, op: Any) -> Any:
    nonzero = np.asarray(c.val(op, "nonzero_data"))
    mask = np.asarray(c.val(op, "mask"))
    if c.opset < 18:  # iOS16: a packed bit mask and the output shape
        shape = c.ints(op, "shape")
        mask = _unpack(mask, 1, int(np.prod(shape))).reshape(shape)
    return sparse_dense(c, nonzero, mask)


def shift_scale(c: Any, data: np.ndarray, scale: np.ndarray, offset: Any) -> np.ndarray:
    """scale * (data - offset), scale and offset repeated over blocks of data."""
    out = data.astype(np.float32)
    if offset is not None:
        off = np.asarray(offset).astype(np.float32)
        out = out - _expand_blocks(off, _blocks(c, data.shape, off.shape, "offset"))
    s = np.asarray(scale)
    out = out * _expand_blocks(s.astype(np.float32), _blocks(c, data.shape, s.shape, "scale"))
    return out.astype(s.dtype)


@OPS.op("constexpr_blockwise_shift_scale", since=18)
def convert_blockwise_shift_scale(c: Any, op: Any) -> Any:
    data, scale, offset = np.asarray(c.val(op, "data")), np.asarray(c.val(op, "scale")), c.val(op, "offset", None)
    if data.dtype in compressed.NARROW and compressed.feeds_weights_only(c, op):
        _blocks(c, data.shape, scale.shape, "scale")
        if offset is not None:
            _blocks(c, data.shape, np.shape(offset), "offset")
        return compressed.shift_scale(c, data, scale, offset)
    return shift_scale(c, data, scale, offset)


@OPS.op("constexpr_lut_to_sparse", since=18)
def convert_lut_to_sparse(c: Any, op: Any) -> Any:
    """(mask, palette values at the mask's set positions)"""
    mask = np.asarray(c.val(op, "indices_mask"))
    indices = sparse_dense(c, np.asarray(c.val(op, "indices_nonzero_data")), mask)
    lut = np.asarray(c.val(op, "lut"))
    axis = c.scalar(op, "vector_axis", None)
    dense = lut_dense(c, indices, lut, axis)
    if lut.shape[-1] > 1:
        mask = np.repeat(mask, lut.shape[-1], axis=int(axis))
    return mask, dense[mask != 0].reshape(-1)


@OPS.op("constexpr_sparse_blockwise_shift_scale", since=18)
def convert_sparse_blockwise_shift_scale(c: Any, op: Any) -> Any:
    mask = np.asarray(c.val(op, "data_mask"))
    data = sparse_dense(c, np.asarray(c.val(op, "nonzero_data")), mask)
    dense = shift_scale(c, data, np.asarray(c.val(op, "scale")), c.val(op, "offset", None))
    return mask, dense[mask != 0].reshape(-1)
