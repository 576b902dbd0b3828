"""Lowering rules: Indexing and generation ops. tile/reverse are TOSA; gathers are linalg.generic
with `tensor.extract` at computed coordinates; scatters, cumulative sums and top-k are
linalg.generic reductions (each output element visits the candidate sources in order), exact and
deterministic, O(output x sources) — meant for the small index tensors models use."""
from iree.compiler import ir
from iree.compiler.dialects import _linalg_ops_gen as linalg_ops
from iree.compiler.dialects import arith, linalg, tensor, tosa

from estuary.base import dims, dtypes
from estuary.passes.lowering import common as C
from estuary.passes.lowering import lowering
from estuary.passes.lowering.shape import _int64_to_int32


def _i64():
    return ir.IntegerType.get_signless(64)


def _idx(d):
    return linalg_ops.IndexOp(d).result


def _as_i64(v):
    return arith.index_cast(_i64(), v)


def _index(v):
    return arith.index_cast(ir.IndexType.get(), v)


def _norm(raw, idx_dtype, size):
    """Scalar index -> in-range `index`: negative wraps once, the rest is clamped."""
    wide = _i64()
    if idx_dtype == "uint32":
        raw = arith.extui(wide, raw)
    elif ir.IntegerType(raw.type).width != 64:
        raw = arith.extsi(wide, raw)
    neg = arith.cmpi(arith.CmpIPredicate.slt, raw, C.scalar_const(wide, 0))
    v = arith.select(neg, arith.addi(raw, C.scalar_const(wide, size)), raw)
    v = arith.maxsi(arith.minsi(v, C.scalar_const(wide, size - 1)), C.scalar_const(wide, 0))
    return _index(v)


def C_index(value):
    """An arith.constant of index type."""
    return arith.constant(ir.IndexType.get(), int(value))


def _maps(*maps):
    return ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps])


def _dims(rank, dims):
    return ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(d) for d in dims])


def _iters(kinds):
    return ir.ArrayAttr.get([ir.Attribute.parse(k) for k in kinds])


def _generic(out_types, inputs, inits, maps, iters, body):
    """linalg.generic; `body(*block_args)` returns the yielded values."""
    op = linalg.GenericOp(out_types, list(inputs), list(inits), _maps(*maps), _iters(iters))
    block = op.regions[0].blocks.append(*[C.element_of(v) for v in list(inputs) + list(inits)])
    with ir.InsertionPoint(block):
        linalg.YieldOp(list(body(*block.arguments)))
    return op.results


def _filled(shape, element, value):
    return linalg.fill(C.scalar_const(element, value), outs=[C.empty(list(shape), element)])


@lowering("tile")
def lower_tile(n):
    return tosa.tile(C.storage(n.out), n.inputs[0], C.shape_value(n.attrs["repetitions"]))


@lowering("reverse")
def lower_reverse(n):
    x = n.inputs[0]
    for axis in n.attrs["axes"]:
        if isinstance(C.shape_of(x)[axis], dims.Dim) or C.shape_of(x)[axis] > 1:
            x = tosa.reverse(x.type, x, axis)
    return x


@lowering("reverse_sequence")
def lower_reverse_sequence(n):
    """out[.., t, ..] = x[.., L - 1 - t, ..] for t < L = lengths[b] (clamped to 0..size), else x."""
    x, lengths = n.inputs
    spec, len_spec = n.in_specs
    b_axis, s_axis = n.attrs["batch_axis"], n.attrs["sequence_axis"]
    size = spec.shape[s_axis]
    wide = _i64()

    def body(out):
        length = tensor.extract(lengths, [_idx(b_axis)])
        length = arith.index_cast(wide, _norm_len(length, len_spec.dtype, size))
        t = _as_i64(_idx(s_axis))
        inside = arith.cmpi(arith.CmpIPredicate.slt, t, length)
        flipped = arith.subi(arith.subi(length, C.scalar_const(wide, 1)), t)
        src = arith.select(inside, flipped, t)
        coords = [_index(src) if d == s_axis else _idx(d) for d in range(spec.rank)]
        return [tensor.extract(x, coords)]

    init = C.empty(list(spec.shape), C.element_of(x))
    ident = ir.AffineMap.get_identity(spec.rank)
    return _generic([C.storage(n.out)], [], [init], [ident], [C.PARALLEL] * spec.rank, body)[0]


