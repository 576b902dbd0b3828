"""`cpu-conv-tiles`: larger register tiles for small-image convolutions on AVX-512 CPUs.

IREE's llvm-cpu heuristics give every direct convolution a 7-or-8-pixel x 16-channel register
tile (one zmm register per pixel). When the output is at most 14 pixels wide (ResNet's last two
stages) that tile is load-bound: IREE's 3x3 convolutions at 7x7x512 ran at ~140 GFLOP/s, and
a 7-pixel x 64-channel tile (28 zmm accumulators), 64-channel workgroups and a 4-channel
reduction unroll run them 20-25 % faster; at 14x14 about 13 % (measurements in the README,
"Performance"). Larger images gain nothing, so they keep IREE's choice.

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


def _ints(text, key):
    m = re.search(key + r" = \[([0-9, ]*)\]", text)
    return [int(x) for x in m.group(1).split(",")] if m else None


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


def _config(distribution, vector, reduction):
    return ir.Attribute.parse(f"#iree_cpu.lowering_config<distribution = {distribution}, "
                              f"vector_common_parallel = {vector}, vector_reduction = {reduction}>")


def _blocks(op):
    for region in op.regions:
        for block in region.blocks:
            yield from (o.operation for o in block.operations)


def _retune_function(func):
    changed = 0
    for op in _blocks(func):
        if "lowering_config" not in op.attributes or len(op.results) != 1:
            continue
        text = str(op.attributes["lowering_config"])
        lists = [_ints(text, k) for k in ("distribution", "vector_common_parallel", "vector_reduction")]
        if None in lists:
            continue
        choice = conv_tiles(list(ir.RankedTensorType(op.results[0].type).shape), *lists)
        if choice:
            op.attributes["lowering_config"] = _config(*choice)
            changed += 1
    return changed


def retune(module):
    """Rewrite the convolution tiles of every AVX-512 llvm-cpu variant in a module configured by
    IREE (phase `executable-configurations`); returns how many convolutions changed."""
    changed = 0

    def visit(op, avx512):
        nonlocal changed
        if op.name == "hal.executable.variant":
            avx512 = "+avx512f" in str(op.attributes["target"])
        if op.name == "func.func":
            info = op.attributes["translation_info"] if "translation_info" in op.attributes else None
            if avx512 and info is not None and PIPELINE in str(info):
                changed += _retune_function(op)
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

    Returns (ok, invocation holding the result, number of retuned convolutions, the configured
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
