"""Applies the tile policy (tile_rules.py) to a module IREE has configured: finds each dispatch's
root op by its shape and indexing maps (or by the marks of contract.py), reads IREE's
`lowering_config`, and writes the rule's choice back. Runs between IREE's
`executable-configurations` phase and code generation (phases.py), with the vector lanes and
worker count of the compile options (the limits on every CPU, the measured rules on AVX-512 and
AVX2)."""
import math
import re

from iree.compiler import ir

from estuary.backends.llvm_cpu import contract, tile_rules
from estuary.backends.llvm_cpu.tile_rules import (PIPELINE, TRANSFORM_ROWS, TRANSFORM_TERMS, batch_mmt4d_tiles,
                                                  blocked_pointwise_tiles, column_sum_tiles, conv_tiles,
                                                  depthwise_tiles, image_conv_tiles, inner_vector, matvec_tiles,
                                                  pointwise_tiles, reduction_rows, softmax_tiles, transform_tiles,
                                                  transpose_tiles, unit_tiles)

_KEYS = ("distribution", "vector_common_parallel", "vector_reduction", "vector_inner_parallel")
_POINTWISE_MAPS = ("(d0, d1, d2, d3) -> (d3, d2)", "(d0, d1, d2, d3) -> (d0, d1, d2)")
_BLOCKED_MAPS = {  # weights, output: unstrided (IREE folded the pixel loops) and strided
    3: ("(d0, d1, d2, d3) -> (d1, d3, d2)", "(d0, d1, d2, d3) -> (d0, d1, d2)"),
    4: ("(d0, d1, d2, d3, d4) -> (d2, d4, d3)", "(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)"),
}
_COLUMN_SUM_MAPS = ["affine_map<(d0, d1) -> (d1, d0)>", "affine_map<(d0, d1) -> (d0)>"]
_TRANSPOSE_MAPS = ["affine_map<(d0, d1, d2) -> (d0, d1, d2)>", "affine_map<(d0, d1, d2) -> (d1, d2, d0)>"]


def _ints(text, key):
    m = re.search(key + r" = \[([0-9, ]*)\]", text)
    return [int(x) for x in m.group(1).split(",") if x.strip()] if m else None


def _transform_dim(op):
    """The loop a Winograd transform generic indexes its constant coefficient vectors with (at
    least TRANSFORM_TERMS 1-D `arith.constant` inputs of at most TRANSFORM_ROWS elements, all on
    one loop other than the innermost; a per-channel constant such as a bias is on the
    innermost), else None."""
    if op.name != "linalg.generic" or "indexing_maps" not in op.attributes or len(op.results) != 1:
        return None
    iterators = str(op.attributes["iterator_types"])
    if "reduction" in iterators:
        return None
    rank = iterators.count("parallel")
    dims = []
    for operand, m in zip(op.operands, ir.ArrayAttr(op.attributes["indexing_maps"])):
        owner = operand.owner
        shape = _shape(operand)
        if isinstance(owner, ir.Block) or owner.name != "arith.constant" or shape is None or len(shape) != 1:
            continue
        expr = str(ir.AffineMapAttr(m).value).split("-> (")[-1].rstrip(")")
        if re.fullmatch(r"d\d+", expr) and int(expr[1:]) != rank - 1 and shape[0] <= TRANSFORM_ROWS:
            dims.append(int(expr[1:]))
    return dims[0] if len(dims) >= TRANSFORM_TERMS and len(set(dims)) == 1 else None


def _retune_transform(func):
    """Give the root of a dispatch holding a Winograd transform pass `transform_tiles`."""
    ops = list(_blocks(func))
    dims = [d for d in (_transform_dim(o) for o in ops) if d is not None]
    roots = [o for o in ops if "lowering_config" in o.attributes and o.results]
    if len(dims) != 1 or len(roots) != 1:
        return 0
    root = roots[0]
    extents = _shape(root.results[0])
    text = str(root.attributes["lowering_config"])
    lists = [_ints(text, k) for k in ("distribution", "vector_common_parallel")]
    if extents is None or None in lists or "vector_reduction" in text:
        return 0
    choice = transform_tiles(extents, dims[0], *lists)
    if not choice:
        return 0
    root.attributes["lowering_config"] = _lowering_config(dict(zip(_KEYS, choice)))
    return 1


