"""Lowering rules: Random-number ops with explicit seeds: a linalg.generic with no inputs whose body
hashes the element's row-major counter with the seed keys (i32 arithmetic, wrapping) — the
generator of `dialects/ops/random.py`, step for step."""
import math

from iree.compiler import ir
from iree.compiler.dialects import _linalg_ops_gen as linalg_ops
from iree.compiler.dialects import arith, linalg, tensor
from iree.compiler.dialects import math as mathd

from estuary.dialects.ops.random import seed_words
from estuary.passes.lowering import common as C
from estuary.passes.lowering import lowering


def _i32():
    return ir.IntegerType.get_signless(32)


def _k(value):
    return C.scalar_const(_i32(), value)


def _hash32(x):
    x = arith.xori(x, arith.shrui(x, _k(16)))
    x = arith.muli(x, _k(0x7FEB352D))
    x = arith.xori(x, arith.shrui(x, _k(15)))
    x = arith.muli(x, _k(0x846CA68B))
    return arith.xori(x, arith.shrui(x, _k(16)))


def _bits(seed, counter):
    k1, k2 = seed_words(seed)
    return _hash32(arith.addi(_hash32(arith.xori(counter, _k(k1))), _k(k2)))


def _unit(b, f32):
    """Top 24 bits * 2^-24 in float32 (exact)."""
    return arith.mulf(arith.uitofp(f32, arith.shrui(b, _k(8))), C.scalar_const(f32, 2.0 ** -24))


def _counter(shape):
    """The element's row-major position as i32."""
    lin = None
    stride = 1
    for d in reversed(range(len(shape))):
        term = linalg_ops.IndexOp(d).result
        if stride != 1:
            term = arith.muli(term, arith.constant(ir.IndexType.get(), stride))
        lin = term if lin is None else arith.addi(lin, term)
        stride *= shape[d]
    if lin is None:
        return _k(0)
    return arith.index_cast(_i32(), lin)


def _generate(n, body):
    shape = list(n.out.shape)
    out_t = C.storage(n.out)
    el = out_t.element_type
    init = tensor.empty(shape, el)
    op = linalg.GenericOp([out_t], [], [init],
                          ir.ArrayAttr.get([ir.AffineMapAttr.get(ir.AffineMap.get_identity(len(shape)))]),
                          ir.ArrayAttr.get([ir.Attribute.parse(C.PARALLEL)] * len(shape)))
    block = op.regions[0].blocks.append(el)
    with ir.InsertionPoint(block):
        f32 = ir.F32Type.get()
        v = body(_counter(shape), f32)
        if el != f32:
            v = arith.truncf(el, v)
        linalg.YieldOp([v])
    return op.result


@lowering("random_uniform")
def lower_random_uniform(n):
    a = n.attrs

    def body(counter, f32):
        u = _unit(_bits(a["seed"], counter), f32)
        return arith.addf(C.scalar_const(f32, a["low"]), arith.mulf(u, C.scalar_const(f32, a["high"] - a["low"])))

    return _generate(n, body)


@lowering("random_normal")
def lower_random_normal(n):
    a = n.attrs

    def body(counter, f32):
        c = arith.muli(counter, _k(2))
        u1 = arith.subf(C.scalar_const(f32, 1.0), _unit(_bits(a["seed"], c), f32))
        u2 = _unit(_bits(a["seed"], arith.addi(c, _k(1))), f32)
        r = mathd.sqrt(arith.mulf(C.scalar_const(f32, -2.0), mathd.log(u1)))
        z = arith.mulf(r, mathd.cos(arith.mulf(C.scalar_const(f32, 2 * math.pi), u2)))
        return arith.addf(C.scalar_const(f32, a["mean"]), arith.mulf(C.scalar_const(f32, a["stddev"]), z))

    return _generate(n, body)
