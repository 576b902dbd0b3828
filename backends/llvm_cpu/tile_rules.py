"""The llvm-cpu tile policy: pure rules from a dispatch's shapes and IREE's own tile choice to
Estuary's (or None to keep IREE's).

Each rule maps IREE's `lowering_config` lists (distribution, vector, reduction tiles) for one op
kind to better register tiles and workgroups. They are plain functions of shapes, the target's
float32 vector lanes (16: AVX-512, 8: AVX2; `CompileOptions.cpu_lanes`) and the worker count the
artefact is built for (`CompileOptions.workers`), both passed explicitly (no rule has a default
for either), so they are unit-tested without IREE. `retune.py` applies them to a
configured module. The constants below were found by measurement on AMD Zen 4 and Zen 5 hosts
(docs/performance.md, "CPU tile rules"); on other microarchitectures they are a starting point,
and `--disable-pass cpu-tiles` keeps IREE's own choices.
"""
from __future__ import annotations

import math

Tiles = tuple[list[int], list[int], list[int]]

PIPELINE = "ConvTileAndDecomposeExpert"
SMALL_WIDTH = 7       # outputs at most this wide: 7 pixels x 64 channels, 4-channel reduction steps
CHANNELS = 64         # output channels per register tile there, and per workgroup everywhere
REDUCTION_UNROLL = 4  # input channels per reduction step at width <= 7 (8 spills, 1 stalls)
POINTWISE_UNROLL = 2  # ... for the 1x1 convolutions there (4 spills three accumulators)
WIDE_LANES = 32       # output channels per register tile on wider outputs (two zmm registers)
WIDE_UNROLL = 8       # input channels per reduction step on wider outputs
FULL_TILE_ACCUMULATORS = 24  # register tiles with this many zmm accumulators or more ...
FULL_TILE_UNROLL = 2  # ... step 2 input channels
MAX_PIXELS = 14       # widest register tile: 14 pixels x 2 registers = 28 of the 32 zmm registers
WORKGROUP_PIXELS = 392  # output pixels per workgroup wider than 14: whole rows, 7 of 56, 14 of 28
ROW_WORKGROUP_PIXELS = 98  # ... and at widths 8-14 (one register tile per row): 7 rows of 14
FULL_WINDOW = 576      # KH*KW*C those were measured for (3x3x64); smaller windows: see _work_factor
SOFTMAX_ROWS = 2      # softmax rows per vector step (IREE: 8)
SOFTMAX_VECTOR = 128  # softmax row elements per vector op (IREE: 16)
UNIT_REDUCTION = 8    # reduction steps per vector step of the column-vector form (lowering/matvec.unit_products)
UNIT_GROUPS_PER_WORKER = 2  # workgroups per worker there
MATVEC_VECTOR = 256   # reduction elements per vector op (IREE: 16)
TRANSPOSE_CHANNELS = 4  # image inputs with at most this many channels get `transpose_tiles`
TRANSPOSE_ROWS = 8    # image rows per workgroup there, at least (`balanced_rows`)
WINOGRAD_BATCH = 36   # the 6x6 tile positions of lowering/winograd.py
WINOGRAD_GROUPS_PER_WORKER = 3  # workgroups per worker there, each of whole batches
TRANSFORM_TERMS = 3   # a Winograd transform pass sums 6 coefficient-weighted inputs (winograd.py `_combine`)
TRANSFORM_ROWS = 8    # ... over 6 (input) or 4 (output) transform rows: the vector size along them
# AVX2 (16 ymm registers of 8 lanes): 2 pixels x 32 channels (8 accumulators) per register tile,
# 8 input channels per reduction step; at width 7, 7 pixels x 32 (direct) or x 16 (1x1) channels
AVX2_PIXELS = 2
AVX2_LANES = 32
AVX2_UNROLL = 8
AVX2_SMALL_POINTWISE_LANES = 16
AVX2_SMALL_POINTWISE_UNROLL = 2
BLOCKED_GROUP_PIXELS = 98  # pixels per workgroup at most for blocked 1x1 products (half a 14x14 image)
# Blocked 1x1 products: products with at least this many output channels take weights in blocks
# (AVX-512: WIDE_LANES channels, CHANNELS at width <= SMALL_WIDTH); narrower ones gained nothing
# and pay a copy into the next layer's padded buffer (IREE does not write through the reshape)
BLOCKED_MIN_AVX2 = 128
BLOCKED_MIN_AVX512 = 512
PROJECTION_BLOCKS = (WIDE_LANES, 16, 8)  # AVX-512 projections' block widths, widest first (`_projection_block`)
NARROW_BLOCK_PIXELS = 16  # register-tile pixels for 16- and 8-channel blocks (16 accumulators)
CLAIM = 8  # IREE's workers claim workgroups 8 at a time once a dispatch has 8 per worker, else 1
SPLIT_PER_WORKER = 2  # several workers: workgroups planned for this many times their count (plan_workers)