def _norm_len(raw, dtype, size):
    """A sequence length clamped to 0..size (as index)."""
    wide = _i64()
    if dtype == "uint32":
        raw = arith.extui(wide, raw)
    elif ir.IntegerType(raw.type).width != 64:
        raw = arith.extsi(wide, raw)
    v = arith.maxsi(arith.minsi(raw, C.scalar_const(wide, size)), C.scalar_const(wide, 0))
    return _index(v)


def _narrow_on_gpu(n, indices):
    """int64 indices as int32 on GPU targets (IREE's 64-bit emulation on Vulkan cannot read int64
    elements with tensor.extract); saturating keeps every index's clamped meaning."""
    return _int64_to_int32(indices) if n.in_specs[1].dtype == "int64" and n.options.gpu else indices


@lowering("gather_elements")
def lower_gather_elements(n):
    x, indices = n.inputs
    indices = _narrow_on_gpu(n, indices)
    spec, idx_spec = n.in_specs
    axis = n.attrs["axis"]
    rank = spec.rank
    ident = ir.AffineMap.get_identity(rank)

    def body(i, out):
        coords = [_norm(i, idx_spec.dtype, spec.shape[axis]) if d == axis else _idx(d) for d in range(rank)]
        return [tensor.extract(x, coords)]

    init = C.empty(list(n.out.shape), C.element_of(x))
    return _generic([C.storage(n.out)], [indices], [init], [ident, ident], [C.PARALLEL] * rank, body)[0]


@lowering("gather_nd")
def lower_gather_nd(n):
    x, indices = n.inputs
    indices = _narrow_on_gpu(n, indices)
    spec, idx_spec = n.in_specs
    k = idx_spec.shape[-1]
    batch = idx_spec.rank - 1
    rank = n.out.rank

    def body(out):
        coords = []
        for d in range(k):
            raw = tensor.extract(indices, [_idx(b) for b in range(batch)] + [C_index(d)])
            coords.append(_norm(raw, idx_spec.dtype, spec.shape[d]))
        coords += [_idx(batch + j) for j in range(spec.rank - k)]
        return [tensor.extract(x, coords)]

    init = C.empty(list(n.out.shape), C.element_of(x))
    return _generic([C.storage(n.out)], [], [init], [ir.AffineMap.get_identity(rank)], [C.PARALLEL] * rank,
                    body)[0]


def _combine(reduction, dtype, acc, upd):
    if reduction == "none":
        return upd
    f = dtype in dtypes.FLOATS
    u = dtype in dtypes.UNSIGNED
    if reduction == "add":
        return arith.addf(acc, upd) if f else arith.addi(acc, upd)
    if reduction == "sub":
        return arith.subf(acc, upd) if f else arith.subi(acc, upd)
    if reduction == "mul":
        return arith.mulf(acc, upd) if f else arith.muli(acc, upd)
    if reduction == "div":
        return arith.divf(acc, upd)
    if reduction == "max":
        return arith.maximumf(acc, upd) if f else (arith.maxui(acc, upd) if u else arith.maxsi(acc, upd))
    return arith.minimumf(acc, upd) if f else (arith.minui(acc, upd) if u else arith.minsi(acc, upd))


def _all(conds):
    out = conds[0]
    for c in conds[1:]:
        out = arith.andi(out, c)
    return out


def _eq(a, b):
    return arith.cmpi(arith.CmpIPredicate.eq, a, b)


@lowering("scatter_elements")
def lower_scatter_elements(n):
    """Dims (p.., k): output position p visits the updates u = p with dimension `axis` set to k (k in
    order), combining those whose index hits p[axis]. O(output size x updates.shape[axis])."""
    x, indices, updates = n.inputs
    indices = _narrow_on_gpu(n, indices)
    spec, idx_spec, upd_spec = n.in_specs
    axis, reduction = n.attrs["axis"], n.attrs["reduction"]
    rank = spec.rank
    p_map = _dims(rank + 1, range(rank))

    def body(_, acc):
        coords, conds = [], []
        for d in range(rank):
            if d == axis:
                coords.append(_idx(rank))
            elif upd_spec.shape[d] < spec.shape[d]:  # updates cover only part of this dimension
                last = C_index(upd_spec.shape[d] - 1)
                conds.append(arith.cmpi(arith.CmpIPredicate.ule, _idx(d), last))
                coords.append(arith.minui(_idx(d), last))
            else:
                coords.append(_idx(d))
        i = tensor.extract(indices, coords)
        upd = tensor.extract(updates, coords)
        conds.append(_eq(_idx(axis), _norm(i, idx_spec.dtype, spec.shape[axis])))
        return [arith.select(_all(conds), _combine(reduction, spec.dtype, acc, upd), acc)]

    iters = [C.PARALLEL] * rank + [C.REDUCTION]
    # a placeholder operand gives dimension k its extent (no map reads updates directly)
    extent = C.empty([upd_spec.shape[axis]], ir.IntegerType.get_signless(8))
    return _generic([C.storage(n.out)], [extent], [x], [_dims(rank + 1, [rank]), p_map], iters, body)[0]


