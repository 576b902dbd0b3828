"""Lowering rules: Table lookups and hashing: LSH projection.

lsh_projection: one linalg.generic over (hash i, bit j, row r) whose body computes
Fingerprint64(seed ++ row r) with i64 arith (the key length is static, so the hash's branches and
loop unroll at compile time; row elements are read with tensor.extract and the key's little-endian
64-bit words assembled from them) and accumulates weight[r] * double(signed hash) into a
[num_hash, num_bits] f64 score; a second generic turns the scores into bits / sparse codes.
IREE demotes f64 to f32 unless told otherwise, so the rule returns the side result `keep_f64` and
the compiler then passes --iree-input-demote-f64-to-f32=false (llvm-cpu; other targets keep f32 sums,
whose sign can differ from the reference's only when the weighted sum nearly cancels).
"""
import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import _linalg_ops_gen as linalg_ops
from iree.compiler.dialects import arith, linalg, tensor

from estuary.dialects.ops.lookup import fingerprint64
from estuary.passes.lowering import common as C
from estuary.passes.lowering import lowering


def _i(width):
    return ir.IntegerType.get_signless(width)


def _index(d):
    return linalg_ops.IndexOp(d).result


class _ArithBackend:
    """The uint64 operations of `fingerprint64` as i64 arith ops; the key is the seed word (4 bytes)
    followed by the row's elements (`width` bytes each, extracted on first use)."""

    def __init__(self, seed_bits, row_tensor, row_index, width):
        self.i64 = _i(64)
        self.units = [(0, 4, arith.extui(self.i64, seed_bits))]
        self.row, self.r, self.width = row_tensor, row_index, width
        self.elements = {}

    def k(self, v):
        return C.scalar_const(self.i64, v)

    def add(self, a, b):
        return arith.addi(a, b)

    def mul(self, a, b):
        return arith.muli(a, b)

    def xor(self, a, b):
        return arith.xori(a, b)

    def shr(self, a, n):
        return arith.shrui(a, self.k(n))

    def shl(self, a, n):
        return arith.shli(a, self.k(n))

    def or_(self, a, b):
        return arith.ori(a, b)

    def and_(self, a, b):
        return arith.andi(a, b)

    def _element(self, k):
        if k not in self.elements:
            col = arith.constant(ir.IndexType.get(), k)
            v = tensor.extract(self.row, [self.r, col])
            if not isinstance(v.type, ir.IntegerType):
                v = arith.bitcast(_i(self.width * 8), v)
            self.elements[k] = arith.extui(self.i64, v)
        return self.elements[k]

    def _unit(self, offset):
        """(start, width, i64 value) of the key unit holding byte `offset`."""
        if offset < 4:
            return self.units[0]
        k = (offset - 4) // self.width
        return 4 + k * self.width, self.width, self._element(k)

    def fetch(self, p, n):
        out = None
        pos = p
        while pos < p + n:
            start, width, value = self._unit(pos)
            end = min(start + width, p + n)
            if pos != start or end != start + width:  # a part of the unit: shift down and mask
                value = self.shr(value, 8 * (pos - start)) if pos != start else value
                value = self.and_(value, self.k((1 << (8 * (end - pos))) - 1))
            if pos != p:
                value = self.shl(value, 8 * (pos - p))
            out = value if out is None else self.or_(out, value)
            pos = end
        return out


def _map(rank, dims):
    return ir.AffineMapAttr.get(ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(d) for d in dims]))


@lowering("lsh_projection")
def lower_lsh_projection(n):
    n.run.results["keep_f64"] = True  # the score is summed in double, as the reference does
    hashes, x, weight = n.inputs
    hspec, xspec, _ = n.in_specs
    num_hash, num_bits = hspec.shape
    batch = xspec.shape[0]
    row_len = xspec.size // batch
    x = C.reshape(x, [batch, row_len])
    width = C.element_of(x).width // 8 if isinstance(C.element_of(x), ir.IntegerType) \
        else ir.FloatType(C.element_of(x)).width // 8
    f64, f32, i32 = ir.F64Type.get(), ir.F32Type.get(), _i(32)
    if weight is None:  # ones: exact, and the generic needs an operand indexed by the row r
        weight = C.const(np.ones([batch], np.float32), "float32")
    inputs = [hashes, weight]
    maps = [_map(3, [0, 1]), _map(3, [2]), _map(3, [0, 1])]
    zero = arith.constant(f64, 0.0)
    init = linalg.fill(zero, outs=[tensor.empty([num_hash, num_bits], f64)])
    op = linalg.GenericOp([C.tensor_type([num_hash, num_bits], f64)], inputs, [init], ir.ArrayAttr.get(maps),
                          ir.ArrayAttr.get([ir.Attribute.parse(C.PARALLEL)] * 2 + [ir.Attribute.parse(C.REDUCTION)]))
    block = op.regions[0].blocks.append(*([f32] * len(inputs)), f64)
    with ir.InsertionPoint(block):
        args = list(block.arguments)
        backend = _ArithBackend(arith.bitcast(i32, args[0]), x, _index(2), width)
        value = arith.sitofp(f64, fingerprint64(backend, 4 + row_len * width))
        value = arith.mulf(arith.extf(f64, args[1]), value)
        linalg.YieldOp([arith.addf(args[-1], value)])
    scores = op.result

    def bit(score):
        positive = arith.cmpf(arith.CmpFPredicate.OGT, score, arith.constant(f64, 0.0))
        return arith.extui(i32, positive)

    if n.attrs["type"] == "dense":
        bits = C.elementwise([num_hash, num_bits], i32, [scores], bit)
        return C.reshape(bits, [num_hash * num_bits])
    # sparse: sum of bit_j << (num_bits - 1 - j): a commutative reduction (wrapping at 32 bits)
    init = linalg.fill(arith.constant(i32, 0), outs=[tensor.empty([num_hash], i32)])
    op = linalg.GenericOp([C.tensor_type([num_hash], i32)], [scores], [init],
                          ir.ArrayAttr.get([_map(2, [0, 1]), _map(2, [0])]),
                          ir.ArrayAttr.get([ir.Attribute.parse(C.PARALLEL), ir.Attribute.parse(C.REDUCTION)]))
    block = op.regions[0].blocks.append(f64, i32)
    with ir.InsertionPoint(block):
        j = arith.index_cast(i32, _index(1))
        shift = arith.subi(arith.constant(i32, num_bits - 1), j)
        linalg.YieldOp([arith.addi(block.arguments[1], arith.shli(bit(block.arguments[0]), shift))])
    return op.result
