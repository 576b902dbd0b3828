"""Dynamic dimensions in the lowering: a symbolic dimension (`seq`, `2*seq`, `(h + 1)//2`) as an
SSA `index` value, and the data-movement helpers for tensors with such dimensions.

While lowering, a dynamic tensor type keeps its `#nn.dims` encoding (common.tensor_type), so
`common.shape_of` reads a value's dimensions back as expressions and rule arithmetic stays
symbolic; `strip_encodings` removes the encodings before IREE sees the module. Each function's
symbols are read off its arguments (`tensor.dim` of the first argument that carries the symbol,
at the point of use; IREE's CSE merges the repeats); an expression becomes `arith` index
arithmetic. Reshapes become `tensor.collapse_shape` + `tensor.expand_shape` where the
dimensions regroup, else `tensor.reshape`. Static shapes never reach this module: their lowering
is unchanged.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias

from iree.compiler import ir
from iree.compiler.dialects import arith, tensor, util

from estuary.base import dims
from estuary.base.dims import Dim, FloorDiv, Sym
from estuary.dialects.core import dims_encoding, mlir_shape, shape_of_type
from estuary.dialects.graph import read_dims

DYNAMIC = ir.ShapedType.get_dynamic_size
Size: TypeAlias = int | ir.Value  # a dimension in the lowering: a constant, or an `index` value


class Symbols:
    """Where one function's symbols come from: name -> (argument, axis), and the Unifier that
    resolves symbols bound to others."""

    def __init__(self, arguments: Sequence[tuple[ir.Value, Sequence[dims.Value]]], unifier: dims.Unifier) -> None:
        self.unifier = unifier
        self.sources: dict[str, tuple[ir.Value, int]] = {}
        for value, shape in arguments:
            for axis, d in enumerate(shape):
                sym = d.sym if isinstance(d, Dim) else None
                if sym is not None and sym.name not in self.sources:
                    self.sources[sym.name] = (value, axis)

    def size(self, d: dims.Value) -> Size:
        """`d` as an int or an `index` value built at the current insertion point."""
        d = self.unifier.resolve(d)
        if not isinstance(d, Dim):
            return int(d)
        return self._expr(d)

    def sizes(self, shape: Sequence[dims.Value]) -> list[Size]:
        return [self.size(d) for d in shape]

    def _expr(self, d: Dim) -> ir.Value:
        total: ir.Value | None = None
        for monomial, coeff in d.terms:
            term: ir.Value | None = None
            for atom in monomial:
                v = self._atom(atom)
                term = v if term is None else arith.muli(term, v)
            if term is None:
                term = index(coeff)
            elif coeff != 1:
                term = arith.muli(term, index(coeff))
            total = term if total is None else arith.addi(total, term)
        assert total is not None
        return total

    def _atom(self, atom: Sym | FloorDiv) -> ir.Value:
        if isinstance(atom, Sym):
            if atom.name not in self.sources:
                raise ValueError(f"symbol {atom.name} has no argument to read it from")
            value, axis = self.sources[atom.name]
            return bounded(tensor.dim(value, index(axis)), atom.lo, atom.hi)
        num = self.size(atom.num)
        return arith.floordivsi(as_value(num), index(atom.den))


def bounded(size: ir.Value, lo: int, hi: int) -> ir.Value:
    """`size` with its bounds stated to IREE (util.assume.int): codegen then knows how large a
    dynamic extent can get (stack allocations, tile choices)."""
    attr = ir.Attribute.parse(f"[[#util.int.assumption<umin = {lo}, umax = {hi}>]]")
    return util.AssumeIntOp([size.type], [size], attr).results[0]


def index(v: int) -> ir.Value:
    return arith.constant(ir.IndexType.get(), int(v))


def as_value(size: Size) -> ir.Value:
    return size if isinstance(size, ir.Value) else index(size)


def operands(shape: Sequence[dims.Value]) -> tuple[list[int], list[ir.Value]]:
    """`shape` as MLIR ops take it: the static sizes with DYNAMIC wherever `shape` has a Dim, and
    an index value for each of those (also for a symbol the Unifier bound to a constant, so
    the op's type keeps the `?` that `shape` has)."""
    static = [DYNAMIC() if isinstance(d, Dim) else int(d) for d in shape]
    values = [as_value(s) for d, s in zip(shape, sizes(shape)) if isinstance(d, Dim)]
    return static, values


def sizes(shape: Sequence[dims.Value]) -> list[Size]:
    """The sizes of `shape` at the current insertion point: ints, and index values computed from
    the enclosing function's arguments for the dynamic dimensions."""
    return _symbols().sizes(shape)


def _symbols() -> Symbols:
    block = ir.InsertionPoint.current.block
    owner = block.owner
    op = owner.operation if owner is not None else None
    while op is not None and op.name != "func.func":
        op = op.parent
    if op is None:
        raise ValueError("dynamic sizes outside a function")
    entry = op.regions[0].blocks[0]
    arguments = []
    for arg in entry.arguments:
        t = ir.RankedTensorType(arg.type) if isinstance(arg.type, ir.RankedTensorType) else None
        if t is not None and not t.has_static_shape:
            arguments.append((arg, shape_of_type(t)))
    module = op.parent
    while module is not None and module.name != "builtin.module":
        module = module.parent
    unifier = read_dims(module) if module is not None else dims.Unifier()
    return Symbols(arguments, unifier)


def reshape(value: ir.Value, src: Sequence[dims.Value], shape: Sequence[dims.Value],
            out_t: ir.RankedTensorType) -> ir.Value:
    """`value` (of symbolic shape `src`) as `shape` (type `out_t`): collapse_shape then
    expand_shape where the dimensions regroup, else tensor.reshape."""
    element = ir.RankedTensorType(value.type).element_type
    groups = _regroup(list(src), list(shape))
    if groups is None:
        shape_t = ir.RankedTensorType.get([len(shape)], ir.IndexType.get())
        values = [as_value(x) for x in sizes(shape)]
        return tensor.reshape(out_t, value, tensor.from_elements(shape_t, values))
    src_groups, out_groups = groups
    mid_shape = [dims.size(src[i] for i in g) for g in src_groups]
    mid = value
    if any(len(g) != 1 for g in src_groups):
        mid = tensor.collapse_shape(_typed(mid_shape, element), value, _reassociation(src_groups))
    if all(len(g) == 1 for g in out_groups):
        return mid if mid.type == out_t else tensor.CastOp(out_t, mid).result
    static, dynamic = operands(shape)
    return tensor.expand_shape(out_t, mid, _reassociation(out_groups), dynamic, static)


def _typed(shape: Sequence[dims.Value], element: ir.Type) -> ir.RankedTensorType:
    if dims.is_static(shape):
        return ir.RankedTensorType.get([int(d) for d in shape], element)
    return ir.RankedTensorType.get(mlir_shape(shape), element, dims_encoding(list(shape)))


_BODIES = {"tosa.add": (arith.addf, arith.addi), "tosa.sub": (arith.subf, arith.subi),
           "tosa.mul": (arith.mulf, arith.muli)}


def generic_binaries(module: ir.Module) -> int:
    """Rewrite TOSA's broadcasting add/sub/mul with a dynamic operand as linalg.generic ops whose
    indexing maps say which dimensions broadcast (a static 1 against a larger result), from the
    operands' symbolic shapes. TOSA's own lowering cannot know that two dynamic dimensions are
    equal, so it branches at run time on which operand broadcasts; IREE 3.13 then failed to
    schedule such modules ("cyclic dependencies"). Returns how many ops were rewritten."""
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name in _BODIES and not all(ir.RankedTensorType(v.type).has_static_shape for v in op.operands[:2]):
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    from estuary.passes.lowering import common as C

    for op in found:
        out_t = ir.RankedTensorType(op.results[0].type)
        floating, integer = _BODIES[op.name]
        body = floating if isinstance(out_t.element_type, ir.FloatType) else integer
        with ir.InsertionPoint(op), op.location:
            new = C.elementwise(C.shape_of(op.results[0]), out_t.element_type, list(op.operands[:2]), body)
        op.results[0].replace_all_uses_with(new)
        op.erase()
    return len(found)


def strip_encodings(module: ir.Module) -> bool:
    """Drop every #nn.dims encoding (results, block arguments, function types): IREE sees plain
    dynamic tensor types. Returns whether the module has dynamic shapes."""
    found = False
    def plain(t: ir.Type) -> ir.Type:
        nonlocal found
        if isinstance(t, ir.RankedTensorType):
            rt = ir.RankedTensorType(t)
            found = found or not rt.has_static_shape
            if rt.encoding is not None and isinstance(rt.encoding, ir.OpaqueAttr) \
                    and rt.encoding.dialect_namespace == "nn":
                return ir.RankedTensorType.get(rt.shape, rt.element_type)
        return t

    def visit(op: ir.Operation) -> ir.WalkResult:
        for r in op.results:
            t = plain(r.type)
            if t != r.type:
                r.set_type(t)
        for region in op.regions:
            for block in region.blocks:
                for arg in block.arguments:
                    t = plain(arg.type)
                    if t != arg.type:
                        arg.set_type(t)
        if op.name == "func.func":
            ft = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
            new = ir.FunctionType.get([plain(t) for t in ft.inputs], [plain(t) for t in ft.results])
            if new != ft:
                op.attributes["function_type"] = ir.TypeAttr.get(new)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def _reassociation(groups: list[list[int]]) -> ir.ArrayAttr:
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, i) for i in g]) for g in groups])


