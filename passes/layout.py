"""Layout and shape canonicalization: NHWC convolution/pooling, transposes sunk and cancelled.

`nn-layout-nhwc` rewrites each NCHW conv2d / pooling op into transpose -> NHWC op -> transpose
(NHWC is TOSA's and linalg's native convolution layout). `nn-canonicalize-transposes` then sinks
transposes below element-wise ops, pads and reductions (constants are permuted at compile time),
merges consecutive transposes and reshapes and drops identities, so a chain of NCHW layers keeps
one transpose at the model input and one at the output instead of two per layer.
"""
import numpy as np

from estuary.dialects import graph
from estuary.dialects.core import OPS
from estuary.passes import register
from estuary.passes.cleanup import dce
from estuary.passes.lowering import nn_ops
from estuary.passes.rewrite import (attrs, constant, make_constant, operands, producer, replace, shape_of,
                                    short, dtype_of)

TO_NHWC, TO_NCHW = [0, 2, 3, 1], [0, 3, 1, 2]
POOLS = ("average_pool2d", "max_pool2d", "l2_pool2d")


def _commutes(name):
    """Element-wise ops (operands broadcast numpy-style, no axis attribute) commute with transposes."""
    d = OPS.get(name)
    return (d is not None and d.family in ("elementwise", "activation")
            and not any("axis" in a or "axes" in a for a in d.attrs))


def _transpose(value, perm):
    return graph.create_op("transpose", [value], {"permutation": list(perm)})


def _wrap_nhwc(nn, op, layout_attr):
    """op(x) in NCHW -> transpose(op'(transpose(x)), NCHW) with op' in NHWC."""
    a = attrs(op)
    groups = operands(op)
    a[layout_attr] = "nhwc"

    def build():
        new = graph.create_op(short(op), [_transpose(groups[0], TO_NHWC)] + list(groups[1:]),
                              {k: v for k, v in a.items() if v is not None})
        return _transpose(new, TO_NCHW)

    replace(nn, op, build)


@register("nn-layout-nhwc")
def layout_nhwc(nn, options):
    """Run conv2d and pooling in NHWC (transposes around them are left to canonicalization)."""
    for op in nn_ops(nn.module.operation):
        name = short(op)
        if name == "conv2d" and attrs(op)["input_layout"] == "nchw":
            _wrap_nhwc(nn, op, "input_layout")
        elif name in POOLS and attrs(op)["layout"] == "nchw":
            _wrap_nhwc(nn, op, "layout")


def _perm(op):
    p = attrs(op)["permutation"]
    rank = len(shape_of(op.operands[0]))
    return list(range(rank))[::-1] if p is None else list(p)


def _inverse(perm):
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return inv


def _is_identity(perm):
    return list(perm) == list(range(len(perm)))


def _only_unit_moves(shape, perm):
    """True when `perm` keeps the non-1 dimensions in order (the transpose is a reshape)."""
    moved = [p for p in perm if shape[p] != 1]
    return moved == sorted(moved)


def _fold_transpose(nn, op):
    x = op.operands[0]
    perm = _perm(op)
    if _is_identity(perm):
        op.results[0].replace_all_uses_with(x)
        op.erase()
        return True
    inner = producer(x, "transpose")
    if inner is not None:
        first = _perm(inner)
        composed = [first[p] for p in perm]
        replace(nn, op, lambda: _transpose(inner.operands[0], composed))
        return True
    if _only_unit_moves(shape_of(x), perm):
        out = list(shape_of(op.results[0]))
        replace(nn, op, lambda: graph.create_op("reshape", [x], {"new_shape": out}))
        return True
    return False


def _fold_reshape(nn, op):
    x = op.operands[0]
    if shape_of(x) == shape_of(op.results[0]):
        op.results[0].replace_all_uses_with(x)
        op.erase()
        return True
    inner = producer(x, "reshape")
    if inner is not None:
        out = list(shape_of(op.results[0]))
        replace(nn, op, lambda: graph.create_op("reshape", [inner.operands[0]], {"new_shape": out}))
        return True
    return False