@lowering("scatter_nd")
def lower_scatter_nd(n):
    x, indices, updates = n.inputs
    indices = _narrow_on_gpu(n, indices)
    spec, idx_spec, _ = n.in_specs
    reduction = n.attrs["reduction"]
    k = idx_spec.shape[-1]
    batch = idx_spec.rank - 1
    rank = spec.rank
    total = rank + batch  # dims 0..rank-1: output position p; then the update batch position u
    u_map = _dims(total, list(range(rank, total)) + list(range(k, rank)))
    p_map = _dims(total, range(rank))

    def body(upd, acc):
        conds = []
        for d in range(k):
            raw = tensor.extract(indices, [_idx(rank + b) for b in range(batch)] + [C_index(d)])
            conds.append(_eq(_idx(d), _norm(raw, idx_spec.dtype, spec.shape[d])))
        return [arith.select(_all(conds), _combine(reduction, spec.dtype, acc, upd), acc)]

    iters = [C.PARALLEL] * rank + [C.REDUCTION] * batch
    if batch == 0:  # a single index tuple: still a generic over p
        u_map = _dims(total, range(k, rank))
    return _generic([C.storage(n.out)], [updates], [x], [u_map, p_map], iters, body)[0]


@lowering("cumulative_sum")
def lower_cumulative_sum(n):
    """Reduction dim j visits the axis in order; `reversed` is reverse(cumsum(reverse(x)))."""
    x = n.inputs[0]
    spec = n.in_specs[0]
    axis, exclusive, rev = n.attrs["axis"], n.attrs["exclusive"], n.attrs["reversed"]
    rank = spec.rank
    flip = rev and spec.shape[axis] > 1
    if flip:
        x = tosa.reverse(x.type, x, axis)
    total = rank + 1  # the last dim j runs over the summed axis
    x_map = _dims(total, [rank if d == axis else d for d in range(rank)])
    out_map = _dims(total, range(rank))
    f = spec.dtype in dtypes.FLOATS
    pred = arith.CmpIPredicate.slt if exclusive else arith.CmpIPredicate.sle

    def body(v, acc):
        take = arith.cmpi(pred, _idx(rank), _idx(axis))
        return [arith.select(take, arith.addf(acc, v) if f else arith.addi(acc, v), acc)]

    init = _filled(spec.shape, C.element_of(x), 0)
    y = _generic([C.storage(n.out)], [x], [init], [x_map, out_map], [C.PARALLEL] * rank + [C.REDUCTION], body)[0]
    return tosa.reverse(y.type, y, axis) if flip else y


def _before(dtype, largest, vj, vi, j, i):
    """Whether element j sorts before element i (stable: equal values keep index order)."""
    if dtype in dtypes.FLOATS:
        better = arith.cmpf(arith.CmpFPredicate.OGT if largest else arith.CmpFPredicate.OLT, vj, vi)
        same = arith.cmpf(arith.CmpFPredicate.OEQ, vj, vi)
    else:
        better = arith.cmpi(arith.CmpIPredicate.sgt if largest else arith.CmpIPredicate.slt, vj, vi)
        same = arith.cmpi(arith.CmpIPredicate.eq, vj, vi)
    earlier = arith.cmpi(arith.CmpIPredicate.ult, j, i)
    return arith.ori(better, arith.andi(same, earlier))


