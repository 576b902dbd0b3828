"""NNAPI table operations: EMBEDDING_LOOKUP, HASHTABLE_LOOKUP, LSH_PROJECTION (API level 27).

The lookups move data only, so their Values may be TENSOR_FLOAT32, TENSOR_INT32 or
TENSOR_QUANT8_ASYMM (copied as bytes; the output keeps the values' scale and zero point).
"""
import numpy as np

from estuary.dialects.core import TensorSpec
from estuary.importers.nnapi.model import OperationCode as Op
from estuary.importers.nnapi.ops import OPS


_VALUE_TYPES = {"TENSOR_FLOAT32": "float32", "TENSOR_INT32": "int32", "TENSOR_QUANT8_ASYMM": "uint8"}


def _values(c, i, what="values"):
    """A data operand: any tensor type, including constant TENSOR_QUANT8_ASYMM (no arithmetic)."""
    op = c.operand(i)
    c.check(op.code.name in _VALUE_TYPES, f"operand {i} ({what}) must be a tensor of "
                                          f"{'/'.join(_VALUE_TYPES)}, got {op.code.name}")
    if i not in c.values and op.value is not None and op.code.name == "TENSOR_QUANT8_ASYMM":
        c.values[i] = c.graph.constant(op.value, TensorSpec(op.dimensions, "uint8"), name=f"operand{i}")
    return c.tensor(i)


def _same_quant(c, src, dst):
    a, b = c.operand(src), c.operand(dst)
    if a.code.name == "TENSOR_QUANT8_ASYMM":
        c.check(b.code == a.code and b.scale == a.scale and b.zero_point == a.zero_point,
                f"output operand {dst} must be TENSOR_QUANT8_ASYMM with the values' scale {a.scale} and "
                f"zero point {a.zero_point}")


def _int32_vector(c, i, what):
    op = c.operand(i)
    c.check(op.code.name == "TENSOR_INT32" and len(op.dimensions) == 1,
            f"{what} (operand {i}) must be a 1-D TENSOR_INT32, got {op.code.name} {op.dimensions}")
    return c.tensor(i)


@OPS.op(Op.EMBEDDING_LOOKUP)
def embedding_lookup(c, ins, outs):
    """output = values[lookups] along the first dimension."""
    c.check(len(ins) == 2 and len(outs) == 1, f"takes 2 inputs and 1 output, got {len(ins)} and {len(outs)}")
    lookups = _int32_vector(c, ins[0], "lookups")
    values = _values(c, ins[1])
    n = c.spec(values).shape[0]
    c.check(c.spec(values).rank >= 2, f"values must have rank >= 2, got {c.spec(values).rank}")
    const = c.operand(ins[0]).value
    if const is not None:
        bad = [int(v) for v in const.reshape(-1) if not 0 <= v < n]
        c.check(not bad, f"lookups {bad} are out of bounds for the {n} rows of values")
    _same_quant(c, ins[1], outs[0])
    c.set_output(outs[0], c.op("gather", [values, lookups], axis=0))


@OPS.op(Op.HASHTABLE_LOOKUP)
def hashtable_lookup(c, ins, outs):
    """output[i] = values[j] where keys[j] == lookups[i] (zeros on a miss); hits[i] = 1 on a hit.

    Exact composition: a [k, n] equality table, its row max (hit) and first arg max (index)."""
    c.check(len(ins) == 3 and len(outs) == 2, f"takes 3 inputs and 2 outputs, got {len(ins)} and {len(outs)}")
    lookups = _int32_vector(c, ins[0], "lookups")
    keys = _int32_vector(c, ins[1], "keys")
    values = _values(c, ins[2])
    (k,), (n,) = c.spec(lookups).shape, c.spec(keys).shape
    vshape = c.spec(values).shape
    c.check(vshape[0] == n, f"values.shape[0] {vshape[0]} must equal the number of keys {n}")
    key_value = c.operand(ins[1]).value
    if key_value is not None:
        c.check(bool(np.all(np.diff(key_value.astype(np.int64)) >= 0)), "keys must be sorted in ascending order")
    hits_op = c.operand(outs[1])
    c.check(hits_op.code.name == "TENSOR_QUANT8_ASYMM",
            f"hits (operand {outs[1]}) must be TENSOR_QUANT8_ASYMM, got {hits_op.code.name}")
    _same_quant(c, ins[2], outs[0])
    table = c.op("equal", [c.op("reshape", [lookups], new_shape=[k, 1]), c.op("reshape", [keys], new_shape=[1, n])])
    table = c.op("cast", [table], to="int32")
    hit = c.op("reduce_max", [table], axes=[1])  # [k] 0 / 1
    index = c.op("arg_max", [table], axis=1)  # first matching key (0 on a miss, masked below)
    rows = c.op("gather", [values, index], axis=0)
    mask = c.op("reshape", [c.op("cast", [hit], to="uint8")], new_shape=[k] + [1] * (len(vshape) - 1))
    # a miss is all-zero bytes, as the reference (also for TENSOR_QUANT8_ASYMM values)
    zero = c.graph.constant(np.zeros([1] * len(vshape), _VALUE_TYPES[c.operand(ins[2]).code.name]),
                            name=f"{c.label}/zero")
    c.set_output(outs[0], c.op("where", [mask, rows, zero]))
    c.set_output(outs[1], c.op("cast", [hit], to="uint8"))


@OPS.op(Op.LSH_PROJECTION)
def lsh_projection(c, ins, outs):
    """Hash functions [num_hash, num_bits] float32, input [batch, ...], optional weight [batch], type
    1 SPARSE / 2 DENSE -> int32 codes (nn.lsh_projection)."""
    c.check(len(ins) == 4 and len(outs) == 1, f"takes 4 inputs and 1 output, got {len(ins)} and {len(outs)}")
    kind = {1: "sparse", 2: "dense"}.get(c.scalar(ins[3]))
    c.check(kind is not None, f"type must be 1 (SPARSE) or 2 (DENSE), got {c.scalar(ins[3])}")
    hashes = c.tensor(ins[0])
    x = _values(c, ins[1], "input")
    weight = None if c.omitted(ins[2]) else c.tensor(ins[2])
    c.set_output(outs[0], c.op("lsh_projection", [hashes, x, weight], type=kind))
