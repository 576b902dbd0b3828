"""Helpers shared by the lowering rules (nn -> TOSA / linalg / tensor / arith / math).

Every helper builds at the current insertion point and location (the lowering driver sets both
to the `nn` op being replaced), and works on *lowered* values: tensors whose integer element
types are signless. Signedness lives in the WebNN dtype names of the `TensorSpec`s the driver
hands each rule (`n.in_specs`, `n.out_specs`).
"""
import math

import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import _tensor_ops_gen as tensor_ops
from iree.compiler.dialects import arith, linalg, tensor, tosa
from iree.compiler.dialects import math as mathd

from estuary.base import dims, dtypes
from estuary.base.errors import VerificationError
from estuary.dialects.core import TensorSpec, dims_encoding, mlir_shape, shape_of_type
from estuary.dialects.graph import constant_attr
from estuary.passes.lowering import dynamic


def storage(spec):
    """Lowered tensor type of a spec (signless integers; dynamic dimensions keep their #nn.dims
    encoding until the lowering ends, so helpers can read the expressions back)."""
    return tensor_type(spec.shape, dtypes.storage_type(spec.dtype))


def tensor_type(shape, element):
    """A ranked tensor type; dynamic dimensions (Dims) as `?` with their #nn.dims encoding."""
    if dims.is_static(shape):
        return ir.RankedTensorType.get([int(d) for d in shape], element)
    return ir.RankedTensorType.get(mlir_shape(shape), element, dims_encoding(list(shape)))


def shape_of(value):
    """The shape of a lowered value: ints, and Dims where it is dynamic."""
    return shape_of_type(ir.RankedTensorType(value.type))


def empty(shape, element):
    """tensor.empty of `shape` (dynamic sizes computed from the function's arguments)."""
    if dims.is_static(shape):
        return tensor.empty([int(d) for d in shape], element)
    return tensor_ops.empty(tensor_type(shape, element), dynamic.operands(shape)[1])


def element_of(value):
    return ir.RankedTensorType(value.type).element_type


def const(array, dtype):
    """A tosa.const of `array` (any shape, scalar too) as WebNN dtype `dtype`."""
    array = np.asarray(array, dtype=dtypes.to_numpy(dtype))
    return tosa.const(constant_attr(array, TensorSpec(array.shape, dtype), signless=True))


def scalar_like(value, spec, rank=None):
    """A constant broadcastable against a tensor of `spec` (shape [1]*rank)."""
    rank = spec.rank if rank is None else rank
    return const(np.full([1] * rank, value), spec.dtype)


def zero_point(dtype, value=0):
    """The rank-1 zero-point operand TOSA conv/matmul/pool/negate ops take."""
    return const(np.array([value]), dtype)


def shape_value(values):
    """A !tosa.shape<N> constant (reshape sizes, slice starts, pad amounts, tile multiples)."""
    values = [int(v) for v in values]
    t = ir.Type.parse(f"!tosa.shape<{len(values)}>")
    attr = ir.DenseElementsAttr.get(np.array(values, dtype=np.int64), type=tensor_type([len(values)], ir.IndexType.get()))
    return tosa.const_shape(t, attr)


def reshape(value, shape):
    shape = [dims.value(s) for s in shape]
    if shape_of(value) == shape:
        return value
    if dims.is_static(shape) and dims.is_static(shape_of(value)):
        return tosa.reshape(value, shape_value(shape), results=[tensor_type(shape, element_of(value))])
    return dynamic.reshape(value, shape_of(value), shape, tensor_type(shape, element_of(value)))


def transpose(value, perm):
    perm = [int(p) for p in perm]
    if perm == list(range(len(perm))):
        return value
    shape = shape_of(value)
    return tosa.transpose(tensor_type([shape[p] for p in perm], element_of(value)), value, perm)