@lowering("top_k")
def lower_top_k(n):
    """rank[i] = #elements sorting before i (a permutation); output r takes the element of rank r."""
    x = n.inputs[0]
    spec = n.in_specs[0]
    axis, k, largest = n.attrs["axis"], n.attrs["k"], n.attrs["largest"]
    rank = spec.rank
    total = rank + 1
    el = C.element_of(x)
    wide = _i64()
    own = _dims(total, range(rank))
    other = _dims(total, [rank if d == axis else d for d in range(rank)])

    def count(vi, vj, acc):
        before = _before(spec.dtype, largest, vj, vi, _idx(rank), _idx(axis))
        return [arith.select(before, arith.addi(acc, C.scalar_const(wide, 1)), acc)]

    ranks = _generic([C.tensor_type(spec.shape, wide)], [x, x], [_filled(spec.shape, wide, 0)],
                     [own, other, own], [C.PARALLEL] * rank + [C.REDUCTION], count)[0]
    idx_el = C.storage(n.out_specs[1]).element_type

    def pick(v, r, acc_v, acc_i):
        hit = _eq(r, _as_i64(_idx(axis)))
        i = arith.index_cast(idx_el, _idx(rank))
        return [arith.select(hit, v, acc_v), arith.select(hit, i, acc_i)]

    shape = list(n.out.shape)
    out = _generic([C.storage(n.out_specs[0]), C.storage(n.out_specs[1])], [x, ranks],
                   [_filled(shape, el, 0), _filled(shape, idx_el, 0)], [other, other, own, own],
                   [C.PARALLEL] * rank + [C.REDUCTION], pick)
    return [out[0], out[1]]


# ---------------------------------------------------------------- non-maximum suppression


def _f32c(v):
    return C.scalar_const(ir.F32Type.get(), v)


def _corners(boxes, b, n):
    """(x1, y1, x2, y2, area) of box n (an index) of batch b."""
    x, y, w, h = [tensor.extract(boxes, [b, n, C_index(k)]) for k in range(4)]
    hw, hh = arith.mulf(w, _f32c(0.5)), arith.mulf(h, _f32c(0.5))
    return arith.subf(x, hw), arith.subf(y, hh), arith.addf(x, hw), arith.addf(y, hh), arith.mulf(w, h)


def _iou_above(boxes, b, i, j, threshold):
    ax1, ay1, ax2, ay2, aa = _corners(boxes, b, i)
    bx1, by1, bx2, by2, ba = _corners(boxes, b, j)
    zero = _f32c(0.0)
    iw = arith.maximumf(arith.subf(arith.minimumf(ax2, bx2), arith.maximumf(ax1, bx1)), zero)
    ih = arith.maximumf(arith.subf(arith.minimumf(ay2, by2), arith.maximumf(ay1, by1)), zero)
    inter = arith.mulf(iw, ih)
    union = arith.subf(arith.addf(aa, ba), inter)
    # iou > t  <=>  inter > t * union (union > 0); a zero union never suppresses
    pos = arith.cmpf(arith.CmpFPredicate.OGT, union, zero)
    over = arith.cmpf(arith.CmpFPredicate.OGT, arith.divf(inter, union), _f32c(threshold))
    return arith.andi(pos, over)


