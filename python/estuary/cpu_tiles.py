"""`cpu-tiles`: register tiles for small-image convolutions and recurrent matrix-vector products
on AVX-512 CPUs.

IREE's llvm-cpu heuristics give every direct convolution a 7-or-8-pixel x 16-channel register
tile (one zmm register per pixel). When the output is at most 14 pixels wide (ResNet's last two
stages) that tile is load-bound: IREE's 3x3 convolutions at 7x7x512 ran at ~140 GFLOP/s, and
a 7-pixel x 64-channel tile (28 zmm accumulators), 64-channel workgroups and a 4-channel
reduction unroll run them 20-25 % faster; at 14x14 about 13 % (measurements in the README,
"Performance"). Larger images gain nothing, so they keep IREE's choice.

A batch-1 recurrent step (LSTM/GRU), and any one row times a small constant matrix, is one
multi-result reduction tagged `estuary.matvec` (passes/lowering/matvec.py). IREE
gives it 4-row x 16-column tiles: each gate's 16 partial sums form one dependency chain of
FMAs. One row at a time with the whole reduction (up to 256 wide) as the vector keeps 16
independent accumulators per gate: the LSTM benchmark went from 0.70 to 0.31 ms.

IREE only lets a tile choice survive for batch-1 convolutions after its own configuration
step (a tuning spec is dropped when it re-inserts the unit batch dim), so the compile runs in
two phases: up to `executable-configurations`, where this module rewrites the chosen
`lowering_config`s, then on from there. The phase controls are in IREE's C API but not in its
Python wrapper; `phased_compile` binds them with ctypes and reports None when they are missing,
and the caller then compiles in one go.
"""
import ctypes
import re

from iree.compiler import ir

PIPELINE = "ConvTileAndDecomposeExpert"
MAX_WIDTH = 14        # output widths up to this gain (7 and 14 measured); 28 and 56 do not
CHANNELS = 64         # output channels per register tile and per workgroup
REDUCTION_UNROLL = 4  # input channels per step of the reduction loop (8 spills, 1 stalls)
MATVEC_TAG = "estuary.matvec"   # set by passes/lowering/matvec.py
MATVEC_VECTOR = 256   # reduction elements per vector op (256 > 128 > 64 > IREE's 16, measured)


def _ints(text, key):
    m = re.search(key + r" = \[([0-9, ]*)\]", text)
    return [int(x) for x in m.group(1).split(",") if x.strip()] if m else None


def conv_tiles(out_shape, distribution, vector, reduction):
    """The tile choice for a 2-D NHWC convolution (loops n, oh, ow, f, kh, kw, c), or None to
    keep IREE's. `out_shape` is [N, OH, OW, F]; the lists are IREE's chosen tile sizes."""
    if len(distribution) != 7 or len(vector) != 7 or len(reduction) != 7 or len(out_shape) != 4:
        return None
    width, pixels, lanes = out_shape[2], vector[2], vector[3]
    if width > MAX_WIDTH or out_shape[3] % CHANNELS or lanes != 16 or not 0 < pixels <= 7:
        return None  # 16 lanes = one zmm register: the AVX-512 choice this rule was measured against
    return ([0, 1, pixels, CHANNELS, 0, 0, 0], [1, 1, pixels, CHANNELS, 0, 0, 0],
            reduction[:6] + [REDUCTION_UNROLL])


def matvec_tiles(k, distribution, vector, reduction):
    """The tile choice for a tagged recurrent product: one output row per vector step and the
    reduction (extent `k`) as the vector, or None to keep IREE's."""
    if not (len(distribution) == len(vector) == len(reduction)) or sum(1 for r in reduction if r) != 1:
        return None
    return (distribution, [0 if r else 1 for r in reduction],
            [min(k, MATVEC_VECTOR) if r else 0 for r in reduction])


def _config(distribution, vector, reduction):
    return ir.Attribute.parse(f"#iree_cpu.lowering_config<distribution = {distribution}, "
                              f"vector_common_parallel = {vector}, vector_reduction = {reduction}>")


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


def _retune_function(func, conv):
    changed = 0
    for op in _blocks(func):
        if "lowering_config" not in op.attributes or not op.results:
            continue
        text = str(op.attributes["lowering_config"])
        lists = [_ints(text, k) for k in ("distribution", "vector_common_parallel", "vector_reduction")]
        if None in lists:
            continue
        choice = None
        if MATVEC_TAG in op.attributes:
            reduced = _shape(op.operands[0]) if op.operands else None
            choice = matvec_tiles(reduced[-1], *lists) if reduced else None
        elif conv and len(op.results) == 1:
            out = _shape(op.results[0])
            choice = conv_tiles(out, *lists) if out is not None else None
        if choice:
            op.attributes["lowering_config"] = _config(*choice)
            changed += 1
    return changed


def retune(module):
    """Rewrite the convolution and recurrent-product tiles of every AVX-512 llvm-cpu variant in a
    module configured by IREE (phase `executable-configurations`); returns how many ops changed."""
    changed = 0

    def visit(op, avx512):
        nonlocal changed
        if op.name == "hal.executable.variant":
            avx512 = "+avx512f" in str(op.attributes["target"])
        if op.name == "func.func":
            info = op.attributes["translation_info"] if "translation_info" in op.attributes else None
            if avx512 and info is not None:
                changed += _retune_function(op, PIPELINE in str(info))
            return
        for child in _blocks(op):
            visit(child, avx512)

    visit(module, False)
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
    with context:
        changed = retune(configured)
    second = session.invocation()
    from_phase(second._inv_p, b"executable-configurations")
    second.import_module(configured)
    return second.execute(), second, changed, configured
