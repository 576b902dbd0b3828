"""The SPIR-V targets (vulkan-spirv, metal-spirv): IREE flags and the lowered-module rewrite that
works around IREE 3.13's SPIR-V code generation.

Vulkan features: IREE's default target (vp_android_baseline_2022) has 32-bit storage and
arithmetic only and emulates narrower types, wrongly: float16 sums came out wrong, and 8-bit
tensors whose size is not a multiple of 4 bytes lost their last word (the emulation reads and
writes whole words past the binding's end). So the SPIR-V also gets 8- and 16-bit storage and
arithmetic. Each executable requires only the capabilities it uses (a float32 model still runs on
any Vulkan device); one that needs them fails to load on a device without them instead of
computing wrong values. A user's own --iree-vulkan-target* flag replaces this.

Outer-axis reductions: a reduction over an axis that is not the innermost one, fused by IREE with
an elementwise op that reads its result broadcast back over that axis (x - max(x, axis=0),
softmax over axis 0), gives wrong values on Vulkan: on lavapipe every inner size from 9 up that is
not a multiple of 64 (as far as measured), for any of the reductions. Each part alone is right.
So on these targets such a reduction's result passes through `util.optimization_barrier`, which
keeps it in a dispatch of its own (`isolate_outer_reductions`, the `spirv-isolate-reductions`
pass). Reductions over the innermost axis (trailing size-1 axes ignored) fuse correctly and are
left alone.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from iree.compiler import ir
from iree.compiler.dialects import arith, flow, tensor, util

from estuary.passes import register
from estuary.passes.lowering import register_target

if TYPE_CHECKING:
    from estuary.base.options import CompileOptions

VULKAN_FEATURES = ("--iree-vulkan-target-features=spirv:v1.3,cap:Shader,cap:Int8,cap:Int16,cap:Float16,"
                   "cap:StorageBuffer8BitAccess,cap:UniformAndStorageBuffer8BitAccess,"
                   "cap:StorageBuffer16BitAccess,cap:StorageUniform16,"
                   "ext:SPV_KHR_8bit_storage,ext:SPV_KHR_16bit_storage")


def vulkan_flags(options: CompileOptions) -> list[str]:
    """The Vulkan feature flags, unless the caller's extra flags choose a Vulkan target."""
    return [] if any(f.startswith("--iree-vulkan-target") for f in options.extra_flags) else [VULKAN_FEATURES]


REDUCTIONS = {"tosa.argmax", "tosa.reduce_all", "tosa.reduce_any", "tosa.reduce_max", "tosa.reduce_min",
              "tosa.reduce_product", "tosa.reduce_sum"}


def _outer_axis(op: ir.Operation) -> bool:
    """A TOSA reduction over an axis with a non-unit axis after it."""
    shape = ir.RankedTensorType(op.operands[0].type).shape
    axis = ir.IntegerAttr(op.attributes["axis"]).value
    return any(d != 1 for d in shape[axis + 1:])


def _dims(expr: ir.AffineExpr) -> set[int]:
    """The loop dimensions an affine expression reads."""
    if isinstance(expr, ir.AffineDimExpr):
        return {expr.position}
    if isinstance(expr, ir.AffineBinaryExpr):
        return _dims(expr.lhs) | _dims(expr.rhs)
    return set()


def _outer_generic(op: ir.Operation) -> bool:
    """A linalg.generic reduction whose first input is reduced along some axis that has a
    non-reduced, non-unit axis inside it."""
    kinds = ["reduction" in str(t) for t in op.attributes["iterator_types"]]
    if not any(kinds):
        return False
    exprs = ir.AffineMapAttr(op.attributes["indexing_maps"][0]).value.results
    shape = ir.RankedTensorType(op.operands[0].type).shape
    inner = True
    for expr, size in reversed(list(zip(exprs, shape))):
        if size == 1:
            continue
        reduced = any(kinds[d] for d in _dims(expr))
        if not reduced:
            inner = False
        elif not inner:
            return True
    return False


def _isolated(op: ir.Operation) -> bool:
    if op.name in REDUCTIONS:
        return _outer_axis(op)
    return op.name == "linalg.generic" and _outer_generic(op)


def _dynamic_sizes(value: ir.Value) -> list[ir.Value]:
    """`tensor.dim` of each dynamic dimension of `value`, at the current insertion point."""
    t = ir.RankedTensorType(value.type)
    return [tensor.dim(value, arith.constant(ir.IndexType.get(), i))
            for i, d in enumerate(t.shape) if d == ir.ShapedType.get_dynamic_size()]


def isolate_outer_reductions(module: ir.Module) -> int:
    """Put the results of each outer-axis reduction (TOSA or linalg.generic) behind an optimization
    barrier; returns how many."""
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if _isolated(op):
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    for op in found:
        for result in op.results:  # one barrier per used result (an arg reduction's values are unused)
            if not list(result.uses):
                continue
            with ir.InsertionPoint.after(op), op.location:
                sizes = _dynamic_sizes(result)
                barrier = util.optimization_barrier([result.type], [result])
                # IREE cannot read the sizes of a barrier's dynamic result: state them again
                isolated = flow.TensorTieShapeOp(barrier, sizes).result if sizes else barrier
            keep = {barrier.owner.operation} | ({isolated.owner.operation} if sizes else set())
            for use in list(result.uses):
                if use.owner not in keep and use.owner.name != "tensor.dim":
                    use.owner.operands[use.operand_number] = isolated
    return len(found)


@register("spirv-isolate-reductions")
def spirv_isolate_reductions(nn: Any, options: CompileOptions) -> dict[str, Any]:
    """After lowering, for the SPIR-V targets: an outer-axis reduction's result behind an
    optimization barrier."""
    with nn.context, ir.Location.unknown():
        return {"isolated_reductions": isolate_outer_reductions(nn.module)}


# The SPIR-V targets lower with the generic rules (their GPU forms follow `CompileOptions.gpu`).
register_target("vulkan-spirv")
register_target("metal-spirv")