@lowering("non_max_suppression")
def lower_non_max_suppression(n):
    """Sort by score (stable ranks), then an scf.for over sorted positions r: the kept box r
    suppresses later boxes overlapping it; kept boxes are then compacted into max_boxes slots."""
    from iree.compiler.dialects import scf

    boxes, scores, classes = n.inputs
    bsz, num = n.in_specs[1].shape
    m = n.attrs["max_boxes"]
    wide, i8, i32 = _i64(), ir.IntegerType.get_signless(8), ir.IntegerType.get_signless(32)
    bn = [bsz, num]
    # rank[b, i]: boxes sorting before i (higher score, or equal score and lower index)
    own, other = _dims(3, [0, 1]), _dims(3, [0, 2])

    def count(si, sj, acc):
        before = _before("float32", True, sj, si, _idx(2), _idx(1))
        return [arith.select(before, arith.addi(acc, C.scalar_const(wide, 1)), acc)]

    rank = _generic([C.tensor_type(bn, wide)], [scores, scores], [_filled(bn, wide, 0)], [own, other, own],
                    [C.PARALLEL, C.PARALLEL, C.REDUCTION], count)[0]

    # perm[b, r] = the box of rank r
    def pick(rk, acc):
        hit = _eq(rk, _as_i64(_idx(1)))
        return [arith.select(hit, _as_i64(_idx(2)), acc)]

    perm = _generic([C.tensor_type(bn, wide)], [rank], [_filled(bn, wide, 0)], [other, own],
                    [C.PARALLEL, C.PARALLEL, C.REDUCTION], pick)[0]
    ident = ir.AffineMap.get_identity(2)
    thr = n.attrs["score_threshold"]

    def valid(p, out):
        s = tensor.extract(scores, [_idx(0), _index(p)])
        ok = arith.cmpf(arith.CmpFPredicate.OGT, s, _f32c(thr)) if thr != float("-inf") else \
            arith.cmpf(arith.CmpFPredicate.ORD, s, s)
        return [arith.extui(i8, ok)]

    keep = _generic([C.tensor_type(bn, i8)], [perm], [C.empty(bn, i8)], [ident, ident], [C.PARALLEL] * 2,
                    valid)[0]
    loop = scf.ForOp(C_index(0), C_index(num), C_index(1), [keep])
    with ir.InsertionPoint(loop.body):
        r = loop.induction_variable
        cur = loop.inner_iter_args[0]

        def suppress(k, p, out):
            b, j = _idx(0), _idx(1)
            kr = tensor.extract(cur, [b, r])
            pr = _index(tensor.extract(perm, [b, r]))
            later = arith.cmpi(arith.CmpIPredicate.ugt, j, r)
            hit = arith.andi(arith.cmpi(arith.CmpIPredicate.ne, kr, C.scalar_const(i8, 0)), later)
            hit = arith.andi(hit, _iou_above(boxes, b, pr, _index(p), n.attrs["iou_threshold"]))
            if classes is not None:
                hit = arith.andi(hit, _eq(tensor.extract(classes, [b, pr]), tensor.extract(classes, [b, _index(p)])))
            return [arith.select(hit, C.scalar_const(i8, 0), k)]

        nxt = _generic([C.tensor_type(bn, i8)], [cur, perm], [C.empty(bn, i8)], [ident, ident, ident],
                       [C.PARALLEL] * 2, suppress)[0]
        scf.YieldOp([nxt])
    keep = loop.results[0]
    # excl[b, r] = kept boxes before r; total[b] = kept boxes
    row = _dims(2, [0])

    def tally(k, acc):
        return [arith.addi(acc, arith.extui(i32, k))]

    total = _generic([C.tensor_type([bsz], i32)], [keep], [_filled([bsz], i32, 0)], [ident, row],
                     [C.PARALLEL, C.REDUCTION], tally)[0]

    def exclusive(k, acc):
        take = arith.cmpi(arith.CmpIPredicate.ult, _idx(2), _idx(1))
        return [arith.select(take, arith.addi(acc, arith.extui(i32, k)), acc)]

    excl = _generic([C.tensor_type(bn, i32)], [keep], [_filled(bn, i32, 0)], [other, own],
                    [C.PARALLEL, C.PARALLEL, C.REDUCTION], exclusive)[0]
    slot = _dims(3, [0, 1])
    src = _dims(3, [0, 2])
    tot3 = _dims(3, [0])

    def compact(k, e, p, t, acc):
        # nothing kept: slot 0 takes sorted position 0 (the best box)
        none = _eq(t, C.scalar_const(i32, 0))
        first = arith.andi(_eq(_idx(1), C_index(0)), _eq(_idx(2), C_index(0)))
        kept = arith.cmpi(arith.CmpIPredicate.ne, k, C.scalar_const(i8, 0))
        hit = arith.andi(kept, _eq(e, arith.index_cast(i32, _idx(1))))
        hit = arith.ori(hit, arith.andi(none, first))
        return [arith.select(hit, arith.trunci(i32, p), acc)]

    idx = _generic([C.tensor_type([bsz, m], i32)], [keep, excl, perm, total], [_filled([bsz, m], i32, -1)],
                   [src, src, src, tot3, slot], [C.PARALLEL, C.PARALLEL, C.REDUCTION], compact)[0]

    def capped(t, out):
        t = arith.maxsi(t, C.scalar_const(i32, 1))
        return [arith.minsi(t, C.scalar_const(i32, m))]

    cnt = _generic([C.tensor_type([bsz], i32)], [total], [C.empty([bsz], i32)],
                   [ir.AffineMap.get_identity(1)] * 2, [C.PARALLEL], capped)[0]
    return [idx, cnt]