def slice_(value, start, size):
    if list(start) == [0] * len(start) and list(size) == shape_of(value):
        return value
    if dims.is_static(list(start) + list(size)) and dims.is_static(shape_of(value)):
        return tosa.slice(tensor_type(size, element_of(value)), value, shape_value(start), shape_value(size))
    return strided_slice(value, start, size, [1] * len(size))


def strided_slice(value, offsets, sizes, strides):
    """tensor.extract_slice with strides (TOSA's slice has none); IREE folds it into the
    consumer's dispatch as a strided view of the source. Offsets and sizes may be dynamic."""
    t = tensor_type(sizes, element_of(value))
    if dims.is_static(list(offsets) + list(sizes)):
        return tensor.ExtractSliceOp(t, value, [], [], [], offsets, sizes, strides).result
    off_static, off_values = dynamic.operands(offsets)
    size_static, size_values = dynamic.operands(sizes)
    return tensor.ExtractSliceOp(t, value, off_values, size_values, [], off_static, size_static, strides).result


def concat(values, axis):
    if len(values) == 1:
        return values[0]
    shape = shape_of(values[0])
    total = 0
    for v in values:
        total = total + shape_of(v)[axis]
    shape[axis] = total
    return tosa.concat(values, axis, results=[tensor_type(shape, element_of(values[0]))])


def pad_constant(value, pads, fill, dtype):
    """Pad with a constant; `pads` is [(before, after)] per dimension."""
    if all(b == 0 and a == 0 for b, a in pads):
        return value
    shape = [s + b + a for s, (b, a) in zip(shape_of(value), pads)]
    flat = [p for pair in pads for p in pair]
    return tosa.pad(tensor_type(shape, element_of(value)), value, shape_value(flat), const(np.array([fill]), dtype))


def expand_rank(value, rank):
    """Prepend size-1 dimensions up to `rank` (TOSA elementwise ops want equal ranks)."""
    shape = shape_of(value)
    return reshape(value, [1] * (rank - len(shape)) + shape) if len(shape) < rank else value


def broadcast_to(value, shape):
    """Materialize numpy-style broadcasting of `value` to `shape` (tosa.tile)."""
    value = expand_rank(value, len(shape))
    src = shape_of(value)
    if src == list(shape):
        return value
    if not dims.is_static(shape):  # a copy with the broadcast in its indexing map
        return elementwise(shape, element_of(value), [value], lambda x: x)
    multiples = [d // s if s == 1 else 1 for s, d in zip(src, shape)]
    return tosa.tile(tensor_type(shape, element_of(value)), value, shape_value(multiples))


def cast(value, src_dtype, dst_dtype):
    """Convert between WebNN dtypes with TOSA semantics for signed types (see cast rule)."""
    if src_dtype == dst_dtype:
        return value
    out = tensor_type(shape_of(value), dtypes.storage_type(dst_dtype))
    return tosa.cast(out, value)


def mul(a, b, out_type):
    """tosa.mul (its third operand is the integer shift, zero here)."""
    return tosa.mul(out_type, a, b, const(np.array([0]), "int8"))


def float_attr(element, value):
    return ir.FloatAttr.get(element, float(value))


def clamp(value, lo, hi):
    """tosa.clamp with bounds of the value's element type."""
    element = element_of(value)
    if isinstance(element, ir.IntegerType):
        lo_attr = ir.IntegerAttr.get(element, int(lo))
        hi_attr = ir.IntegerAttr.get(element, int(hi))
    else:
        lo_attr, hi_attr = float_attr(element, lo), float_attr(element, hi)
    return tosa.clamp(value.type, value, lo_attr, hi_attr)


# ---------------------------------------------------------------- linalg.generic elementwise

PARALLEL = "#linalg.iterator_type<parallel>"
REDUCTION = "#linalg.iterator_type<reduction>"


def _broadcast_map(in_shape, out_shape):
    rank = len(out_shape)
    offset = rank - len(in_shape)
    exprs = []
    for i, s in enumerate(in_shape):
        if s == 1 and out_shape[offset + i] != 1:
            exprs.append(ir.AffineConstantExpr.get(0))
        else:
            exprs.append(ir.AffineDimExpr.get(offset + i))
    return ir.AffineMap.get(rank, 0, exprs)


def elementwise(out_shape, out_element, inputs, body):
    """A linalg.generic over `out_shape` with numpy broadcasting of `inputs`.

    `body(*scalars)` builds the scalar computation (arith/math ops) and returns one scalar.
    Use it where TOSA has no op or no unsigned variant.
    """
    out_shape = [dims.value(s) for s in out_shape]
    out_t = tensor_type(out_shape, out_element)
    init = empty(out_shape, out_element)
    maps = [_broadcast_map(shape_of(v), out_shape) for v in inputs]
    maps.append(ir.AffineMap.get_identity(len(out_shape)))
    iters = [ir.Attribute.parse(PARALLEL)] * len(out_shape)
    op = linalg.GenericOp([out_t], list(inputs), [init],
                          ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]),
                          ir.ArrayAttr.get(iters))
    block = op.regions[0].blocks.append(*[element_of(v) for v in inputs], out_element)
    with ir.InsertionPoint(block):
        linalg.YieldOp([body(*block.arguments[:len(inputs)])])
    return op.result