def _retune_unit_products(func, lanes, workers):
    """Give a dispatch rooted at a column-vector product `unit_tiles`, and every other op in it
    (its fill and fused consumers: an LSTM's gate math) the same column vector steps."""
    ops = [op for op in _blocks(func) if "lowering_config" in op.attributes]
    roots = [op for op in ops if contract.marked(op, contract.UNIT_MATVEC) and op.results]
    if len(roots) != 1:
        return 0
    out = _shape(roots[0].results[0])
    choice = unit_tiles(out, lanes, workers) if out is not None else None
    if choice is None:
        return 0
    others = [op for op in ops if op is not roots[0]]
    step = choice[1][:len(out)]
    if any(len(_ints(str(op.attributes["lowering_config"]), "vector_common_parallel") or []) != len(step)
           for op in others):
        return 0
    roots[0].attributes["lowering_config"] = _config(*choice)
    for op in others:
        op.attributes["lowering_config"] = _lowering_config({"vector_common_parallel": step})
    return 1


def _retune_column_sum(func, lanes, workers):
    """Give a dispatch rooted at a column sum (a global pooling: a [rows, C] input read
    transposed, summed over the rows) `column_sum_tiles`, and every other op in it (its fill,
    the division, a data-tiling pack of the result) vectors of `lanes` channels. With such a pack
    in the dispatch (the pooling before a data-tiled classifier) IREE 3.13 tiles it one channel
    per vector and per workgroup (MobileNetV2's 1280 channels: 82 against 15 µs)."""
    ops = [op for op in _blocks(func) if "lowering_config" in op.attributes and op.results]
    roots = [op for op in ops if op.name == "linalg.generic" and "indexing_maps" in op.attributes
             and [str(m) for m in ir.ArrayAttr(op.attributes["indexing_maps"])] == _COLUMN_SUM_MAPS
             and str(op.attributes["iterator_types"]).count("reduction") == 1]
    if len(roots) != 1 or _shape(roots[0].results[0]) is None:
        return 0
    channels = _shape(roots[0].results[0])[0]
    others = [op for op in ops if op is not roots[0]]
    if any(set(_tiles(str(op.attributes["lowering_config"]))) != {"vector_common_parallel"}
           or len(_ints(str(op.attributes["lowering_config"]), "vector_common_parallel")) != 1
           or (_shape(op.results[0]) or [0])[0] != channels for op in others):
        return 0
    choice = column_sum_tiles(channels, lanes, workers)
    if choice is None:
        return 0
    roots[0].attributes["lowering_config"] = _config(*choice)
    for op in others:
        op.attributes["lowering_config"] = _lowering_config({"vector_common_parallel": [lanes]})
    return 1


def _retune_softmax(func):
    """Apply `softmax_tiles` to every configured op of a softmax dispatch (all of them, or
    none: IREE's tiles for the fused ops must agree)."""
    ops = [op for op in _blocks(func) if "lowering_config" in op.attributes]
    rows = [_shape(op.operands[0]) for op in ops if op.name == "linalg.generic" and op.operands]
    if not ops or not rows or None in rows:
        return 0
    choices = []
    for op in ops:
        text = str(op.attributes["lowering_config"])
        tiles = _tiles(text)
        choices.append(softmax_tiles(rows[0][-1], tiles))
    if None in choices:
        return 0
    for op, tiles in zip(ops, choices):
        op.attributes["lowering_config"] = _lowering_config(tiles)
    return 1


