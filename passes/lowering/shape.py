"""Lowering rules: data movement (TOSA reshape/transpose/concat/slice/pad/tile/reverse; gather and
triangular as linalg.generic with index arithmetic)."""
from iree.compiler import ir
from iree.compiler.dialects import _linalg_ops_gen as linalg_ops
from iree.compiler.dialects import arith, linalg, tensor, tosa

from estuary.base import dims
from estuary.dialects.ops.shape import cast_number
from estuary.passes.lowering import common as C
from estuary.passes.lowering import lowering


@lowering("reshape")
def lower_reshape(n):
    return C.reshape(n.inputs[0], n.out.shape)


@lowering("transpose")
def lower_transpose(n):
    perm = n.attrs["permutation"] or list(range(n.in_specs[0].rank))[::-1]
    return C.transpose(n.inputs[0], perm)


@lowering("concat")
def lower_concat(n):
    return C.concat(n.inputs[0], n.attrs["axis"])


@lowering("slice")
def lower_slice(n):
    strides = n.attrs.get("strides")
    if strides and any(k != 1 for k in strides):
        return C.strided_slice(n.inputs[0], n.attrs["starts"], n.out.shape, strides)
    return C.slice_(n.inputs[0], n.attrs["starts"], n.attrs["sizes"])


@lowering("split")
def lower_split(n):
    x, axis = n.inputs[0], n.attrs["axis"]
    shape = C.shape_of(x)
    outs, offset = [], 0
    for size in n.attrs["splits"]:
        start = [0] * len(shape)
        start[axis] = offset
        sizes = list(shape)
        sizes[axis] = size
        outs.append(C.slice_(x, start, sizes))
        offset += size
    return outs


def _slice_axis(x, axis, start, size):
    shape = C.shape_of(x)
    starts = [0] * len(shape)
    starts[axis] = start
    sizes = list(shape)
    sizes[axis] = size
    return C.slice_(x, starts, sizes)


def _reverse(x, axis):
    if C.shape_of(x)[axis] == 1:
        return x
    return tosa.reverse(x.type, x, axis)


def _edge_pad(x, axis, before, after):
    """Repeat the first/last slice of `axis` (tosa.tile)."""
    size = C.shape_of(x)[axis]
    parts = [x]
    if before:
        parts.insert(0, C.tile_axis(_slice_axis(x, axis, 0, 1), axis, before))
    if after:
        parts.append(C.tile_axis(_slice_axis(x, axis, size - 1, 1), axis, after))
    return C.concat(parts, axis)


def _mirror_pad(x, axis, before, after, mode):
    """Reflection/symmetric padding of one axis from reversed slices, in rounds: each round
    mirrors at most what the current tensor holds, and the next round mirrors the grown tensor
    about its new edge, so any amount of padding bounces back and forth as numpy.pad does."""
    skip = 1 if mode == "reflection" else 0
    if C.shape_of(x)[axis] - skip < 1:
        return _edge_pad(x, axis, before, after)  # a single element reflects onto itself
    while before or after:
        size = C.shape_of(x)[axis]
        b, e = min(before, size - skip), min(after, size - skip)
        parts = [x]
        if b:
            parts.insert(0, _reverse(_slice_axis(x, axis, skip, b), axis))
        if e:
            parts.append(_reverse(_slice_axis(x, axis, size - skip - e, e), axis))
        x = C.concat(parts, axis)
        before, after = before - b, after - e
    return x


@lowering("pad")
def lower_pad(n):
    x = n.inputs[0]
    begin, end, mode = n.attrs["beginning_padding"], n.attrs["ending_padding"], n.attrs["mode"]
    if mode == "constant":
        fill = cast_number(n.attrs["value"], n.out.dtype)
        return C.pad_constant(x, list(zip(begin, end)), fill, n.out.dtype)
    for axis, (b, e) in enumerate(zip(begin, end)):
        if b or e:
            x = _edge_pad(x, axis, b, e) if mode == "edge" else _mirror_pad(x, axis, b, e, mode)
    return x


@lowering("expand")
def lower_expand(n):
    return C.broadcast_to(n.inputs[0], n.out.shape)


def _loop_index(dim):
    return linalg_ops.IndexOp(dim).result