def check_lowering(cond, message):
    """VerificationError (reported by the lowering driver with the op's name) unless `cond`."""
    if not cond:
        raise VerificationError(message)


def integer_dim(d, element):
    """The dimension `d` (an int or a Dim) as an integer scalar of type `element`, computed from
    the function's arguments at the current insertion point."""
    return arith.index_cast(element, dynamic.as_value(dynamic.sizes([d])[0]))


def index_to_float(d, element):
    """The dimension `d` (an int or a Dim) as a float scalar of type `element`, computed from the
    function's arguments at the current insertion point."""
    return arith.sitofp(element, integer_dim(d, ir.IntegerType.get_signless(64)))


def scalar_const(element, value):
    """An arith.constant scalar of `element` type (inside generic bodies)."""
    if isinstance(element, ir.IntegerType):
        width = ir.IntegerType(element).width
        value = int(value) & ((1 << width) - 1)  # two's complement bits of the value
        if value >= 1 << (width - 1):
            value -= 1 << width
        return arith.constant(element, value)
    return arith.constant(element, float(value))


_VALUE_PRESERVING = ("tosa.transpose", "tosa.reshape", "linalg.transpose", "tensor.collapse_shape",
                     "tensor.expand_shape")


def _float_constant(value):
    """The number a scalar arith.constant holds, else None."""
    op = value.owner
    if isinstance(op, ir.Block) or op.name != "arith.constant":
        return None
    attr = op.attributes["value"]
    return float(ir.FloatAttr(attr).value) if isinstance(attr, ir.FloatAttr) else None


def nonnegative(value):
    """Whether every element of the float tensor `value` is >= +0 or NaN, judged from the op that
    made it: an element-wise generic yielding maximumf(x, c) with c >= 0, optionally clamped from
    above (relu and clamps, as activation.py and elementwise.py lower them), seen through
    reshapes and transposes. False when unsure."""
    op = value.owner
    while not isinstance(op, ir.Block) and op.name in _VALUE_PRESERVING:
        op = op.operands[0].owner
    if isinstance(op, ir.Block) or op.name != "linalg.generic" or len(op.results) != 1:
        return False
    body = op.regions[0].blocks[0]
    r = list(body.operations)[-1].operands[0]
    if not isinstance(r.owner, ir.Block) and r.owner.name == "arith.minimumf":
        if not any(_positive(_float_constant(v)) for v in r.owner.operands):
            return False
        r = r.owner.operands[0]
    if isinstance(r.owner, ir.Block) or r.owner.name != "arith.maximumf":
        return False
    return any(_positive(_float_constant(v)) for v in r.owner.operands)


def _positive(bound):
    """A bound >= +0 (not -0, whose maximum with -0 stays -0, nor NaN)."""
    return bound is not None and bound >= 0 and math.copysign(1.0, bound) > 0


