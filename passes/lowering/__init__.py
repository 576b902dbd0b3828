"""Lowering `nn` ops to TOSA (+ linalg/tensor/arith/math): one small rule per op.

A rule is registered with `@lowering("conv2d")` (the generic rule) or `@lowering("conv2d",
target="llvm-cpu")` (a target's own rule, registered by its backend) and receives a `RuleContext`: the op's lowered
operand values grouped as declared (`n.inputs`), their specs (`n.in_specs`), the result specs
(`n.out_specs`), the attributes (`n.attrs`), the typed view (`n.op`), the compile options
(`n.options`: target, CPU lanes, Winograd, ...) and the lowering run it belongs to (`n.run`: a
cache shared by the rules of one run, and side results for the compiler). It builds the
replacement at the current insertion point and returns one Value or a list of Values.
Generic rules live in family modules (elementwise, convolution, pooling, ...), named as the op
families of dialects/ops/; `RULES.load()` imports every module of this package. A target's rules
call the generic ones with the target's `Forms` (forms.py).

Every target's backend declares itself with `register_target` once its rules are registered, and
`lower_module` lowers only for a declared target: a backend module that was never imported would
otherwise leave its target with the generic rules alone, a slower artefact without any error.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from iree.compiler import ir
from iree.compiler.dialects import tensor

from estuary.base.options import CompileOptions
from estuary.dialects import core, graph
from estuary.dialects.builder import Builder
from estuary.dialects.core import TensorSpec
from estuary.base.dims import DimError
from estuary.base.errors import InternalError, LoweringError, VerificationError, where
from estuary.base.registry import Registry
from estuary.passes.lowering import dynamic, repeat
from estuary.passes.lowering.common import storage

@dataclass
class LoweringRun:
    """One `lower_module` call: `cache` holds values its rules share (the 1x1 products a global
    pooling reads through a zero row, pointwise.py; llvm-cpu's blocked weight layouts, built once
    per function); `results` are side results the compiler reads back (`keep_f64`: a rule needs
    real float64 arithmetic; `winograd`: llvm-cpu's count of Winograd convolutions)."""

    cache: dict[Any, Any] = field(default_factory=dict)
    results: dict[str, Any] = field(default_factory=dict)


Rule = Callable[["RuleContext"], Any]  # returns the replacement Value, or a list of them
Decomposition = Callable[["Decomposer"], Any]
_PACKAGES = ["estuary.passes.lowering"]
# (op short name, target or None for the generic rule) -> rule
RULES: Registry[tuple[str, str | None], Rule] = Registry("lowering rule", _PACKAGES)
DECOMPOSITIONS: Registry[str, Decomposition] = Registry("decomposition", _PACKAGES)


@dataclass(frozen=True)
class TargetLowering:
    """A target whose backend has registered its lowering rules (none, for most GPU targets).
    `start(options)` gives the side results its lowering reports before any rule runs (the
    counters its forms increment, so that a zero is reported too)."""

    name: str
    start: Callable[[CompileOptions], dict[str, Any]]


TARGETS: Registry[str, TargetLowering] = Registry("lowering target")


def register_target(name: str, start: Callable[[CompileOptions], dict[str, Any]] | None = None) -> None:
    """Declare that the backend of target `name` has registered its lowering rules (call it after
    importing them); see `TargetLowering` for `start`."""
    TARGETS.add(name, TargetLowering(name, start or _no_results), getattr(start, "__module__", ""))


def _no_results(options: CompileOptions) -> dict[str, Any]:
    return {}


RuleT = TypeVar("RuleT", bound=Rule)


def lowering(*names: str, target: str | None = None) -> Callable[[RuleT], RuleT]:
    """Register the decorated function as the lowering rule of the named nn op(s): the generic
    rule, or with `target` the rule that replaces it for that target (backends/<target>/)."""

    def wrap(fn: RuleT) -> RuleT:
        for name in names:
            RULES.add((name, target), fn, fn.__module__)
        return fn

    return wrap


def rule_for(name: str, target: str) -> Rule | None:
    """The rule lowering nn op `name` for `target`: the target's own, else the generic one."""
    RULES.load()
    return RULES.get((name, target)) or RULES.get((name, None))


def decomposition(*names: str) -> Callable[[Decomposition], Decomposition]:
    """Register the decorated function as the decomposition of nn op(s) into simpler nn ops.

    Compound ops (gru, lstm, ...) are rewritten this way before lowering, exactly as their spec
    decomposes them; `fn(d)` gets a Decomposer and returns the replacement value(s)."""

    def wrap(fn: Decomposition) -> Decomposition:
        for name in names:
            DECOMPOSITIONS.add(name, fn, fn.__module__)
        return fn

    return wrap


class Decomposer(Builder):
    """What a decomposition builds with (`d.op(name, operands, **attrs)`, `d.const(array, dtype)`,
    `d.spec`, `d.reshape`): ops created in place of the compound op, with its operands grouped as
    declared (`d.inputs`), its attributes (`d.attrs`) and result specs (`d.out_specs`)."""

    def __init__(self, op, opdef):
        self.opdef = opdef
        self.inputs = graph.operand_groups(opdef, op)
        self.attrs = graph.op_attrs(opdef, op)
        self.out_specs = [TensorSpec.of_type(r.type) for r in op.results]

    def create(self, nn_name, operands, attrs):
        return graph.create_op(nn_name, operands, attrs)

    def constant(self, array, spec, name):
        return graph.create_op("constant", [], {"value": graph.constant_attr(array, spec)})


def decompose_module(module, source="<memory>"):
    """Rewrite compound nn ops into simpler nn ops until none is left."""
    DECOMPOSITIONS.load()
    while True:
        ops = [o for o in nn_ops(module.operation) if o.name[3:] in DECOMPOSITIONS]
        if not ops:
            return
        for o in ops:
            opdef = core.get(o.name)
            with ir.InsertionPoint(o), o.location:
                try:
                    result = DECOMPOSITIONS[opdef.name](Decomposer(o, opdef))
                except VerificationError as e:
                    raise LoweringError(f"{where(source, graph.loc_name(o), o.name)}: {e}") from None
            results = result if isinstance(result, (list, tuple)) else [result]
            for old, new in zip(o.results, results):
                old.replace_all_uses_with(new)
            o.erase()


@dataclass
class RuleContext:
    """What a lowering rule gets for one nn op."""

    op: Any  # typed view of the nn op
    name: str  # op short name
    inputs: list[Any]  # lowered operand Values, grouped as declared
    in_specs: list[Any]  # nn-level TensorSpecs, grouped the same way
    out_specs: list[TensorSpec]  # nn-level result TensorSpecs
    attrs: dict[str, Any]
    options: CompileOptions
    run: LoweringRun

    @property
    def out(self) -> TensorSpec:
        """The single result spec."""
        return self.out_specs[0]


def _group_specs(opdef, op):
    groups = graph.operand_groups(opdef, op)
    out = []
    for g in groups:
        if g is None:
            out.append(None)
        elif isinstance(g, list):
            out.append([TensorSpec.of_type(v.type) for v in g])
        else:
            out.append(TensorSpec.of_type(g.type))
    return out


def _retype_signature(func_op):
    """Signless integer types on @main's arguments and results."""
    block = func_op.regions[0].blocks[0]
    for arg in block.arguments:
        arg.set_type(storage(TensorSpec.of_type(arg.type)))
    ftype = ir.FunctionType(ir.TypeAttr(func_op.attributes["function_type"]).value)
    results = [storage(TensorSpec.of_type(t)) for t in ftype.results]
    func_op.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get([a.type for a in block.arguments], results))