def _retune_reduction_consumers(func, lanes):
    """Give every op with inner-parallel vector tiles in a dispatch rooted at a row reduction
    (a LayerNorm, an RMSNorm: reductions, their element-wise consumers and data-tiling packs)
    inner vectors of at most `inner_vector`, and rows that fit the stack (`reduction_rows`).
    Returns 1 when something changed."""
    ops = [op for op in _blocks(func) if "lowering_config" in op.attributes and op.results]
    configs = [str(op.attributes["lowering_config"]) for op in ops]
    if not any("distribution" in c and "vector_reduction" in c for c in configs):
        return 0
    softmax = "_softmax_" in str(func.attributes["sym_name"])  # IREE names dispatches by their root op
    changed = _bound_reduction_rows(ops, several_loops=not softmax) | _tile_whole_row_packs(ops)
    configs = [str(op.attributes["lowering_config"]) for op in ops]
    for op, text in zip(ops, configs):
        inner = _ints(text, "vector_inner_parallel")
        extents = _shape(op.results[0])
        if not inner or extents is None or len(extents) < len(inner):
            continue
        packed = _packed_tiles(op) if op.name == "linalg.pack" else {}
        if packed is None:
            continue
        new = [t if t <= max(1, lanes // packed.get(i, 1)) else inner_vector(extents[i], lanes, packed.get(i, 1))
               for i, t in enumerate(inner)]
        if new != inner:
            tiles = _tiles(text)
            tiles["vector_inner_parallel"] = new
            op.attributes["lowering_config"] = _lowering_config(tiles)
            changed = 1
    return changed


def _tile_whole_row_packs(ops):
    """Give a data-tiling pack that IREE left without inner vector tiles one packed tile per
    vector step along the dimensions its common tiles leave whole. With 4-lane vectors
    (x86-64-v2, AArch64 NEON) IREE 3.13 configures one of two sibling packs of a LayerNorm
    dispatch that way, which packs a whole row at once (8192 bytes for 256 floats x 8 rows)
    and fails IREE's vector-size check. Returns 1 when something changed."""
    changed = 0
    for op in ops:
        text = str(op.attributes["lowering_config"])
        common = _ints(text, "vector_common_parallel")
        if op.name != "linalg.pack" or not common or _ints(text, "vector_inner_parallel") is not None \
                or all(common):
            continue
        tiles = _tiles(text)
        tiles["vector_inner_parallel"] = [0 if t else 1 for t in common]
        op.attributes["lowering_config"] = _lowering_config(tiles)
        changed = 1
    return changed


def _bound_reduction_rows(ops, several_loops: bool = True):
    """Apply `reduction_rows` to a dispatch rooted at a reduction over its innermost loop (a
    LayerNorm over [rows, width], or over [H, W, width] as in Swin's windowed blocks): the root's
    workgroup rows and every op's vector rows, counted over the loops before the reduced one.
    `several_loops` False: 2-loop roots only (a softmax over [heads, rows, width] is left to its
    measured rule, `_retune_softmax`). Returns 1 when something changed."""
    configs = {id(op): str(op.attributes["lowering_config"]) for op in ops}
    roots = [op for op in ops if "distribution" in configs[id(op)] and "vector_reduction" in configs[id(op)]]
    if len(roots) != 1 or op_rank(roots[0]) < 2 or (op_rank(roots[0]) > 2 and not several_loops):
        return 0
    root = roots[0]
    lead = op_rank(root) - 1  # the loops before the reduced one
    text = configs[id(root)]
    dist, vec = _ints(text, "distribution"), _ints(text, "vector_common_parallel")
    width = _shape(root.operands[0])
    if not dist or not vec or width is None or len(width) != lead + 1 or dist[lead] or vec[lead] \
            or not all(dist[:lead]) or not all(vec[:lead]):
        return 0
    values = sum(1 for op in ops if (_shape(op.results[0]) or [0]) and len(_shape(op.results[0]) or []) != 1
                 and op is not root)
    choice = reduction_rows(width[lead], math.prod(dist[:lead]), math.prod(vec[:lead]), values)
    if choice is None:
        return 0
    rows, step = choice
    for op in ops:
        tiles = _tiles(configs[id(op)])
        common = tiles.get("vector_common_parallel")
        if op is root:
            tiles["distribution"] = _within(dist[:lead], rows) + dist[lead:]
        if op.name != "linalg.pack" and common and math.prod(t for t in common[:lead] if t) > step:
            tiles["vector_common_parallel"] = _within(common[:lead], step) + common[lead:]
        op.attributes["lowering_config"] = _lowering_config(tiles)
    return 1


def _within(tiles, limit):
    """Tiles over the leading loops whose product is at most `limit`, taken from the innermost
    loop outwards (a 0, an untiled loop, stays)."""
    out = list(tiles)
    for i in reversed(range(len(out))):
        if out[i]:
            out[i] = min(out[i], limit)
            limit = max(1, limit // out[i])
    return out


def op_rank(op):
    """The loop count of a linalg.generic (its iterator types), else 0."""
    if "iterator_types" not in op.attributes:
        return 0
    text = str(op.attributes["iterator_types"])
    return text.count("parallel") + text.count("reduction")


def _packed_tiles(pack):
    """{outer loop of a linalg.pack: its inner tile size} (identity outer order only), else None."""
    perm = _ints(str(pack), "outer_dims_perm")
    pos = _ints(str(pack), "inner_dims_pos")
    tiles = _ints(str(pack), "inner_tiles")
    if pos is None or tiles is None or (perm is not None and perm != sorted(perm)):
        return None
    return dict(zip(pos, tiles))


def _tiles(text):
    """{key in _KEYS: list} of a lowering config's text (the inverse of `_lowering_config`)."""
    return {k: v for k in _KEYS if (v := _ints(text, k)) is not None}


def _lowering_config(tiles):
    """An #iree_cpu.lowering_config of `tiles` ({key in _KEYS: list})."""
    body = ", ".join(f"{k} = {tiles[k]}" for k in _KEYS if k in tiles)
    return ir.Attribute.parse(f"#iree_cpu.lowering_config<{body}>")


def _config(distribution, vector, reduction):
    return _lowering_config(dict(zip(_KEYS, (distribution, vector, reduction))))


def _shape(value):
    """The static shape of a ranked tensor value, else None."""
    try:
        return list(ir.RankedTensorType(value.type).shape)
    except ValueError:
        return None


def _blocks(op):
    for region in op.regions:
        for block in region.blocks:
            yield from (o.operation for o in block.operations)


def _is_pointwise(op):
    """A 1x1 convolution as passes/lowering/pointwise.py builds it: loops (oh, ow, f, c), weights
    [C, F]. Matched by shape (IREE rebuilds the op, dropping any mark, when it folds the unit
    batch dimension)."""
    return _product_with_maps(op, _POINTWISE_MAPS)


def _is_blocked_pointwise(op, out):
    """A 1x1 convolution with blocked weights as lowering/pointwise.py builds it on AVX2 and
    AVX-512 (`out` is its result shape), matched by shape as `_is_pointwise` is."""
    return out is not None and len(out) in _BLOCKED_MAPS and _product_with_maps(op, _BLOCKED_MAPS[len(out)])


def _product_with_maps(op, maps):
    """Whether `op` is a one-result linalg.generic whose weights' and output's indexing maps are
    `maps` and whose only reduction loop is its last (the loop count is the maps')."""
    if op.name != "linalg.generic" or "indexing_maps" not in op.attributes or len(op.results) != 1:
        return False
    found = [str(m) for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    iters = str(op.attributes["iterator_types"])
    return (len(found) == 3 and all(m in found[i + 1] for i, m in enumerate(maps))
            and iters.count("reduction") == 1 and iters.rstrip("]").endswith("reduction>"))


def _transposed_image(op):
    """The [C, H, W] shape a channels-last transpose copies (a generic with maps (c, h, w) ->
    (h, w, c) whose body only yields its input), else None."""
    if op.name != "linalg.generic" or "indexing_maps" not in op.attributes or len(op.operands) != 2:
        return None
    body = [o.operation.name for o in op.regions[0].blocks[0].operations]
    if body != ["linalg.yield"] or [str(m) for m in ir.ArrayAttr(op.attributes["indexing_maps"])] != _TRANSPOSE_MAPS:
        return None
    return _shape(op.operands[0])


def _retune_function(func, conv, lanes, workers):
    changed = 0
    for op in _blocks(func):
        if "lowering_config" not in op.attributes or not op.results:
            continue
        image = _transposed_image(op)
        if image is not None:
            choice = transpose_tiles(image, workers)
            if choice:
                op.attributes["lowering_config"] = _lowering_config(choice)
                changed += 1
            continue
        text = str(op.attributes["lowering_config"])
        lists = [_ints(text, k) for k in ("distribution", "vector_common_parallel", "vector_reduction")]
        if None in lists:
            continue
        choice = None
        out = _shape(op.results[0])
        if op.name == "linalg.batch_mmt4d":
            choice = batch_mmt4d_tiles(out, *lists, workers=workers)
        elif contract.marked(op, contract.MATVEC):
            reduced = _shape(op.operands[0]) if op.operands else None
            extents = out + [reduced[-1]] if reduced and out is not None else None
            choice = matvec_tiles(reduced[-1], *lists, extents=extents, workers=workers) if reduced else None
        elif _is_blocked_pointwise(op, out):
            choice = blocked_pointwise_tiles(out, lists[0], lanes=lanes, workers=workers)
        elif _is_pointwise(op):
            choice = pointwise_tiles(out, *lists, lanes=lanes, workers=workers) if out is not None else None
        elif conv and len(op.results) == 1:
            filt = _shape(op.operands[1]) if len(op.operands) > 1 else None  # [KH, KW, C, F]
            window = filt[0] * filt[1] * filt[2] if filt is not None and len(filt) == 4 else None
            if out is None:
                choice = None
            elif len(lists[0]) == 6:
                choice = depthwise_tiles(out, *lists)
            else:
                choice = conv_tiles(out, *lists, window=window, lanes=lanes, workers=workers)
                if choice is None and lanes == 16 and filt is not None and len(filt) == 4:
                    choice = image_conv_tiles(out, filt, *lists, workers=workers)
        if choice:
            op.attributes["lowering_config"] = _config(*choice)
            changed += 1
    return changed


def _dynamic(func):
    """Whether a dispatch function has dynamic extents (its workload reads sizes at run time):
    the tile rules were measured on static shapes and step aside; IREE's own tiles stand."""
    found = False

    def visit(op):
        nonlocal found
        if op.name.endswith("dispatch.workload.ordinal"):
            found = True
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    func.walk(visit)
    return found


def retune(module, lanes, workers, measured):
    """Rewrite the tiles of every llvm-cpu variant in a module configured by IREE (phase
    `executable-configurations`) for a CPU with `lanes` float32 vector lanes
    (`CompileOptions.cpu_lanes`; None: unknown, IREE's tiles stay) and `workers` CPU workers;
    returns how many dispatches changed.

    On every CPU, dispatches rooted at a row reduction get tiles that fit IREE's stack and vector
    limits (`_retune_reduction_consumers`). The measured rules (convolutions, recurrent products,
    softmax, Winograd transforms) apply with `measured` (`CompileOptions.retile`: `cpu-tiles` on
    an AVX-512 or AVX2 CPU); elsewhere IREE's own choices stand. Workgroup counts are
    `tile_rules.balanced` for `workers`."""
    changed = 0
    tiled = lanes if measured else None

    def visit(op, in_variant):
        nonlocal changed
        in_variant = in_variant or op.name == "hal.executable.variant"
        if op.name == "func.func":
            info = op.attributes["translation_info"] if "translation_info" in op.attributes else None
            if info is None or not in_variant or _dynamic(op):
                return
            if lanes:
                changed += _retune_reduction_consumers(op, lanes)
            if tiled:
                softmax = "_softmax_" in str(op.attributes["sym_name"])  # IREE names dispatches by their root op
                if softmax:
                    changed += _retune_softmax(op)
                else:
                    changed += (_retune_unit_products(op, tiled, workers) or _retune_transform(op)
                                or _retune_column_sum(op, tiled, workers)
                                or _retune_function(op, PIPELINE in str(info), tiled, workers))
            return
        for child in _blocks(op):
            visit(child, in_variant)

    visit(module, False)
    return changed