def enclosing(operation, name):
    """`operation` itself or its nearest ancestor op named `name`, else None."""
    while operation is not None and operation.name != name:
        operation = operation.parent
    return operation


def enclosing_module(op):
    """The builtin.module holding `op` (an op view or operation), else None."""
    return enclosing(op.operation.parent, "builtin.module")


def log1p(x, gpu):
    """log(1 + x) of a float scalar inside a generic body: math.log1p, except on GPU targets (`gpu`), where
    IREE's SPIR-V code computes log(1 + x) as written (softplus(-12) came out 1 % off on Vulkan),
    and where the driver may fold (1 + x) - 1 back to x, so the usual log(u) * x / (u - 1) fix
    does nothing (measured on lavapipe). There: for |x| < 1/4, 2 atanh(s) = 2 (s + s^3/3 + ...)
    with s = x / (2 + x), |s| < 1/7, to s^13 (truncation below 1e-12 relative); else log(1 + x)."""
    if not gpu:
        return mathd.log1p(x)
    s = arith.divf(x, arith.addf(x, scalar_const(x.type, 2.0)))
    s2 = arith.mulf(s, s)
    series = scalar_const(x.type, 1.0 / 13)
    for k in (11, 9, 7, 5, 3, 1):
        series = arith.addf(scalar_const(x.type, 1.0 / k), arith.mulf(s2, series))
    small = arith.cmpf(arith.CmpFPredicate.OLT, mathd.absf(x), scalar_const(x.type, 0.25))
    near = arith.mulf(arith.addf(s, s), series)
    return arith.select(small, near, mathd.log(arith.addf(x, scalar_const(x.type, 1.0))))


def num_elements(shape):
    return math.prod(shape)


def tile_axis(value, axis, times):
    """Repeat `value` `times` times along `axis` (tosa.tile)."""
    if times == 1:
        return value
    shape = shape_of(value)
    multiples = [1] * len(shape)
    multiples[axis] = times
    out = list(shape)
    out[axis] *= times
    return tosa.tile(tensor_type(out, element_of(value)), value, shape_value(multiples))


def _merged(shape, axes):
    """`shape` with each run of adjacent reduced axes merged into one dim, and those dims."""
    merged, reduced = [], []
    for i, d in enumerate(shape):
        if i in axes and i - 1 in axes:
            merged[-1] *= d
            continue
        if i in axes:
            reduced.append(len(merged))
        merged.append(d)
    return merged, reduced


def reduce_kept(x, axes, build):
    """`build` (tosa.reduce_sum/reduce_product) over `axes`, reduced dims kept as size 1."""
    shape = shape_of(x)
    merged, reduced = _merged(shape, axes)
    y = reshape(x, merged)
    for a in reduced:
        out = shape_of(y)
        out[a] = 1
        y = build(y, a, results=[tensor_type(out, element_of(y))])
    return reshape(y, [1 if i in axes else d for i, d in enumerate(shape)])


def reduce_generic(x, axes, init, combine, pre=None):
    """linalg.generic folding `combine(acc, pre(x))` over `axes` (the result drops those dims)."""
    shape = shape_of(x)
    rank = len(shape)
    el = element_of(x)
    kept = [i for i in range(rank) if i not in axes]
    out_shape = [shape[i] for i in kept]
    filled = linalg.fill(scalar_const(el, init), outs=[empty(out_shape, el)])
    maps = [ir.AffineMap.get_identity(rank), ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(i) for i in kept])]
    iters = [ir.Attribute.parse(REDUCTION if i in axes else PARALLEL) for i in range(rank)]
    op = linalg.GenericOp([tensor_type(out_shape, el)], [x], [filled],
                          ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]), ir.ArrayAttr.get(iters))
    block = op.regions[0].blocks.append(el, el)
    with ir.InsertionPoint(block):
        v = block.arguments[0] if pre is None else pre(block.arguments[0])
        linalg.YieldOp([combine(block.arguments[1], v)])
    return op.result
