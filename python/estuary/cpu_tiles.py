"""`cpu-tiles`: register tiles for convolutions and recurrent matrix-vector products on AVX-512
and AVX2 CPUs (the AVX2 rules: `_conv_tiles_avx2`, `_pointwise_tiles_avx2`, `blocked_pointwise_tiles`,
`depthwise_tiles`).

IREE's llvm-cpu heuristics give every direct convolution a 7-or-8-pixel x 16-channel register
tile (one zmm register per pixel), which is load-bound. Measured on Zen 5 (README,
"Performance"), four 3x3 convolutions on one core: 32 output channels per register (two zmm
registers per pixel), whole 14-pixel rows, and 8 input channels per reduction step took 56x56x64
4.05 -> 3.6 ms, 28x28x128 4.4 -> 3.5 ms, 14x14x256 5.3 -> 4.0 ms; at width 7, 7 pixels x 64
channels with a 4-channel step (chosen on Zen 4) stays best. The 1x1 convolutions that
passes/lowering/pointwise.py builds with [C, F] weights get the same register tiles: MobileNet's
14x14x512x512 one 630 -> 420 us; at width <= 7 they step 2 input channels at a time, not 4 (with 4,
LLVM spills three of the 28 accumulators): 7x7x1024x1024 342 -> 279 us on two threads, 633 -> 539
on one. The NCHW -> NHWC transpose of a model's image input gets 16-pixel x all-channel vector
steps instead of IREE's 16 x 1 x 16 (the 3 channels padded to 16): 3x224x224 80 -> 27 us.
Softmax dispatches take two rows per step with the row (up to 128) as the vector instead of
IREE's 8 x 16: a Transformer's 4x128x128 one 42 -> 18 us.

A batch-1 recurrent step (LSTM/GRU), and any one row times a small constant matrix, is one
multi-result reduction tagged `estuary.matvec` (passes/lowering/matvec.py). IREE
gives it 4-row x 16-column tiles: each gate's 16 partial sums form one dependency chain of
FMAs. One row at a time with the whole reduction (up to 256 wide) as the vector keeps 16
independent accumulators per gate: the LSTM benchmark went from 0.70 to 0.31 ms.

The batched matmul of a Winograd convolution (passes/lowering/winograd.py; 36 batches, data-tiled
onto IREE's batch_mmt4d) gets workgroups of whole batches with all their rows and columns instead
of IREE's 1 x 2 tiles of 16 (hundreds of workgroups of well under a microsecond each).

The four transform passes of each Winograd convolution (element-wise generics that weight six
strided inputs by constant coefficient vectors) compute all six (or four) transform rows per
vector step from one load of their inputs, instead of IREE's one row per step and per workgroup
(`transform_tiles`): ResNet-18's transform passes 1414 -> 670 us on one core.

Workgroup counts: IREE's workers claim a dispatch's workgroups one at a time while there are
fewer than 8 per worker, else 8 at a time, so on two workers 56 equal workgroups split 32 / 24
and 36 split 20 / 16. The rules keep counts that split evenly (`balanced`): the Winograd products
in 6 workgroups of 6 batches (ResNet-18 8.37 -> 8.14 ms on two threads, interleaved), the
7x7 convolutions and the strided 1x1 shortcuts with more rows per workgroup, the image
transpose in 16 workgroups, a 1000-class classifier's products in 10 (ResNet-18 8.34 -> 8.12
and 7.99 -> 8.03 ms, MobileNet 3.63 -> 3.58 and 3.04 -> 3.03 ms in two interleaved runs each).
Convolutions at most 7 wide go further: one workgroup per worker, each an equal block of the
output channels (`conv_tiles`; ResNet-18's 7x7x512 one 589 -> 505 us on two threads).

IREE only lets a tile choice survive for batch-1 convolutions after its own configuration
step (a tuning spec is dropped when it re-inserts the unit batch dim), so the compile runs in
two phases: up to `executable-configurations`, where this module rewrites the chosen
`lowering_config`s, then on from there. The phase controls are in IREE's C API but not in its
Python wrapper; `phased_compile` binds them with ctypes and reports None when they are missing,
and the caller then compiles in one go.
"""
import ctypes
import math
import os
import re

from iree.compiler import ir