def _sink(nn, op):
    """E(transpose(a, p), const, ...) -> transpose(E(a, const'), p) for element-wise E."""
    groups = operands(op)
    if any(g is None or isinstance(g, list) for g in groups):
        return False
    rank = len(shape_of(op.results[0]))
    perm, sources = None, []
    for v in groups:
        t = producer(v, "transpose")
        if t is not None and len(shape_of(v)) == rank:
            p = _perm(t)
            if perm not in (None, p):
                return False
            perm = p
            sources.append(("t", t.operands[0]))
        elif constant(v) is not None:
            sources.append(("c", v))
        else:
            return False
    if perm is None:
        return False
    inv = _inverse(perm)

    def build():
        new_operands = []
        for kind, v in sources:
            if kind == "t":
                new_operands.append(v)
                continue
            arr = constant(v)
            if arr.ndim == 0:
                new_operands.append(v)
                continue
            arr = arr.reshape((1,) * (rank - arr.ndim) + arr.shape)
            new_operands.append(make_constant(nn, np.transpose(arr, inv), dtype_of(v)))
        a = {k: val for k, val in attrs(op).items() if val is not None}
        return _transpose(graph.create_op(short(op), new_operands, a), perm)

    replace(nn, op, build)
    return True


def _sink_through(nn, op, remap):
    """op(transpose(x, p), ...) -> transpose(op'(x, ...), p'), where `remap(p, attrs)` rewrites
    op's axis attributes in place for x's layout and returns p' (None or [] for no transpose)."""
    t = producer(operands(op)[0], "transpose")
    if t is None:
        return False
    a = attrs(op)
    after = remap(_perm(t), a)
    groups = operands(op)

    def build():
        new = graph.create_op(short(op), [t.operands[0]] + list(groups[1:]),
                              {k: v for k, v in a.items() if v is not None})
        return _transpose(new, after) if after else new

    replace(nn, op, build)
    return True


def _batch_norm_axis(perm, a):
    a["axis"] = perm[a["axis"]]
    return perm


def _pad_axes(perm, a):
    """Each padding follows its axis."""
    for key in ("beginning_padding", "ending_padding"):
        moved = [0] * len(perm)
        for i, axis in enumerate(perm):
            moved[axis] = a[key][i]
        a[key] = moved
    return perm


def _reduction_axes(perm, a):
    """Reduced axes mapped back; with kept unit axes the transpose after it becomes a reshape (a
    global pooling written as reduce_mean over H and W), else it orders what remains."""
    axes = range(len(perm)) if a["axes"] is None else [x % len(perm) for x in a["axes"]]
    a["axes"] = sorted(perm[x] for x in axes)
    if a["keep_dimensions"]:
        return perm
    kept = [perm[i] for i in range(len(perm)) if i not in axes]  # x's axes, in the transposed order
    return [sorted(kept).index(k) for k in kept]


def _rewrite_once(nn):
    changed = False
    for op in nn_ops(nn.module.operation):
        name = short(op)
        if name == "transpose":
            done = _fold_transpose(nn, op)
        elif name == "reshape":
            done = _fold_reshape(nn, op)
        elif _commutes(name) and len(op.results) == 1:
            done = _sink(nn, op)
        elif name == "batch_normalization":
            done = _sink_through(nn, op, _batch_norm_axis)
        elif name == "pad":
            done = _sink_through(nn, op, _pad_axes)
        elif name.startswith("reduce_") and "axes" in OPS[name].attrs:  # not arg_max/arg_min (axis)
            done = _sink_through(nn, op, _reduction_axes)
        else:
            done = False
        changed = changed or done
    return changed


@register("nn-canonicalize-transposes")
def canonicalize_transposes(nn, options):
    """Sink transposes through element-wise ops, merge transposes/reshapes, drop identities."""
    for _ in range(1000):
        if not _rewrite_once(nn):
            break
        dce(nn, options)
    dce(nn, options)