def _index(v):
    return arith.index_cast(ir.IndexType.get(), v) if not isinstance(v.type, ir.IndexType) else v


def _int64_to_int32(indices):
    """int64 indices saturated to int32 (same result after the gather's clamp), in an op of their
    own: IREE's 64-bit emulation on Vulkan fails on an int64 constant inlined into a gather."""
    i32 = ir.IntegerType.get_signless(32)

    def narrow(v):
        lo, hi = (C.scalar_const(v.type, b) for b in (-(1 << 31), (1 << 31) - 1))
        return arith.trunci(i32, arith.maxsi(arith.minsi(v, hi), lo))

    return C.elementwise(C.shape_of(indices), i32, [indices], narrow)


@lowering("gather")
def lower_gather(n):
    x, indices = n.inputs
    axis = n.attrs["axis"]
    in_spec, idx_spec = n.in_specs
    out_shape = list(n.out.shape)
    rank_i = idx_spec.rank
    dim = in_spec.shape[axis]
    out_t = C.storage(n.out)
    if idx_spec.dtype == "int64" and n.options.gpu:
        indices = _int64_to_int32(indices)
    init = C.empty(out_shape, out_t.element_type)
    wide = ir.IntegerType.get_signless(64)
    dynamic_dim = C.integer_dim(dim, wide) if isinstance(dim, dims.Dim) else None  # read before the body
    idx_map = ir.AffineMap.get(len(out_shape), 0, [ir.AffineDimExpr.get(axis + k) for k in range(rank_i)])
    maps = [ir.AffineMapAttr.get(idx_map), ir.AffineMapAttr.get(ir.AffineMap.get_identity(len(out_shape)))]
    op = linalg.GenericOp([out_t], [indices], [init], ir.ArrayAttr.get(maps),
                          ir.ArrayAttr.get([ir.Attribute.parse(C.PARALLEL)] * len(out_shape)))
    idx_el = C.element_of(indices)
    block = op.regions[0].blocks.append(idx_el, out_t.element_type)
    with ir.InsertionPoint(block):
        raw = block.arguments[0]
        wide = ir.IntegerType.get_signless(64)
        if idx_spec.dtype == "uint32":
            raw = arith.extui(wide, raw)
        elif idx_el != wide:
            raw = arith.extsi(wide, raw)
        n_dim = C.scalar_const(wide, dim) if dynamic_dim is None else dynamic_dim
        last = C.scalar_const(wide, dim - 1) if dynamic_dim is None else arith.subi(n_dim, C.scalar_const(wide, 1))
        neg = arith.cmpi(arith.CmpIPredicate.slt, raw, C.scalar_const(wide, 0))
        fixed = arith.select(neg, arith.addi(raw, n_dim), raw)
        fixed = arith.maxsi(arith.minsi(fixed, last), C.scalar_const(wide, 0))
        coords = [_loop_index(d) for d in range(axis)] + [_index(fixed)]
        coords += [_loop_index(d + rank_i - 1) for d in range(axis + 1, in_spec.rank)]
        linalg.YieldOp([tensor.extract(x, coords)])
    return op.result


@lowering("triangular")
def lower_triangular(n):
    x = n.inputs[0]
    rank = n.out.rank
    upper, diagonal = n.attrs["upper"], n.attrs["diagonal"]
    element = C.element_of(x)

    def body(v):
        i64 = ir.IntegerType.get_signless(64)
        row = arith.index_cast(i64, _loop_index(rank - 2))
        col = arith.index_cast(i64, _loop_index(rank - 1))
        diff = arith.subi(col, row)
        pred = arith.CmpIPredicate.sge if upper else arith.CmpIPredicate.sle
        keep = arith.cmpi(pred, diff, C.scalar_const(i64, diagonal))
        return arith.select(keep, v, C.scalar_const(element, 0))

    return C.elementwise(n.out.shape, element, [x], body)


@lowering("dims_value")
def lower_dims_value(n):
    """The dimension expressions as a vector: each computed from the function's arguments."""
    element = C.storage(n.out).element_type
    values = [C.integer_dim(v, element) if isinstance(v, dims.Dim) else C.scalar_const(element, v)
              for v in n.attrs["values"]]
    return tensor.from_elements(C.storage(n.out), values)