def _regroup(src: list[dims.Value], out: list[dims.Value]) -> tuple[list[list[int]], list[list[int]]] | None:
    """Groups of consecutive dimensions with equal products in `src` and `out` (each group of one
    side maps to one group of the other), or None when the shapes do not regroup that way."""
    src_groups: list[list[int]] = []
    out_groups: list[list[int]] = []
    i = j = 0
    while i < len(src) and j < len(out):
        gi, gj = [i], [j]
        pi, pj = src[i], out[j]
        i, j = i + 1, j + 1
        while pi != pj:
            if _multiple_of(pj, pi) and i < len(src):
                gi.append(i)
                pi = pi * src[i]
                i += 1
            elif _multiple_of(pi, pj) and j < len(out):
                gj.append(j)
                pj = pj * out[j]
                j += 1
            else:
                return None
        src_groups.append(gi)
        out_groups.append(gj)
    if not src_groups or any(d != 1 for d in src[i:]) or any(d != 1 for d in out[j:]):
        return None
    src_groups[-1] += list(range(i, len(src)))  # trailing size-1 dimensions join the last group
    out_groups[-1] += list(range(j, len(out)))
    return src_groups, out_groups


def _multiple_of(b: dims.Value, a: dims.Value) -> bool:
    """Whether `b` is `a` times a whole number (an expression or a constant)."""
    if not isinstance(a, Dim):
        a = int(a)
        if a == 0:
            return False
        return all(c % a == 0 for _, c in b.terms) if isinstance(b, Dim) else int(b) % a == 0
    if not isinstance(b, Dim):
        return False
    if len(a.terms) == 1:
        (mono, coeff), = a.terms
        return all(_contains(m, mono) and c % coeff == 0 for m, c in b.terms)
    return b == a or any(b == a * k for k in range(2, 9))


def _contains(m: tuple[Any, ...], part: tuple[Any, ...]) -> bool:
    rest = list(m)
    for atom in part:
        if atom not in rest:
            return False
        rest.remove(atom)
    return True