PIPELINE = "ConvTileAndDecomposeExpert"
SMALL_WIDTH = 7       # outputs at most this wide: 7 pixels x 64 channels, 4-channel reduction steps
CHANNELS = 64         # output channels per register tile there, and per workgroup everywhere
REDUCTION_UNROLL = 4  # input channels per reduction step at width <= 7 (8 spills, 1 stalls)
POINTWISE_UNROLL = 2  # ... for the 1x1 convolutions there (4 spills three accumulators on Zen 5)
WIDE_LANES = 32       # output channels per register tile on wider outputs (two zmm registers)
WIDE_UNROLL = 8       # input channels per reduction step on wider outputs
FULL_TILE_ACCUMULATORS = 24  # register tiles with this many zmm accumulators or more ...
FULL_TILE_UNROLL = 2  # ... step 2 input channels (14x14x256 stride 2 on one core: 0.67-0.72 -> 0.54-0.55 ms)
MAX_PIXELS = 14       # widest register tile: 14 pixels x 2 registers = 28 of the 32 zmm registers
WORKGROUP_PIXELS = 392  # output pixels per workgroup wider than 14: whole rows, 7 of 56, 14 of 28
ROW_WORKGROUP_PIXELS = 98  # ... and at widths 8-14 (one register tile per row): 7 rows of 14
FULL_WINDOW = 576      # KH*KW*C those were measured for (3x3x64); smaller windows: see _work_factor
SOFTMAX_ROWS = 2      # softmax rows per vector step (IREE: 8)
SOFTMAX_VECTOR = 128  # softmax row elements per vector op (IREE: 16)
MATVEC_TAG = "estuary.matvec"   # set by passes/lowering/matvec.py
UNIT_TAG = "estuary.unit_matvec"  # ... its column-vector form (matvec.unit_products)
UNIT_REDUCTION = 8    # reduction steps per vector step there
UNIT_GROUPS_PER_WORKER = 2  # workgroups per worker there
MATVEC_VECTOR = 256   # reduction elements per vector op (256 > 128 > 64 > IREE's 16, measured)
TRANSPOSE_CHANNELS = 4  # image inputs with at most this many channels get `transpose_tiles`
TRANSPOSE_ROWS = 8    # image rows per workgroup there, at least (`balanced_rows`; 4-16 measured the same)
WINOGRAD_BATCH = 36   # the 6x6 tile positions of passes/lowering/winograd.py
WINOGRAD_GROUPS_PER_WORKER = 3  # workgroups per worker there, each of whole batches (2 or 6: slower)
TRANSFORM_TERMS = 3   # a Winograd transform pass sums 6 coefficient-weighted inputs (winograd.py `_combine`)
TRANSFORM_ROWS = 8    # ... over 6 (input) or 4 (output) transform rows: the vector size along them
# AVX2 (16 ymm registers of 8 lanes; measured on a Zen 4 whose VM hides AVX-512, README
# "Decisions", AVX2 forms): 2 pixels x 32 channels (8 accumulators) per register tile, 8 input
# channels per reduction step; at width 7, 7 pixels x 32 (direct) or x 16 (1x1) channels
AVX2_PIXELS = 2
AVX2_LANES = 32
AVX2_UNROLL = 8
AVX2_SMALL_POINTWISE_LANES = 16
AVX2_SMALL_POINTWISE_UNROLL = 2
BLOCKED_GROUP_PIXELS = 98  # pixels per workgroup at most for blocked 1x1 products (half a 14x14 image)
# AVX-512 blocked 1x1 products (measured on a Zen 4 with AVX-512): products with at least
# BLOCKED_MIN_AVX512 output channels take weights in blocks of WIDE_LANES channels (CHANNELS at
# width <= SMALL_WIDTH); narrower products gained nothing and pay a copy into the next layer's
# padded buffer (IREE does not write through the blocked result's reshape)
BLOCKED_MIN_AVX2 = 128
BLOCKED_MIN_AVX512 = 512


WORKERS = max(1, min(os.cpu_count() or 1, 64))  # the host's cores: the runtime's default worker count
CLAIM = 8  # IREE's workers claim workgroups 8 at a time once a dispatch has 8 per worker, else 1


def balanced(count, workers=None):
    """Whether `count` equal workgroups split evenly between the workers under IREE's claims
    (runtime/src/iree/hal/drivers/local_task: one at a time below CLAIM per worker, else CLAIM
    at a time; 56 workgroups on two workers go 32 / 24, 36 go 20 / 16)."""
    workers = workers or WORKERS
    return count % (workers if count < workers * CLAIM else workers * CLAIM) == 0