def nn_ops(root):
    found = []

    def visit(op):
        if op.name.startswith("nn."):
            found.append(op)
        return ir.WalkResult.ADVANCE

    root.walk(visit)
    return found


def describe(ops):
    return "; ".join(where(None, graph.loc_name(o), o.name) for o in ops)


def lower_module(module: ir.Module, source: str = "<memory>",
                 options: CompileOptions | None = None) -> dict[str, Any]:
    """Replace every nn op of `module` by TOSA/linalg for `options` (default: llvm-cpu with no
    CPU-specific layouts); LoweringError if any stays. Returns the run's side results.
    InternalError when no backend has declared the target (`register_target`)."""
    options = options or CompileOptions()
    if options.target not in TARGETS:
        raise InternalError(source, LookupError(
            f"no backend has registered the lowering for target {options.target!r} (declared: "
            f"{sorted(TARGETS) or 'none'}); its backend package must be imported first (estuary.backends.targets)"))
    repeat.rewrite(module)
    decompose_module(module, source)
    run = LoweringRun(results=TARGETS[options.target].start(options))
    _lower_ops(module, source, options, run)
    return run.results


def _lower_ops(module, source, options, run):
    ops = nn_ops(module.operation)
    missing = [o for o in ops if rule_for(o.name[3:], options.target) is None]
    if missing:
        raise LoweringError(f"{source}: no lowering for: {describe(missing)}")
    # Specs are read before any replacement: lowered values lose integer signedness.
    plans = []
    for o in ops:
        opdef = core.get(o.name)
        plans.append((o, opdef, _group_specs(opdef, o), [TensorSpec.of_type(r.type) for r in o.results]))
    for f in module.body.operations:
        if f.operation.name == "func.func":
            _retype_signature(f.operation)
    for o, opdef, in_specs, out_specs in plans:
        node = RuleContext(o.opview, opdef.name, graph.operand_groups(opdef, o), in_specs, out_specs,
                           graph.op_attrs(opdef, o), options, run)
        with ir.InsertionPoint(o), o.location:
            try:
                result = rule_for(opdef.name, options.target)(node)
            except VerificationError as e:
                raise LoweringError(f"{where(source, graph.loc_name(o), o.name)}: {e}") from None
            except DimError as e:  # a rule meeting a dynamic dimension it cannot take
                raise LoweringError(f"{where(source, graph.loc_name(o), o.name)}: dynamic dimensions are not "
                                    f"supported here ({e}); compile for a fixed shape (--shape / shapes=)") from None
        results = result if isinstance(result, (list, tuple)) else [result]
        if len(results) != len(o.results):
            raise LoweringError(f"{where(source, graph.loc_name(o), o.name)}: rule returned "
                                f"{len(results)} values for {len(o.results)} results")
        for old, new, spec in zip(o.results, results, out_specs):
            with ir.InsertionPoint(o), o.location:
                new = _as_type(new, storage(spec))
            if new.type != storage(spec):
                raise LoweringError(f"{where(source, graph.loc_name(o), o.name)}: lowering produced "
                                    f"{new.type}, expected {storage(spec)}")
            old.replace_all_uses_with(new)
        o.erase()
    left = nn_ops(module.operation)
    if left:
        raise LoweringError(f"{source}: nn ops left after lowering: {describe(left)}")
    dynamic.generic_binaries(module)
    if dynamic.strip_encodings(module):
        run.results["dynamic_shapes"] = True


def _as_type(value: ir.Value, want: ir.Type) -> ir.Value:
    """`value` as type `want` when they differ only in which dimensions are known or in their
    #nn.dims encoding (a tensor.cast), else `value` unchanged (the caller reports the mismatch)."""
    if value.type == want:
        return value
    have, need = ir.RankedTensorType(value.type), ir.RankedTensorType(want)
    if have.element_type != need.element_type or have.rank != need.rank:
        return value
    dynamic_size = ir.ShapedType.get_dynamic_size()
    if any(a != b and dynamic_size not in (a, b) for a, b in zip(have.shape, need.shape)):
        return value
    return tensor.CastOp(want, value).result
