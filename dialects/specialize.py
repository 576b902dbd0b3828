"""Specializing a module with dynamic dimensions to fixed input shapes (`--shape` / `shapes=`).

Formats whose importers read free dimensions themselves (Core ML ranges, NNEF, NNAPI) fix them
while importing. For the others (WebNN's MLDynamicDimension, MLIR text) the imported module is
rewritten here: each symbol gets the value the given shapes imply, and every type, shape
attribute and signature entry is re-derived with it, so the module becomes the static module the
fixed shapes describe (the fast path) and is verified again by the pipeline's `nn-verify`.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from iree.compiler import ir

from estuary.base import dims
from estuary.base.dims import Dim
from estuary.base.errors import ModelImportError
from estuary.dialects import core
from estuary.dialects.core import TensorSpec


def bindings(inputs: Sequence[tuple[str, TensorSpec]], shapes: Mapping[str, Sequence[int | tuple[int, int]]],
             where: str) -> dict[str, dims.Value]:
    """Symbol values implied by `shapes` for the named inputs: an int fixes a symbol, a (min, max)
    range narrows its bounds; ModelImportError when a shape changes a fixed dimension, leaves a
    symbol's bounds or gives one symbol two values."""
    values: dict[str, dims.Value] = {}
    have = dict(inputs)
    for name, given in shapes.items():
        spec = have[name]
        if len(given) != spec.rank:
            raise ModelImportError(f"{where}: input {name!r} has rank {spec.rank} ({spec}); --shape "
                                   f"{name}={'x'.join(map(str, given))} has rank {len(given)}")
        for axis, (want, g) in enumerate(zip(spec.shape, given)):
            sym = want.sym if isinstance(want, Dim) else None
            if isinstance(g, tuple):
                if sym is None:
                    raise ModelImportError(f"{where}: input {name!r} dimension {axis} is fixed at {want}; --shape "
                                           f"cannot give it the range {g[0]}..{g[1]}")
                if not sym.lo <= g[0] <= g[1] <= sym.hi:
                    raise ModelImportError(f"{where}: --shape {name}: the range {g[0]}..{g[1]} of dimension {axis} "
                                           f"({sym.name}) is not within its bounds {sym.lo}..{sym.hi}")
                narrowed = Dim.symbol(sym.name, g[0], g[1])
                if values.setdefault(sym.name, narrowed) != narrowed:
                    raise ModelImportError(f"{where}: --shape gives {sym.name} both {values[sym.name]} and a range")
                continue
            if sym is None:
                if want != g:
                    raise ModelImportError(f"{where}: input {name!r} has the fixed shape {list(spec.shape)}; "
                                           f"--shape {name}={'x'.join(map(str, given))} cannot change dimension "
                                           f"{axis}")
                continue
            if not sym.lo <= g <= sym.hi:
                raise ModelImportError(f"{where}: --shape {name}: dimension {axis} ({sym.name}) = {g} is outside "
                                       f"its bounds {sym.lo}..{sym.hi}")
            if values.setdefault(sym.name, g) != g:
                raise ModelImportError(f"{where}: --shape gives {sym.name} both {values[sym.name]} and {g}")
    return values


def specialize(nn: Any, values: Mapping[str, dims.Value]) -> None:
    """Rewrite the NNModule `nn` in place with every symbol of `values` fixed, or narrowed when its
    value is a symbol of the same name with other bounds (bindings followed: a symbol bound to a
    fixed one is fixed too)."""
    env: dict[str, dims.Value] = dict(values)
    for _ in range(len(nn.unifier.bindings) + 1):  # follow bindings both ways until nothing changes
        before = dict(env)
        for name, bound in nn.unifier.bindings.items():  # mask_1 = seq with seq fixed: mask_1 fixed too
            value = dims.substitute(bound, env)
            if not isinstance(value, Dim):
                env.setdefault(name, value)
            elif name in env and isinstance(bound, Dim) and bound.sym is not None:
                env.setdefault(bound.sym.name, env[name])
        if env == before:
            break
    for name, bound in list(nn.unifier.bindings.items()):
        if name in env and not isinstance(dims.substitute(bound, env), Dim) and \
                dims.substitute(bound, env) != env[name]:
            raise ModelImportError(f"{nn.source}: the given shapes make {name} = {env[name]}, but the model needs "
                                   f"{name} = {bound} = {dims.substitute(bound, env)}")
    for check in nn.unifier.checks:
        value = dims.substitute(check, env)
        if not isinstance(value, Dim) and value < 1:
            raise ModelImportError(f"{nn.source}: the given shapes are too small for the model: the dimension "
                                   f"{check} would be {value}")

    def fixed(t: ir.Type) -> ir.Type:
        if not isinstance(t, ir.RankedTensorType) or ir.RankedTensorType(t).has_static_shape:
            return t
        spec = TensorSpec.of_type(t)
        return spec.with_shape(dims.substitute(d, env) for d in spec.shape).mlir_type()

    def visit(op: ir.Operation) -> ir.WalkResult:
        for r in op.results:
            r.set_type(fixed(r.type))
        for region in op.regions:
            for block in region.blocks:
                for arg in block.arguments:
                    arg.set_type(fixed(arg.type))
        if op.name == "func.func":
            ft = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
            op.attributes["function_type"] = ir.TypeAttr.get(
                ir.FunctionType.get([fixed(t) for t in ft.inputs], [fixed(t) for t in ft.results]))
        opdef = core.get(op.name) if op.name.startswith("nn.") else None
        for key, kind in (opdef.attrs.items() if opdef is not None else ()):
            if isinstance(kind, core.Shape) and key in op.attributes and isinstance(op.attributes[key], ir.StringAttr):
                value = [dims.substitute(d, env) for d in kind.from_mlir(op.attributes[key])]
                op.attributes[key] = kind.to_mlir(value)
        return ir.WalkResult.ADVANCE

    with nn.context, ir.Location.unknown():
        nn.module.operation.walk(visit)
        nn.inputs = [(n, s.with_shape(dims.substitute(d, env) for d in s.shape)) for n, s in nn.inputs]
        nn.outputs = [(n, s.with_shape(dims.substitute(d, env) for d in s.shape)) for n, s in nn.outputs]
        bound = {k: dims.substitute(v, env) for k, v in nn.unifier.bindings.items() if k not in env}
        checks = [dims.substitute(c, env) for c in nn.unifier.checks]
        nn.unifier = dims.Unifier({k: v for k, v in bound.items() if not (isinstance(v, Dim) and v.sym is not None
                                                                          and v.sym.name == k)},
                                  [c for c in checks if isinstance(c, Dim)])
        attrs = nn.module.operation.attributes
        if "nn.dims" in attrs:
            del attrs["nn.dims"]
        nn.write_dims()
        nn.write_signature()