def balanced_rows(extent, rows, others=1):
    """The smallest workgroup size of at least `rows` along a loop of `extent`, dividing it, for
    which ceil(extent / size) * `others` workgroups are `balanced`; `rows` when none is."""
    for size in range(max(1, rows), extent + 1):
        if extent % size == 0 and balanced(extent // size * others):
            return size
    return rows


def _ints(text, key):
    m = re.search(key + r" = \[([0-9, ]*)\]", text)
    return [int(x) for x in m.group(1).split(",") if x.strip()] if m else None


def _work_factor(window):
    """How many times WORKGROUP_PIXELS a workgroup takes for a window of `window` = KH*KW*C
    multiply-adds per output: a power of two, so that each workgroup does at least a 3x3x64
    window's work (1 for larger windows or when unknown)."""
    factor = 1
    while window and window * factor * 2 <= FULL_WINDOW:
        factor *= 2
    return factor


def conv_tiles(out_shape, distribution, vector, reduction, window=None, lanes=16):
    """The tile choice for a 2-D NHWC convolution (loops n, oh, ow, f, kh, kw, c), or None to
    keep IREE's. `out_shape` is [N, OH, OW, F]; the lists are IREE's chosen tile sizes; `window`
    is KH*KW*C when known; `lanes` the target's float32 vector lanes (8: `_conv_tiles_avx2`).
    The rules below are AVX-512's (16 lanes).

    Width <= 7: rows of 7 pixels x 64 channels; workgroups of all rows and, with several
    workers, one equal block of the output channels per worker (ResNet-18's 7x7x512
    convolutions on two threads: one alone 589 -> 505 us against 8 blocks of 64, the model
    7.27-7.31 -> 7.14-7.18 ms interleaved), on one worker blocks of 64 (one core: 885 us, one
    512-channel block 925, 1-row workgroups 944). When the channels do not split so, as few rows
    per workgroup as keep the count `balanced`. Wider: rows of up to 14
    pixels (the whole row when it fits, else IREE's 7 or 8) x 32 channels, 8 input channels per
    reduction step (2 for
    rows of 12-14 pixels, whose 24-28 accumulators leave LLVM too few registers for 8).
    Workgroups wider than 14: about 392 output pixels (whole rows) x 64 channels; with two
    threads, fewer and larger workgroups were 12-16 % faster than 2-row ones. Widths 8-14: equal
    groups of whole rows, at most about 98 pixels, x 32 channels (7 rows of 14, 5 of 10, all 8 of
    8): three 3x3 convolutions on two threads, 14x14x256 1.92-2.03 -> 1.57-1.67 ms (onnxruntime
    1.31-1.37), 10x10x256 1.06 -> 0.88 (0.75), 8x8x512 2.97 -> 2.68 (2.13). Smaller windows than
    3x3x64 scale the wide workgroups up (`_work_factor`): ResNet's 7x7 stem over 3 channels (147
    per output) takes 7 rows of 112 instead of 3, 0.70 -> 0.625 ms with the input transpose, on two
    threads (onnxruntime 0.50-0.51). Measured per width in the README."""
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
        block = out_shape[3] // WORKERS if WORKERS > 1 else CHANNELS
        if block % CHANNELS == 0:  # one block of output channels per worker, all rows
            return ([0, out_shape[1], pixels, block, 0, 0, 0], [1, 1, pixels, CHANNELS, 0, 0, 0],
                    reduction[:6] + [REDUCTION_UNROLL])
        rows = balanced_rows(out_shape[1], 1, out_shape[3] // CHANNELS)
        return ([0, rows, pixels, CHANNELS, 0, 0, 0], [1, 1, pixels, CHANNELS, 0, 0, 0],
                reduction[:6] + [REDUCTION_UNROLL])
    height, channels = out_shape[1], CHANNELS
    if width <= MAX_PIXELS:
        pixels, channels = width, WIDE_LANES
        groups = -(-height * width // ROW_WORKGROUP_PIXELS)
        rows = -(-height // groups)  # equal row groups: 10 rows as 5 + 5 (9 + 1 was 1.6x slower)
    else:
        rows = min(height, max(1, WORKGROUP_PIXELS * _work_factor(window) // width))
    if width % pixels:
        return None
    # 12-14 pixels x 2 registers: with 8-channel steps LLVM spills accumulators
    unroll = FULL_TILE_UNROLL if pixels * WIDE_LANES // 16 >= FULL_TILE_ACCUMULATORS else WIDE_UNROLL
    return ([0, rows, width, channels, 0, 0, 0], [1, 1, pixels, WIDE_LANES, 0, 0, 0],
            reduction[:6] + [unroll])


def image_conv_tiles(out_shape, filt, distribution, vector, reduction):
    """The AVX-512 tile choice for a convolution of an image (at most TRANSPOSE_CHANNELS input
    channels, filter `filt` [KH, KW, C, F]) into WIDE_LANES output channels, which `conv_tiles`
    leaves to IREE (its rules need multiples of CHANNELS), or None: IREE's pixels x WIDE_LANES
    channels (two zmm registers a pixel, IREE: one) with a whole filter row of every channel per
    reduction step (IREE: the channels only), in `balanced` workgroups of at least 8 whole rows.
    MobileNet's 3x3 stride-2 stem (3 -> 32 channels, 112x112) on one core: 332-414 -> 328-330 us
    (onnxruntime's 313 with its input reorder; README, "Performance")."""
    if len(distribution) != 7 or len(vector) != 7 or len(reduction) != 7 or len(out_shape) != 4 or len(filt) != 4:
        return None
    _, kw, channels, f = filt
    height, width, pixels = out_shape[1], out_shape[2], vector[2]
    if f != WIDE_LANES or not 0 < channels <= TRANSPOSE_CHANNELS or vector[3] != 16 or not 0 < pixels <= 8 \
            or width % pixels or width <= MAX_PIXELS:
        return None
    return ([0, balanced_rows(height, TRANSPOSE_ROWS), width, f, 0, 0, 0], [1, 1, pixels, f, 0, 0, 0],
            [0, 0, 0, 0, 1, kw, channels])


def _conv_tiles_avx2(out_shape, distribution, reduction):
    """`conv_tiles` on AVX2 (IREE's 8-lane choice): register tiles of AVX2_PIXELS pixels x
    AVX2_LANES channels at even widths (IREE's workgroup rows), else at widths up to 7 the whole
    row x AVX2_LANES channels in workgroups of all rows and 64 channels. IREE's own tiles (4
    pixels x 4 channels x 8 input channels) ran ResNet-18's 7x7x512 convolutions at 14-19 GFLOP/s
    on two threads; these at 85-100 (README)."""
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


def depthwise_tiles(out_shape, distribution, vector, reduction):
    """The tile choice for a depthwise convolution (loops n, oh, ow, c, kh, kw), or None to keep
    IREE's: when IREE's register tile of pixels does not divide an output at most 7 wide (2 on
    AVX2 for MobileNet's 7x7 layers, whose remainder pixel then runs unvectorized), the whole row.
    MobileNet's 7x7x512 and 7x7x1024 depthwise convolutions on AVX2, two threads: 125 and 169
    -> 21 and 40 us (onnxruntime 25 and 17). Applies to any vector width (IREE's AVX-512 choice
    at width 7 is already 7 pixels)."""
    if not (len(distribution) == len(vector) == len(reduction) == 6) or len(out_shape) != 4:
        return None
    width, pixels = out_shape[2], vector[2]
    if not 0 < pixels < width <= SMALL_WIDTH or width % pixels == 0:
        return None
    return (distribution, vector[:2] + [width] + vector[3:], reduction)


def pointwise_tiles(out_shape, distribution, vector, reduction, lanes=16):
    """The tile choice for a 1x1 convolution built by pointwise.py (loops oh, ow, f, c), or None
    to keep IREE's: the register tiles of `conv_tiles` (7 pixels x 64 channels at width <= 7,
    else IREE's 7-8 pixels x 32 channels), 4 input channels per reduction step; workgroups of
    whole rows (IREE's count up to width 14, one row wider), more rows when that keeps the
    workgroup count `balanced` (a 28x28x128 stride-2 shortcut: 4 rows, 14 workgroups, not 56)."""
    if not (len(distribution) == len(vector) == len(reduction) == 4) or len(out_shape) != 3:
        return None
    if lanes == 8:
        return _pointwise_tiles_avx2(out_shape, distribution)
    width, pixels, iree_lanes = out_shape[1], vector[1], vector[2]
    if out_shape[2] % CHANNELS or iree_lanes != 16 or not 0 < pixels <= 8 or width % min(pixels, width):
        return None
    pixels = min(pixels, width)
    small = width <= SMALL_WIDTH
    channels = CHANNELS if small else WIDE_LANES
    rows = balanced_rows(out_shape[0], distribution[0] if width <= MAX_PIXELS else 1, out_shape[2] // CHANNELS)
    return ([rows, width, CHANNELS, 0], [1, pixels, channels, 0],
            [0, 0, 0, POINTWISE_UNROLL if small else REDUCTION_UNROLL])


def _pointwise_tiles_avx2(out_shape, distribution):
    """`pointwise_tiles` on AVX2: AVX2_PIXELS pixels x AVX2_LANES channels, 8 input channels per
    step, at even widths; at width 7, 7 pixels x 16 channels, 2 per step; workgroups of whole
    rows as in `pointwise_tiles`.
    MobileNet's 1x1 products on two threads: 9.05 ms with IREE's 8 x 8 x 16-lane tiles, 7.37
    with these (README)."""
    width, channels = out_shape[1], out_shape[2]
    if channels % CHANNELS:
        return None
    if width % AVX2_PIXELS == 0:
        pixels, lanes, unroll = AVX2_PIXELS, AVX2_LANES, AVX2_UNROLL
    elif width <= SMALL_WIDTH:
        pixels, lanes, unroll = width, AVX2_SMALL_POINTWISE_LANES, AVX2_SMALL_POINTWISE_UNROLL
    else:
        return None
    rows = balanced_rows(out_shape[0], distribution[0] if width <= MAX_PIXELS else 1, channels // CHANNELS)
    return ([rows, width, CHANNELS, 0], [1, pixels, lanes, 0], [0, 0, 0, unroll])


def pointwise_block(height, width, channels, lanes, strided=False, projection=False):
    """Output channels per weight block for a 1x1 product of `channels` outputs, `height` x
    `width` pixels (pointwise.py stores its weights [F / block, C, block]), or None for [C, F]
    weights. AVX2: AVX2_LANES, at least BLOCKED_MIN_AVX2 channels, even widths. AVX-512:
    WIDE_LANES (CHANNELS at width <= SMALL_WIDTH), at least BLOCKED_MIN_AVX512 channels, where
    `_blocked_pixels` has a register tile (IREE folds an unstrided product's pixel loops).
    A `projection` (a product of a depthwise convolution's result that no padding follows) takes
    blocks of WIDE_LANES from 2 * WIDE_LANES channels on AVX-512: as [C, F] IREE data-tiles it
    and packs its input inside the depthwise convolution's dispatch (pointwise.py)."""
    if lanes == 8:
        if channels % CHANNELS:
            return None
        return AVX2_LANES if channels >= BLOCKED_MIN_AVX2 and width % AVX2_PIXELS == 0 else None
    shape = [height, width] if strided and height > 1 else [height * width]  # IREE drops a unit height
    if lanes != 16 or not _blocked_pixels(shape):
        return None
    if channels % CHANNELS == 0 and channels >= BLOCKED_MIN_AVX512:
        return CHANNELS if width <= SMALL_WIDTH else WIDE_LANES
    if projection and channels % WIDE_LANES == 0 and channels >= 2 * WIDE_LANES:
        return WIDE_LANES
    return None


def _blocked_pixels(pixels):
    """AVX-512 register-tile pixels for a blocked product over `pixels`, [OH, OW] (strided: the
    tile is part of a row) or [OH * OW] (folded): the whole row up to SMALL_WIDTH, else 7 or 8
    pixels that divide the row (or the folded loop); None when none does."""
    row = pixels[-1]
    sizes = (row,) if len(pixels) == 2 and row <= SMALL_WIDTH else (7, 8)
    return next((size for size in sizes if row % size == 0), None)


def blocked_pointwise_tiles(out_shape, distribution, lanes=8):
    """The tiles for a 1x1 convolution with blocked weights (pointwise.py, loops oh, ow, f // B,
    f % B, c; IREE folds unstrided oh, ow into one pixel loop): a register tile of AVX2_PIXELS
    pixels (AVX-512: `_blocked_pixels`) x one block of B channels, AVX2_UNROLL input channels a
    step (AVX-512: REDUCTION_UNROLL, POINTWISE_UNROLL for 64-channel blocks), as for [C, F]
    weights; workgroups of CHANNELS channels and whole rows (`balanced`), or of the most pixels
    up to BLOCKED_GROUP_PIXELS that divide the pixel loop (`balanced` where some does). None when
    the shape does not fit (IREE's tiles then stay). On AVX2, MobileNet's 1x1 products went 6.99
    -> 6.34-6.42 ms in all; on AVX-512, its 14x14x512x512 ones 989 -> 924 us and the 7x7 ones
    593 / 1192 -> 499 / 983 us on one core (README, "Performance")."""
    block = out_shape[-1] if out_shape else None
    if len(out_shape) not in (3, 4) or block not in ((AVX2_LANES,) if lanes == 8 else (WIDE_LANES, CHANNELS)):
        return None
    per_group = max(1, CHANNELS // block)
    if out_shape[-2] % per_group:
        if lanes == 8:
            return None
        per_group = 1  # an odd count of 32-channel blocks (AVX-512 projections): one a workgroup
    if lanes == 8:
        pixels = AVX2_PIXELS if out_shape[-3] % AVX2_PIXELS == 0 else None
        unroll = AVX2_UNROLL
    else:
        pixels = _blocked_pixels(out_shape[:-2])
        unroll = REDUCTION_UNROLL if block == WIDE_LANES else POINTWISE_UNROLL
    if pixels is None:
        return None
    groups = out_shape[-2] // per_group
    if len(out_shape) == 4:
        height, width = out_shape[0], out_shape[1]
        rows = balanced_rows(height, distribution[0] if width <= MAX_PIXELS else 1, groups)
        return ([rows, width, per_group, 0, 0], [1, pixels, 1, block, 0], [0, 0, 0, 0, unroll])
    total = out_shape[0]
    sizes = [g for g in range(pixels, BLOCKED_GROUP_PIXELS + 1, pixels) if total % g == 0]
    if not sizes:
        return None
    even = [g for g in sizes if balanced(total // g * groups)]
    return ([(even or sizes)[-1], per_group, 0, 0], [pixels, 1, block, 0], [0, 0, 0, unroll])


def transpose_tiles(image):
    """Tiles for the NCHW -> NHWC transpose of a model's image input, [C, H, W] with at most
    TRANSPOSE_CHANNELS channels and a width of whole vectors, else None to keep IREE's: each
    vector step reads 16 pixels of every channel and writes them as one run of C x 16 floats;
    workgroups of at least TRANSPOSE_ROWS rows, as many as keep their count `balanced`. IREE's 16 x 1 x 16 tiles (the channel vector padded from 3 to 16) took
    80 -> 27 us for 3x224x224 on two threads, 127 -> 31 on one."""
    if image is None or len(image) != 3 or not 0 < image[0] <= TRANSPOSE_CHANNELS or image[2] % 16:
        return None
    c, h, w = image
    return {"distribution": [c, balanced_rows(h, TRANSPOSE_ROWS), w], "vector_common_parallel": [c, 1, 16]}


def batch_mmt4d_tiles(out_shape, distribution, vector, reduction):
    """Workgroups for a Winograd batched product (batch_mmt4d, result [36, M1, N1, M0, N0]):
    whole batches with all their rows and columns, in `_winograd_groups` workgroups (6 of 6
    batches on two workers, where 36 one-batch workgroups would split 20 / 16); None for other
    shapes."""
    if len(distribution) != 7 or out_shape is None or len(out_shape) != 5 or out_shape[0] != WINOGRAD_BATCH:
        return None
    return ([WINOGRAD_BATCH // _winograd_groups(), out_shape[1], 0, 0, 0, 0, 0], vector, reduction)


def transform_tiles(extents, coef_dim, distribution, vector):
    """Tiles for a Winograd transform pass (passes/lowering/winograd.py `_combine`: sum_k
    coef_k[d] * x_k with the coefficient vectors indexed by loop `coef_dim`), or None to keep
    IREE's. IREE vectorizes the channels with one transform row per step and splits the rows
    across workgroups, so every workgroup re-reads the whole input for its row. Here each vector
    step computes all rows of the transform from one load of the inputs (vector size along
    `coef_dim` = its extent), and workgroups are split along the next tiled loops instead, down
    to IREE's workgroup count. One core, ResNet-18's four 56x56x64 convolutions: the row pass
    268 -> 84 us, the column pass 301 -> 114 us, the output row pass 47 -> 31 us (README)."""
    rank = len(extents)
    if not (len(distribution) == len(vector) == rank) or not 0 <= coef_dim < rank - 1 or vector[-1] != 16:
        return None

    def count(d):
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


def _winograd_groups():
    """Workgroups for the 36 batches: the fewest, at least WINOGRAD_GROUPS_PER_WORKER per
    worker, that divide 36 and are `balanced` (6 on two workers, 12 on four), else 36."""
    counts = [n for n in range(1, WINOGRAD_BATCH + 1) if WINOGRAD_BATCH % n == 0]
    return next((n for n in counts if n >= WINOGRAD_GROUPS_PER_WORKER * WORKERS and balanced(n)), WINOGRAD_BATCH)


def matvec_tiles(k, distribution, vector, reduction, extents=None):
    """The tile choice for a tagged recurrent product: one output row per vector step and the
    reduction (extent `k`) as the vector, or None to keep IREE's; `extents` (the loop extents,
    when known) lets a single tiled loop's workgroups be `balanced`."""
    if not (len(distribution) == len(vector) == len(reduction)) or sum(1 for r in reduction if r) != 1:
        return None
    return (_balanced_distribution(distribution, extents), [0 if r else 1 for r in reduction],
            [min(k, MATVEC_VECTOR) if r else 0 for r in reduction])


def unit_width(lanes):
    """Output columns per vector step of the column-vector form (matvec.unit_products) on a CPU
    with `lanes` float32 lanes (two registers), or None when the target is unknown."""
    return 2 * lanes if lanes else None


def unit_tiles(out_shape, lanes):
    """The tiles for a column-vector product (matvec.unit_products, loops block, column, k; every
    result [blocks, 2 * lanes], or [2 * lanes] where IREE dropped a single block): all columns of
    a block per vector step, UNIT_REDUCTION reduction steps each, workgroups of whole blocks,
    UNIT_GROUPS_PER_WORKER per worker where the blocks divide so; None for other shapes. IREE's
    own choice (4 columns, 16 reduction lanes) ran the LSTM benchmark 2x slower than the row form;
    these 8-12 % faster (README, "Performance")."""
    width = unit_width(lanes)
    if not width or not out_shape or out_shape[-1] != width or len(out_shape) > 2:
        return None
    if len(out_shape) == 1:
        return [width, 0], [width, 0], [0, UNIT_REDUCTION]
    blocks = out_shape[0]
    groups = next((g for g in (UNIT_GROUPS_PER_WORKER * WORKERS, WORKERS) if blocks % g == 0), blocks)
    return [blocks // groups, width, 0], [1, width, 0], [0, 0, UNIT_REDUCTION]


def _retune_unit_products(func, lanes):
    """Give a dispatch rooted at a column-vector product `unit_tiles`, and every other op in it
    (its fill and fused consumers: an LSTM's gate math) the same column vector steps."""
    ops = [op for op in _blocks(func) if "lowering_config" in op.attributes]
    roots = [op for op in ops if UNIT_TAG in op.attributes and op.results]
    if len(roots) != 1:
        return 0
    out = _shape(roots[0].results[0])
    choice = unit_tiles(out, lanes) if out is not None else None
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


def _balanced_distribution(distribution, extents):
    """`distribution` with its first tiled loop's size made `balanced_rows` over `extents`."""
    tiled = [i for i, d in enumerate(distribution) if d]
    if len(tiled) != 1 or extents is None or len(extents) != len(distribution):
        return distribution
    i = tiled[0]
    return distribution[:i] + [balanced_rows(extents[i], distribution[i])] + distribution[i + 1:]


_KEYS = ("distribution", "vector_common_parallel", "vector_reduction", "vector_inner_parallel")


def softmax_tiles(row, tiles):
    """Tiles for one op of a softmax dispatch (a row maximum, a row sum of exponentials, the
    normalization, their fills) over rows of `row` elements, or None to keep IREE's. `tiles`
    maps lowering_config keys to lists; the row is the innermost loop. Two rows per step with
    the row (up to 128) as the vector: a 4x128x128 softmax 81 -> 43 us on one core."""
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
        tiles = {k: v for k in _KEYS if (v := _ints(text, k)) is not None}
        choices.append(softmax_tiles(rows[0][-1], tiles))
    if None in choices:
        return 0
    for op, tiles in zip(ops, choices):
        op.attributes["lowering_config"] = _lowering_config(tiles)
    return 1


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


_POINTWISE_MAPS = ("(d0, d1, d2, d3) -> (d3, d2)", "(d0, d1, d2, d3) -> (d0, d1, d2)")


def _is_pointwise(op):
    """A 1x1 convolution as passes/lowering/pointwise.py builds it: loops (oh, ow, f, c), weights
    [C, F]. Matched by shape, since IREE rebuilds the op (dropping its tag) when it folds the
    unit batch dimension."""
    return _product_with_maps(op, _POINTWISE_MAPS)


_BLOCKED_MAPS = {  # weights, output: unstrided (IREE folded the pixel loops) and strided
    3: ("(d0, d1, d2, d3) -> (d1, d3, d2)", "(d0, d1, d2, d3) -> (d0, d1, d2)"),
    4: ("(d0, d1, d2, d3, d4) -> (d2, d4, d3)", "(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)"),
}


def _is_blocked_pointwise(op, out):
    """A 1x1 convolution with blocked weights as passes/lowering/pointwise.py builds it on AVX2
    (`out` is its result shape), matched by shape as `_is_pointwise` is."""
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


_TRANSPOSE_MAPS = ["affine_map<(d0, d1, d2) -> (d0, d1, d2)>", "affine_map<(d0, d1, d2) -> (d1, d2, d0)>"]


def _transposed_image(op):
    """The [C, H, W] shape a channels-last transpose copies (a generic with maps (c, h, w) ->
    (h, w, c) whose body only yields its input), else None."""
    if op.name != "linalg.generic" or "indexing_maps" not in op.attributes or len(op.operands) != 2:
        return None
    body = [o.operation.name for o in op.regions[0].blocks[0].operations]
    if body != ["linalg.yield"] or [str(m) for m in ir.ArrayAttr(op.attributes["indexing_maps"])] != _TRANSPOSE_MAPS:
        return None
    return _shape(op.operands[0])


def _retune_function(func, conv, lanes=16):
    changed = 0
    for op in _blocks(func):
        if "lowering_config" not in op.attributes or not op.results:
            continue
        image = _transposed_image(op)
        if image is not None:
            choice = transpose_tiles(image)
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
            choice = batch_mmt4d_tiles(out, *lists)
        elif MATVEC_TAG in op.attributes:
            reduced = _shape(op.operands[0]) if op.operands else None
            extents = out + [reduced[-1]] if reduced and out is not None else None
            choice = matvec_tiles(reduced[-1], *lists, extents=extents) if reduced else None
        elif _is_blocked_pointwise(op, out):
            choice = blocked_pointwise_tiles(out, lists[0], lanes)
        elif _is_pointwise(op):
            choice = pointwise_tiles(out, *lists, lanes=lanes) if out is not None else None
        elif conv and len(op.results) == 1:
            filt = _shape(op.operands[1]) if len(op.operands) > 1 else None  # [KH, KW, C, F]
            window = filt[0] * filt[1] * filt[2] if filt is not None and len(filt) == 4 else None
            if out is None:
                choice = None
            elif len(lists[0]) == 6:
                choice = depthwise_tiles(out, *lists)
            else:
                choice = conv_tiles(out, *lists, window=window, lanes=lanes)
                if choice is None and lanes == 16 and filt is not None and len(filt) == 4:
                    choice = image_conv_tiles(out, filt, *lists)
        if choice:
            op.attributes["lowering_config"] = _config(*choice)
            changed += 1
    return changed


def vector_lanes(target):
    """float32 lanes of the widest vector registers an llvm-cpu variant's target attribute
    enables: 16 with AVX-512, 8 with AVX2, else None (no rule here was measured there)."""
    features = re.search(r'cpu_features = "([^"]*)"', target)
    features = set(features.group(1).split(",")) if features else set()
    if "-avx512f" not in features and "+avx512f" in features:
        return 16
    if "-avx2" not in features and "+avx2" in features:
        return 8
    return None


def retune(module):
    """Rewrite the convolution and recurrent-product tiles of every AVX-512 or AVX2 llvm-cpu
    variant in a module configured by IREE (phase `executable-configurations`); returns how many
    ops changed."""
    changed = 0

    def visit(op, lanes):
        nonlocal changed
        if op.name == "hal.executable.variant":
            lanes = vector_lanes(str(op.attributes["target"]))
        if op.name == "func.func":
            info = op.attributes["translation_info"] if "translation_info" in op.attributes else None
            if lanes and info is not None:
                softmax = "_softmax_" in str(op.attributes["sym_name"])  # IREE names dispatches by their root op
                if softmax:
                    changed += _retune_softmax(op)
                else:
                    changed += (_retune_unit_products(op, lanes) or _retune_transform(op)
                                or _retune_function(op, PIPELINE in str(info), lanes))
            return
        for child in _blocks(op):
            visit(child, lanes)

    visit(module, None)
    return changed


def _phase_setters():
    try:
        from iree.compiler.api import ctypes_dl
        lib = ctypes_dl._dylib
        to_phase, from_phase = lib.ireeCompilerInvocationSetCompileToPhase, lib.ireeCompilerInvocationSetCompileFromPhase
    except (ImportError, AttributeError):
        return None
    for fn in (to_phase, from_phase):
        fn.argtypes, fn.restype = [ctypes.c_void_p, ctypes.c_char_p], None
    return to_phase, from_phase


def phased_compile(session, module_op, context):
    """Compile `module_op` to executable configurations, retune them, and finish the compile.

    Returns (ok, invocation holding the result, number of retiled ops, the configured
    module, which the invocation borrows: keep it alive while using the invocation), or None
    when this IREE build has no phase control."""
    setters = _phase_setters()
    if setters is None:
        return None
    to_phase, from_phase = setters
    first = session.invocation()
    first.import_module(module_op)
    to_phase(first._inv_p, b"executable-configurations")
    if not first.execute():
        return False, first, 0, None
    configured = first.export_module()
    first.close()
    with context:
        changed = retune(configured)
    second = session.invocation()
    from_phase(second._inv_p, b"executable-configurations")
    second.import_module(configured)
    return second.execute(), second, changed, configured