def plan_workers(workers: int) -> int:
    """The shares a dispatch claimed one workgroup at a time is planned in: SPLIT_PER_WORKER per
    worker when there are several. On a VM whose cores are slowed in turn by their neighbours,
    a dispatch of one workgroup per worker waits for the slowest; with more, the other worker
    claims the rest (docs/design.md, "llvm-cpu")."""
    return workers * SPLIT_PER_WORKER if workers > 1 else workers


def balanced(count: int, workers: int, split: bool = True) -> bool:
    """Whether `count` equal workgroups split evenly between `workers` under IREE's claims
    (runtime/src/iree/hal/drivers/local_task: one at a time below CLAIM per worker, else CLAIM
    at a time; 56 workgroups on two workers go 32 / 24, 28 go 16 / 12). Claimed one at a time,
    with `split` the count must also divide into `plan_workers` shares (on two workers 4, 8 or
    12; 16 or more only in multiples of 16)."""
    if count >= workers * CLAIM:
        return count % (workers * CLAIM) == 0
    return count % (plan_workers(workers) if split else workers) == 0


def balanced_rows(extent: int, rows: int, others: int, workers: int, split: bool = True) -> int:
    """The smallest workgroup size of at least `rows` along a loop of `extent`, dividing it, for
    which ceil(extent / size) * `others` workgroups are `balanced`; `rows` when none is."""
    for size in range(max(1, rows), extent + 1):
        if extent % size == 0 and balanced(extent // size * others, workers, split):
            return size
    return rows


def _work_factor(window: int | None) -> int:
    """How many times WORKGROUP_PIXELS a workgroup takes for a window of `window` = KH*KW*C
    multiply-adds per output: a power of two, so that each workgroup does at least a 3x3x64
    window's work (1 for larger windows or when unknown)."""
    factor = 1
    while window and window * factor * 2 <= FULL_WINDOW:
        factor *= 2
    return factor


def conv_tiles(out_shape: list[int], distribution: list[int], vector: list[int], reduction: list[int],
               *, lanes: int, workers: int, window: int | None = None) -> Tiles | None:
    """The tile choice for a 2-D NHWC convolution (loops n, oh, ow, f, kh, kw, c), or None to
    keep IREE's. `out_shape` is [N, OH, OW, F]; the lists are IREE's chosen tile sizes; `window`
    is KH*KW*C when known; `lanes` the target's float32 vector lanes (8: `_conv_tiles_avx2`).
    The rules below are AVX-512's (16 lanes).

    Width <= 7: rows of 7 pixels x 64 channels; workgroups of all rows and 64 channels (a 1.2 MB
    weight block re-read per row, and several workgroups per worker, so that a worker slowed by
    its neighbours does not hold up the dispatch). When the blocks are not `balanced`, as few rows
    per workgroup as keep the count so. Wider:
    rows of up to 14 pixels (the whole row when it fits, else IREE's 7 or 8) x 32 channels, 8
    input channels per reduction step (2 for rows of 12-14 pixels, whose 24-28 accumulators
    leave LLVM too few registers for 8). Workgroups wider than 14: about 392 output pixels
    (whole rows) x 64 channels, scaled up for windows smaller than 3x3x64 (`_work_factor`).
    Widths 8-14: equal groups of whole rows, at most about 98 pixels, x 32 channels."""
    if len(distribution) != 7 or len(vector) != 7 or len(reduction) != 7 or len(out_shape) != 4:
        return None
    if lanes == 8:
        return _conv_tiles_avx2(out_shape, distribution, reduction)
    width, pixels, iree_lanes = out_shape[2], vector[2], vector[3]
    if out_shape[3] % CHANNELS or iree_lanes != 16 or not 0 < pixels <= 8:
        return None  # 16 lanes = one zmm register: the AVX-512 choice these rules were measured against
    if width <= SMALL_WIDTH:
        if pixels > SMALL_WIDTH:
            return None
        if workers == 1 or balanced(out_shape[3] // CHANNELS, workers):  # all rows, 64 channels
            return ([0, out_shape[1], pixels, CHANNELS, 0, 0, 0], [1, 1, pixels, CHANNELS, 0, 0, 0],
                    reduction[:6] + [REDUCTION_UNROLL])
        rows = balanced_rows(out_shape[1], 1, out_shape[3] // CHANNELS, workers)
        return ([0, rows, pixels, CHANNELS, 0, 0, 0], [1, 1, pixels, CHANNELS, 0, 0, 0],
                reduction[:6] + [REDUCTION_UNROLL])
    height, channels = out_shape[1], CHANNELS
    if width <= MAX_PIXELS:
        pixels, channels = width, WIDE_LANES
        groups = -(-height * width // ROW_WORKGROUP_PIXELS)
        rows = -(-height // groups)  # equal row groups: 10 rows as 5 + 5, not 9 + 1
    else:
        rows = min(height, max(1, WORKGROUP_PIXELS * _work_factor(window) // width))
    if width % pixels:
        return None
    # 12-14 pixels x 2 registers: with 8-channel steps LLVM spills accumulators
    unroll = FULL_TILE_UNROLL if pixels * WIDE_LANES // 16 >= FULL_TILE_ACCUMULATORS else WIDE_UNROLL
    return ([0, rows, width, channels, 0, 0, 0], [1, 1, pixels, WIDE_LANES, 0, 0, 0],
            reduction[:6] + [unroll])


def image_conv_tiles(out_shape: list[int], filt: list[int], distribution: list[int], vector: list[int],
                     reduction: list[int], *, workers: int) -> Tiles | None:
    """The AVX-512 tile choice for a convolution of an image (at most TRANSPOSE_CHANNELS input
    channels, filter `filt` [KH, KW, C, F]) into WIDE_LANES output channels, which `conv_tiles`
    leaves to IREE (its rules need multiples of CHANNELS), or None: IREE's pixels x WIDE_LANES
    channels (two zmm registers a pixel, IREE: one) with a whole filter row of every channel per
    reduction step (IREE: the channels only), in `balanced` workgroups of at least 8 whole rows."""
    if len(distribution) != 7 or len(vector) != 7 or len(reduction) != 7 or len(out_shape) != 4 or len(filt) != 4:
        return None
    _, kw, channels, f = filt
    height, width, pixels = out_shape[1], out_shape[2], vector[2]
    if f != WIDE_LANES or not 0 < channels <= TRANSPOSE_CHANNELS or vector[3] != 16 or not 0 < pixels <= 8 \
            or width % pixels or width <= MAX_PIXELS:
        return None
    return ([0, balanced_rows(height, TRANSPOSE_ROWS, 1, workers), width, f, 0, 0, 0], [1, 1, pixels, f, 0, 0, 0],
            [0, 0, 0, 0, 1, kw, channels])


def _conv_tiles_avx2(out_shape: list[int], distribution: list[int], reduction: list[int]) -> Tiles | None:
    """`conv_tiles` on AVX2 (IREE's 8-lane choice): register tiles of AVX2_PIXELS pixels x
    AVX2_LANES channels at even widths (IREE's workgroup rows), else at widths up to 7 the whole
    row x AVX2_LANES channels in workgroups of all rows and 64 channels (IREE's own tiles are 4
    pixels x 4 channels x 8 input channels)."""
    height, width, channels = out_shape[1], out_shape[2], out_shape[3]
    if channels % CHANNELS:
        return None
    if width % AVX2_PIXELS == 0 and distribution[2] % AVX2_PIXELS == 0:
        return ([0, distribution[1], distribution[2], CHANNELS, 0, 0, 0], [1, 1, AVX2_PIXELS, AVX2_LANES, 0, 0, 0],
                reduction[:6] + [AVX2_UNROLL])
    if width <= SMALL_WIDTH:
        return ([0, height, width, CHANNELS, 0, 0, 0], [1, 1, width, AVX2_LANES, 0, 0, 0],
                reduction[:6] + [AVX2_UNROLL])
    return None


def depthwise_tiles(out_shape: list[int], distribution: list[int], vector: list[int],
                    reduction: list[int]) -> Tiles | None:
    """The tile choice for a depthwise convolution (loops n, oh, ow, c, kh, kw), or None to keep
    IREE's: when IREE's register tile of pixels does not divide an output at most 7 wide (2 on
    AVX2 for 7x7 layers, whose remainder pixel then runs unvectorized), the whole row. Applies
    to any vector width (IREE's AVX-512 choice at width 7 is already 7 pixels)."""
    if not (len(distribution) == len(vector) == len(reduction) == 6) or len(out_shape) != 4:
        return None
    width, pixels = out_shape[2], vector[2]
    if not 0 < pixels < width <= SMALL_WIDTH or width % pixels == 0:
        return None
    return (distribution, vector[:2] + [width] + vector[3:], reduction)


def pointwise_tiles(out_shape: list[int], distribution: list[int], vector: list[int], reduction: list[int],
                    *, lanes: int, workers: int) -> Tiles | None:
    """The tile choice for a 1x1 convolution built by pointwise.py (loops oh, ow, f, c), or None
    to keep IREE's: the register tiles of `conv_tiles` (7 pixels x 64 channels at width <= 7,
    else IREE's 7-8 pixels x 32 channels), 4 input channels per reduction step (2 at width <= 7,
    POINTWISE_UNROLL); workgroups of whole rows, from IREE's count up to width 14 and from about
    WORKGROUP_PIXELS wider, as many more as keep the workgroup count `balanced` (`_pointwise_rows`:
    56x56x128, 7 rows and 16 workgroups, not 4 rows and 28)."""
    if not (len(distribution) == len(vector) == len(reduction) == 4) or len(out_shape) != 3:
        return None
    if lanes == 8:
        return _pointwise_tiles_avx2(out_shape, distribution, workers)
    width, pixels, iree_lanes = out_shape[1], vector[1], vector[2]
    if out_shape[2] % CHANNELS or iree_lanes != 16 or not 0 < pixels <= 8 or width % min(pixels, width):
        return None
    pixels = min(pixels, width)
    small = width <= SMALL_WIDTH
    channels = CHANNELS if small else WIDE_LANES
    rows = _pointwise_rows(out_shape[0], distribution[0] if width <= MAX_PIXELS else max(1, WORKGROUP_PIXELS // width),
                           out_shape[2] // CHANNELS, workers)
    return ([rows, width, CHANNELS, 0], [1, pixels, channels, 0],
            [0, 0, 0, POINTWISE_UNROLL if small else REDUCTION_UNROLL])


def _pointwise_rows(height: int, rows: int, groups: int, workers: int) -> int:
    """Rows per workgroup of a 1x1 product `height` rows high in `groups` channel groups: the
    fewest from `rows` up for which the count is `balanced`, else the most below `rows`."""
    up = balanced_rows(height, rows, groups, workers)
    if height % up == 0 and balanced(height // up * groups, workers):
        return up
    below = [size for size in range(1, rows) if height % size == 0 and balanced(height // size * groups, workers)]
    return max(below, default=rows)


def _pointwise_tiles_avx2(out_shape: list[int], distribution: list[int], workers: int) -> Tiles | None:
    """`pointwise_tiles` on AVX2: AVX2_PIXELS pixels x AVX2_LANES channels, 8 input channels per
    step, at even widths; at width 7, 7 pixels x 16 channels, 2 per step; workgroups of whole
    rows as in `pointwise_tiles` (IREE's own: 8 x 8 x 16 lanes)."""
    width, channels = out_shape[1], out_shape[2]
    if channels % CHANNELS:
        return None
    if width % AVX2_PIXELS == 0:
        pixels, lanes, unroll = AVX2_PIXELS, AVX2_LANES, AVX2_UNROLL
    elif width <= SMALL_WIDTH:
        pixels, lanes, unroll = width, AVX2_SMALL_POINTWISE_LANES, AVX2_SMALL_POINTWISE_UNROLL
    else:
        return None
    rows = balanced_rows(out_shape[0], distribution[0] if width <= MAX_PIXELS else 1, channels // CHANNELS, workers)
    return ([rows, width, CHANNELS, 0], [1, pixels, lanes, 0], [0, 0, 0, unroll])


def pointwise_block(height: int, width: int, channels: int, lanes: int | None, strided: bool = False,
                    projection: bool = False) -> int | None:
    """Output channels per weight block for a 1x1 product of `channels` outputs, `height` x
    `width` pixels (lowering/pointwise.py stores its weights [F / block, C, block]), or None for [C, F]
    weights. AVX2: AVX2_LANES, at least BLOCKED_MIN_AVX2 channels, even widths. AVX-512:
    WIDE_LANES (CHANNELS at width <= SMALL_WIDTH), at least BLOCKED_MIN_AVX512 channels, where
    `_blocked_pixels` has a register tile (IREE folds an unstrided product's pixel loops).
    A `projection` (a product of a depthwise convolution's result that no padding follows) takes
    blocks on AVX-512 whenever it has two or more (`_projection_block`): as [C, F], or as one
    block, IREE data-tiles it and packs its input inside the depthwise convolution's dispatch
    (pointwise.py)."""
    if lanes == 8:
        if channels % CHANNELS:
            return None
        return AVX2_LANES if channels >= BLOCKED_MIN_AVX2 and width % AVX2_PIXELS == 0 else None
    shape = [height, width] if strided and height > 1 else [height * width]  # IREE drops a unit height
    if lanes != 16:
        return None
    if channels % CHANNELS == 0 and channels >= BLOCKED_MIN_AVX512 and _blocked_pixels(shape, WIDE_LANES):
        return CHANNELS if width <= SMALL_WIDTH else WIDE_LANES
    block = _projection_block(channels) if projection else None
    return block if block and _blocked_pixels(shape, block) else None


def _projection_block(channels: int) -> int | None:
    """Output channels per block for an AVX-512 projection of `channels` outputs: the widest of
    PROJECTION_BLOCKS that makes at least two blocks, else None. (IREE folds a single block's
    unit loop and data-tiles the product again.)"""
    return next((b for b in PROJECTION_BLOCKS if channels % b == 0 and channels >= 2 * b), None)


def _blocked_pixels(pixels: list[int], block: int) -> int | None:
    """AVX-512 register-tile pixels for a product in blocks of `block` channels over `pixels`,
    [OH, OW] (strided: the tile is part of a row) or [OH * OW] (folded): the whole row up to
    SMALL_WIDTH, else 7 or 8 pixels that divide the row (or the folded loop), or for blocks
    narrower than WIDE_LANES (one register or less a pixel) up to NARROW_BLOCK_PIXELS; None when
    none does."""
    row = pixels[-1]
    if len(pixels) == 2 and row <= SMALL_WIDTH:
        sizes: tuple[int, ...] = (row,)
    else:
        sizes = (NARROW_BLOCK_PIXELS, 14, 8, 7) if block < WIDE_LANES else (7, 8)
    return next((size for size in sizes if row % size == 0), None)


def blocked_pointwise_tiles(out_shape: list[int], distribution: list[int], *, lanes: int,
                            workers: int) -> tuple[list[int], ...] | None:
    """The tiles for a 1x1 convolution with blocked weights (lowering/pointwise.py, loops oh, ow, f // B,
    f % B, c; IREE folds unstrided oh, ow into one pixel loop): a register tile of AVX2_PIXELS
    pixels (AVX-512: `_blocked_pixels`) x one block of B channels, AVX2_UNROLL input channels a
    step (AVX-512: REDUCTION_UNROLL, POINTWISE_UNROLL for 64-channel blocks), as for [C, F]
    weights; workgroups of CHANNELS channels and whole rows (`balanced`), or of the most pixels
    up to BLOCKED_GROUP_PIXELS that divide the pixel loop (`balanced` where some does). None when
    the shape does not fit (IREE's tiles then stay)."""
    block = out_shape[-1] if out_shape else None
    if len(out_shape) not in (3, 4) or block not in ((AVX2_LANES,) if lanes == 8 else (*PROJECTION_BLOCKS, CHANNELS)):
        return None
    assert block is not None
    per_group = max(1, CHANNELS // block)
    if out_shape[-2] % per_group:
        if lanes == 8:
            return None
        per_group = 1  # an odd count of 32-channel blocks (AVX-512 projections): one a workgroup
    pixels: int | None
    if lanes == 8:
        pixels = AVX2_PIXELS if out_shape[-3] % AVX2_PIXELS == 0 else None
        unroll = AVX2_UNROLL
    else:
        pixels = _blocked_pixels(out_shape[:-2], block)
        unroll = {CHANNELS: POINTWISE_UNROLL, WIDE_LANES: REDUCTION_UNROLL}.get(block, WIDE_UNROLL)
    if pixels is None:
        return None
    groups = out_shape[-2] // per_group
    if len(out_shape) == 4:
        height, width = out_shape[0], out_shape[1]
        rows = balanced_rows(height, distribution[0] if width <= MAX_PIXELS else 1, groups, workers)
        return ([rows, width, per_group, 0, 0], [1, pixels, 1, block, 0], [0, 0, 0, 0, unroll])
    total = out_shape[0]
    sizes = [g for g in range(pixels, BLOCKED_GROUP_PIXELS + 1, pixels) if total % g == 0]
    if not sizes:
        return None
    even = [g for g in sizes if balanced(total // g * groups, workers)]
    return ([(even or sizes)[-1], per_group, 0, 0], [pixels, 1, block, 0], [0, 0, 0, unroll])


def transpose_tiles(image: list[int] | None, workers: int) -> dict[str, list[int]] | None:
    """Tiles for the NCHW -> NHWC transpose of a model's image input, [C, H, W] with at most
    TRANSPOSE_CHANNELS channels and a width of whole vectors, else None to keep IREE's: each
    vector step reads 16 pixels of every channel and writes them as one run of C x 16 floats;
    workgroups of at least TRANSPOSE_ROWS rows, as many as keep their count `balanced` (IREE's
    own: 16 x 1 x 16 tiles, the channel vector padded from 3 to 16)."""
    if image is None or len(image) != 3 or not 0 < image[0] <= TRANSPOSE_CHANNELS or image[2] % 16:
        return None
    c, h, w = image
    return {"distribution": [c, balanced_rows(h, TRANSPOSE_ROWS, 1, workers), w], "vector_common_parallel": [c, 1, 16]}


def batch_mmt4d_tiles(out_shape: list[int] | None, distribution: list[int], vector: list[int], reduction: list[int],
                      *, workers: int) -> Tiles | None:
    """Workgroups for a Winograd batched product (batch_mmt4d, result [36, M1, N1, M0, N0]):
    whole batches with all their rows and columns, in `winograd_groups` workgroups (6 of 6
    batches on two workers, where 36 one-batch workgroups would split 20 / 16); None for other
    shapes."""
    if len(distribution) != 7 or out_shape is None or len(out_shape) != 5 or out_shape[0] != WINOGRAD_BATCH:
        return None
    return ([WINOGRAD_BATCH // winograd_groups(workers), out_shape[1], 0, 0, 0, 0, 0], vector, reduction)


def transform_tiles(extents: list[int], coef_dim: int, distribution: list[int],
                    vector: list[int]) -> tuple[list[int], list[int]] | None:
    """Tiles for a Winograd transform pass (lowering/winograd.py `_combine`: sum_k
    coef_k[d] * x_k with the coefficient vectors indexed by loop `coef_dim`), or None to keep
    IREE's. IREE vectorizes the channels with one transform row per step and splits the rows
    across workgroups, so every workgroup re-reads the whole input for its row. Here each vector
    step computes all rows of the transform from one load of the inputs (vector size along
    `coef_dim` = its extent), and workgroups are split along the next tiled loops instead, down
    to IREE's workgroup count."""
    rank = len(extents)
    if not (len(distribution) == len(vector) == rank) or not 0 <= coef_dim < rank - 1 or vector[-1] != 16:
        return None

    def count(d: list[int]) -> int:
        return math.prod(-(-e // t) if t else 1 for e, t in zip(extents, d))

    want = count(distribution)
    dist = list(distribution)
    dist[coef_dim] = extents[coef_dim]
    for i in range(rank - 1):
        while i != coef_dim and count(dist) < want and dist[i] > 1:
            dist[i] = -(-dist[i] // 2)
    vec = [1] * rank
    vec[coef_dim], vec[-1] = extents[coef_dim], vector[-1]
    return dist, vec


def winograd_groups(workers: int) -> int:
    """Workgroups for the 36 batches: the fewest, at least WINOGRAD_GROUPS_PER_WORKER per
    worker, that divide 36 and are `balanced` (12 on two workers, 3 on one), else 36."""
    counts = [n for n in range(1, WINOGRAD_BATCH + 1) if WINOGRAD_BATCH % n == 0]
    return next((n for n in counts if n >= WINOGRAD_GROUPS_PER_WORKER * workers and balanced(n, workers)),
                WINOGRAD_BATCH)


def matvec_tiles(k: int, distribution: list[int], vector: list[int], reduction: list[int],
                 *, workers: int, extents: list[int] | None = None) -> Tiles | None:
    """The tile choice for a one-row product marked MATVEC (contract.py): one output row per vector
    step and the reduction (extent `k`) as the vector, or None to keep IREE's; `extents` (the
    loop extents, when known) lets a single tiled loop's workgroups be `balanced`."""
    if not (len(distribution) == len(vector) == len(reduction)) or sum(1 for r in reduction if r) != 1:
        return None
    return (_balanced_distribution(distribution, extents, workers), [0 if r else 1 for r in reduction],
            [min(k, MATVEC_VECTOR) if r else 0 for r in reduction])


def unit_width(lanes: int | None) -> int | None:
    """Output columns per vector step of the column-vector form (lowering/matvec.unit_products) on a CPU
    with `lanes` float32 lanes (two registers), or None when the target is unknown."""
    return 2 * lanes if lanes else None


def unit_tiles(out_shape: list[int] | None, lanes: int, workers: int) -> Tiles | None:
    """The tiles for a column-vector product (lowering/matvec.unit_products, loops block, column, k; every
    result [blocks, 2 * lanes], or [2 * lanes] where IREE dropped a single block): all columns of
    a block per vector step, UNIT_REDUCTION reduction steps each, workgroups of whole blocks,
    UNIT_GROUPS_PER_WORKER per worker where the blocks divide so; None for other shapes (IREE's
    own: 4 columns, 16 reduction lanes)."""
    width = unit_width(lanes)
    if not width or not out_shape or out_shape[-1] != width or len(out_shape) > 2:
        return None
    if len(out_shape) == 1:
        return [width, 0], [width, 0], [0, UNIT_REDUCTION]
    blocks = out_shape[0]
    groups = next((g for g in (UNIT_GROUPS_PER_WORKER * workers, workers) if blocks % g == 0), blocks)
    return [blocks // groups, width, 0], [1, width, 0], [0, 0, UNIT_REDUCTION]


def _balanced_distribution(distribution: list[int], extents: list[int] | None, workers: int) -> list[int]:
    """`distribution` with its first tiled loop's size made `balanced_rows` over `extents`."""
    tiled = [i for i, d in enumerate(distribution) if d]
    if len(tiled) != 1 or extents is None or len(extents) != len(distribution):
        return distribution
    i = tiled[0]
    return distribution[:i] + [balanced_rows(extents[i], distribution[i], 1, workers, split=False)] + distribution[i + 1:]


def column_sum_tiles(channels: int, lanes: int, workers: int) -> Tiles | None:
    """The tiles for a sum over the rows of a [rows, `channels`] input (a global pooling, loops
    channel, row): `lanes` channels per vector step, one row at a time, workgroups of whole
    vectors (`plan_workers` of them where the channels divide so, else one per worker, else
    one); None when the channels are not whole vectors."""
    if channels % lanes:
        return None
    groups = next((g for g in (plan_workers(workers), workers) if channels % (g * lanes) == 0), 1)
    return [channels // groups, 0], [lanes, 0], [0, 1]


def softmax_tiles(row: int, tiles: dict[str, list[int]]) -> dict[str, list[int]] | None:
    """Tiles for one op of a softmax dispatch (a row maximum, a row sum of exponentials, the
    normalization, their fills) over rows of `row` elements, or None to keep IREE's. `tiles`
    maps lowering_config keys to lists; the row is the innermost loop. Two rows per step with
    the row (up to 128) as the vector."""
    common = tiles.get("vector_common_parallel")
    if row % 16 or not common or len(common) < 2:
        return None
    out = dict(tiles)
    inner = [k for k in ("vector_reduction", "vector_inner_parallel") if k in tiles]
    if not inner:  # a fill of the per-row results: the parallel loops only
        out["vector_common_parallel"] = common[:-1] + [SOFTMAX_ROWS]
        return out
    if common[-1] != 0 or len(common) < 3:
        return None
    out["vector_common_parallel"] = common[:-2] + [SOFTMAX_ROWS, 0]
    for k in inner:
        out[k] = tiles[k][:-1] + [min(row, SOFTMAX_VECTOR)]
    return out


def inner_vector(extent: int, lanes: int, packed: int = 1) -> int:
    """The largest `vector_inner_parallel` size for a loop of `extent` (in units of `packed`
    elements: a pack's outer loop over tiles of `packed`) in an op fused after a row reduction:
    one register of `lanes` float32 elements, or the largest divisor of the extent below that.

    IREE's own choice for these ops changes from one compile to the next (the same module got 1,
    16 or the whole 256-element row on 2026-11-26), and the whole-row form puts a row tile of
    every fused value in vector registers: over IREE's vector size limit on AVX2 for a 128 x 256
    LayerNorm feeding a data-tiled matmul. Capped at one register, it fits on every target."""
    want = max(1, lanes // packed) if lanes % packed == 0 else 1
    return max(d for d in range(1, min(want, extent) + 1) if extent % d == 0)


STACK_LIMIT = 32768   # bytes: IREE's llvm-cpu `max_stack_allocation_size`
STACK_SHARE = 0.75    # the part of it row tiles of a fused reduction dispatch may take


def reduction_rows(width: int, distribution: int, vector: int, values: int,
                   element_bytes: int = 4) -> tuple[int, int] | None:
    """(workgroup rows, vector rows) for a dispatch rooted at a reduction over rows of `width`
    elements with `values` fused consumers of row shape (element-wise ops, data-tiling packs),
    or None to keep IREE's (`distribution`, `vector`) rows.

    IREE keeps up to two workgroup tiles (a value with several consumers, such as a residual sum
    feeding a LayerNorm and the next residual, and the normalized rows before their pack) and a
    vector-step tile of each fused value on the stack: about 2 x distribution + values x vector
    rows of `width` elements. IREE's 16 and 8 rows overflow its stack limit at width 256 (a
    pre-norm transformer's LayerNorm feeding a data-tiled matmul, on AVX2 and AVX-512 alike);
    here the rows shrink, powers of two, until they fit STACK_SHARE of the limit. The data-tiling
    pack's row tile need not divide the workgroup rows (IREE packs partial tiles)."""
    budget = int(STACK_LIMIT * STACK_SHARE) // (width * element_bytes)
    if 2 * distribution + values * vector <= budget:
        return None
    step = 1
    while step * 2 <= vector and step * 2 * values <= budget // 2:
        step *= 2
    rows = step
    while rows * 2 <= distribution and 2 * rows * 2 <= budget - values * step:
        rows *= 2
    if 2 * rows + values * step > budget:
        return None  # rows this wide do not fit whatever the tiles: keep IREE's (and its error)
    return rows, step
