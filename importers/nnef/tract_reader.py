"""NNEF read as tract reads it (docs/nnef.md, "NNEF as exporters write it").

torch-to-nnef's tract target, and its Khronos target where it leans on tract's leniencies, write
documents the Khronos parser refuses. This reader evaluates them with tract's rules
(sonos/tract nnef/src/deser.rs), statement by statement, into the same converters as the
Khronos path (importers/nnef/ops):

- an invocation binds its parameters by name, else by position while every argument before is
  positional, else from the declaration's default; arguments beyond the declaration are ignored;
- a fragment the document defines wins over any operation of the same name (the exporter's
  `gelu` is the erf form; the `nnef` package's standard library has the sigmoid approximation);
  its body sees only its parameters;
- literals, variables, constants and `tract_core_shape_of` are known values, and so is any
  operation on known values: a known tensor stands where an integer is declared
  (`reshape(x, shape = [d0, d1, -1])`, `epsilon = var_1e_05`), an integer where an integer array
  is (`softmax(x, 2)`);
- `extension tract_symbol S;` makes `S` a dynamic dimension (a `Dim` symbol, 1..2^31-1 unless
  `shapes=` fixes or bounds it); shape arithmetic on it folds into dimension expressions;
- an identifier assigned twice takes its last value.

Operations neither defined by the document, nor converted (OPS), nor a standard fragment with a
body are refused by name, all at once, before anything is built.
"""
from __future__ import annotations

import types
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from iree.compiler import ir

from estuary.base import dims, dtypes
from estuary.base.dims import Dim, DimError
from estuary.base.errors import ModelImportError, UnsupportedOpError, VerificationError
from estuary.dialects.core import TensorSpec
from estuary.dialects.graph import NNModule
from estuary.importers.mlprogram import symbolic
from estuary.importers.nnef import signatures, syntax, tract_shapes
from estuary.importers.nnef import tract_values as tv
from estuary.importers.nnef.converter import Converter
from estuary.importers.nnef.ops import OPS
from estuary.importers.nnef.syntax import (ArrayExpr, Assignment, Binary, Call, Conditional, Document, Expr,
                                           Fragment, Literal, Name, Subscript, TupleExpr, Unary)
from estuary.importers.nnef.tract_values import Known, NotSymbolic, Wire

_BINARY_OPS = {"+": "add", "-": "sub", "*": "mul", "/": "div", "^": "pow", "<": "lt", ">": "gt", "<=": "le",
               ">=": "ge", "==": "eq", "!=": "ne", "&&": "and", "||": "or"}
_UNARY_OPS = {"-": "neg", "!": "not"}
_BUILTINS = ("external", "tract_core_external", "variable", "constant", "tract_core_shape_of", "shape_of",
             "length_of", "tract_core_scan")
# element-wise operations whose known operands take the type of the other operands
_ELEMENTWISE = {"add", "sub", "mul", "div", "pow", "min", "max", "lt", "gt", "le", "ge", "eq", "ne", "select",
                "clamp", "and", "or"}
MAX_DEPTH = 256  # fragments expanding fragments
# A symbol's largest value unless `shapes=` bounds it: large enough for any sequence or image, small
# enough that sums (past + sequence) and products with channel counts up to 2048 stay within
# the 2^31 limit of one dimension.
DEFAULT_BOUND = 1 << 20


def is_tract_document(text: str) -> bool:
    """Whether the document declares a tract extension (`extension tract_registry ...;`,
    `extension tract_symbol ...;`): then it is read with tract's rules, not the Khronos parser's."""
    try:
        tokens = syntax.tokenize("<text>", text[:1 << 20])
    except ModelImportError:
        return False
    for i, t in enumerate(tokens[:-1]):
        if t.kind == "name" and t.text == "graph":
            return False
        if t.kind == "name" and t.text == "extension":
            j = i + 1
            while j < len(tokens) and tokens[j].text not in (";",):
                if tokens[j].kind == "name" and tokens[j].text.startswith("tract_"):
                    return True
                j += 1
    return False


class Reader(Converter):
    """Evaluates one parsed document (syntax.Document) into an nn module."""

    def __init__(self, doc: Document, files: Any, text: str, shapes: Mapping[str, Sequence[Any]] | None) -> None:
        parsed = types.SimpleNamespace(inputs=list(doc.inputs), outputs=list(doc.outputs), tensors={})
        super().__init__(parsed, files, text)
        self.doc = doc
        self.overrides = dict(shapes or {})
        self.symbols: dict[str, dims.Value] = {}
        self.wires: dict[str, Wire] = {}
        self.result_shapes: dict[str, list[dims.Value]] = {}
        self.line: int | None = None
        self.depth = 0
        self.counter = 0
        self.inputs: dict[str, ir.Value] = {}
        self.logical: set[str] = set()

    # ------------------------------------------------------------ diagnostics

    def line_of(self, name: Any) -> int | None:
        return self.line

    def at(self, node: Any) -> str:
        return f"{self.path}:{node.line}:{node.col}"

    def refuse(self, node: Any, message: str) -> ModelImportError:
        return ModelImportError(f"{self.at(node)}: {message}")

    # ------------------------------------------------------------ the whole document

    def build(self) -> NNModule:
        with dims.unifying(self.graph.unifier):
            self.check_operations()
            self.declare_symbols()
            self.declare_inputs()
            scope: dict[str, Any] = {}
            self.run_body(self.doc.body, scope)
            outputs: list[tuple[str, ir.Value]] = []
            for name in self.doc.outputs:
                if isinstance(scope.get(name), (list, tuple)) and len(scope[name]) == 1:
                    scope[name] = scope[name][0]  # a one-item tuple is its item (tract's coercion)
                if name not in scope or not isinstance(scope[name], Wire):
                    raise ModelImportError(f"{self.path}: graph output {name!r} is never computed")
                self.label = name
                value = self.materialize(scope[name])
                if value in [v for _, v in outputs] or value in self.inputs.values():
                    value = self.op("identity", [value])
                outputs.append((name, value))
        nn = self.graph.finish(outputs)
        logical = [n for n, v in outputs if self.spec(v).dtype == "uint8"] + sorted(self.logical)
        if logical:
            nn.boundary = {name: dtypes.BOOL for name in logical}
            nn.write_signature()
        return nn

    def check_operations(self) -> None:
        """Refuse, all at once, every operation that nothing defines (walking the graph and the
        fragments it reaches)."""
        unknown: dict[str, tuple[str, str, str]] = {}
        seen: set[str] = set()

        def visit(body: Sequence[Assignment], frag: str | None) -> None:
            for stmt in body:
                for call in _calls(stmt.value):
                    name = call.op
                    if name in seen or name in unknown:
                        continue
                    own = self.doc.fragments.get(name)
                    if own is not None and own.body is not None:
                        seen.add(name)
                        visit(own.body, name)
                        continue
                    sig = signatures.lookup(name)
                    if name in _BUILTINS or name in OPS:
                        seen.add(name)
                    elif sig is not None and sig.body is not None:
                        seen.add(name)
                        visit(sig.body, name)
                    else:
                        where = f"line {stmt.line}" + (f", in fragment {frag!r}" if frag else "")
                        reason = "no converter" + (" (declared without a body)" if own or sig else
                                                   ", and no fragment defines it")
                        unknown[name] = (_first_target(stmt), name, f"{reason}; {where}")

        visit(self.doc.body, None)
        if unknown:
            raise UnsupportedOpError(self.path, list(unknown.values()))

    # ------------------------------------------------------------ symbols and inputs

    def declare_symbols(self) -> None:
        for name, args in self.doc.extensions:
            if name != "tract_symbol":
                continue
            if len(args) != 1:
                raise ModelImportError(f"{self.path}: 'extension tract_symbol' names one symbol, got {args or 'none'}")
            sym = args[0]
            if sym in self.symbols:
                raise ModelImportError(f"{self.path}: symbol {sym!r} is declared twice")
            self.symbols[sym] = Dim.symbol(sym, 1, DEFAULT_BOUND)

    def external_calls(self) -> dict[str, Call]:
        found: dict[str, Call] = {}
        for stmt in self.doc.body:
            if isinstance(stmt.targets, Name) and isinstance(stmt.value, Call) \
                    and stmt.value.op in ("external", "tract_core_external"):
                found.setdefault(stmt.targets.name, stmt.value)
        return found

    def declare_inputs(self) -> None:
        """The graph's inputs in their declared order, with `shapes=` overrides applied: an
        integer fixes a dimension (a symbol's value everywhere), a (min, max) pair or 'min..max'
        bounds a symbol."""
        calls = self.external_calls()
        for name in self.overrides:
            if name not in calls:
                raise ModelImportError(f"{self.path}: shape given for {name!r}, which is not an external tensor of "
                                       f"the graph (externals: {', '.join(calls) or 'none'})")
        declared = {}
        for name in self.doc.inputs:
            call = calls.get(name)
            if call is None:
                raise ModelImportError(f"{self.path}: graph input {name!r} is not assigned an external tensor")
            self.line = call.line
            args = self.bind_args(signatures.lookup(call.op), call, {})
            declared[name] = (call, [self.dim_of(d, call) for d in self.attribute(args["shape"], "integer[]", call)])
        self.apply_overrides(declared)
        for name, (call, shape) in declared.items():
            shape = [dims.substitute(d, self.symbols) for d in shape]
            args = self.bind_args(signatures.lookup(call.op), call, {})
            if call.op == "external":
                dtype = tv.NNEF_TYPES.get(call.generic or "scalar")
            else:
                dtype = tv.datum_type(str(self.attribute(args["datum_type"], "string", call)))
            if dtype is None:
                raise self.refuse(call, f"input {name!r} has an unsupported type "
                                        f"({call.generic or self.attribute(args.get('datum_type'), 'string', call)})")
            if any(dims.upper(d) < 1 for d in shape):
                raise self.refuse(call, f"input {name!r} has invalid shape {shape} (extents must be positive)")
            self.label = name
            self.inputs[name] = self.graph.input(name, TensorSpec(shape, dtype))
            if dtype == "uint8":
                self.logical.add(name)

    def dim_of(self, value: Any, node: Any) -> dims.Value:
        try:
            return dims.value(value)
        except DimError as e:
            raise self.refuse(node, f"invalid dimension in an external shape: {e}") from None

    def apply_overrides(self, declared: dict[str, tuple[Call, list[dims.Value]]]) -> None:
        fixed: dict[str, dims.Value] = {}
        for name, given in self.overrides.items():
            call, shape = declared[name]
            items = list(given) if isinstance(given, (list, tuple)) else None
            if items is None or len(items) != len(shape):
                raise ModelImportError(f"{self.path}: shape {given!r} for {name!r} must have {len(shape)} items "
                                       f"(declared {shape})")
            out: list[dims.Value] = []
            for axis, (want, have) in enumerate(zip(items, shape)):
                bounds = _bounds(want)
                sym = have.sym if isinstance(have, Dim) else None
                if bounds is None:
                    try:
                        value = int(want)
                    except (TypeError, ValueError):
                        raise ModelImportError(f"{self.path}: invalid shape {given!r} for {name!r}") from None
                    if value <= 0:
                        raise ModelImportError(f"{self.path}: shape {given!r} for {name!r} must have positive extents")
                    if isinstance(have, Dim) and sym is None:
                        raise ModelImportError(f"{self.path}: dimension {axis} of {name!r} is {have}; fix its "
                                               f"symbols instead (give the inputs where they stand alone)")
                    if sym is not None:
                        if fixed.get(sym.name, value) != value:
                            raise ModelImportError(f"{self.path}: symbol {sym.name!r} is given {fixed[sym.name]} "
                                                   f"and {value}")
                        fixed[sym.name] = value
                    out.append(value)
                    continue
                if sym is None:
                    raise ModelImportError(f"{self.path}: dimension {axis} of {name!r} is {have}, not a symbol: "
                                           f"it cannot take the range {want!r}")
                lo, hi = bounds
                try:
                    fixed[sym.name] = Dim.symbol(sym.name, lo, hi)
                except DimError as e:
                    raise ModelImportError(f"{self.path}: shape {given!r} for {name!r}: {e}") from None
                out.append(fixed[sym.name])
            declared[name] = (call, out)
        self.symbols.update(fixed)
        for name, (call, shape) in declared.items():
            declared[name] = (call, [dims.substitute(d, fixed) for d in shape])

    # ------------------------------------------------------------ statements

    def run_body(self, body: Sequence[Assignment], scope: dict[str, Any]) -> None:
        for stmt in body:
            self.line = stmt.line
            self.label = _first_target(stmt)
            names = _target_names(stmt.targets)
            try:
                value = self.evaluate(stmt.value, scope, names)
            except RecursionError:
                raise self.refuse(stmt, "expression nested too deeply") from None
            self.assign(stmt.targets, value, scope, stmt)

    def assign(self, target: Expr, value: Any, scope: dict[str, Any], stmt: Assignment) -> None:
        if isinstance(target, Name):
            scope[target.name] = value
            return
        assert isinstance(target, (ArrayExpr, TupleExpr))
        items = list(value) if isinstance(value, (list, tuple)) else None
        if items is None or len(items) != len(target.items):
            raise self.refuse(stmt, f"{len(target.items)} names on the left, the value has "
                                    f"{len(items) if items is not None else 1}")
        for t, v in zip(target.items, items):
            self.assign(t, v, scope, stmt)

    # ------------------------------------------------------------ expressions

    def evaluate(self, expr: Expr, scope: dict[str, Any], names: Sequence[str] = ()) -> Any:
        if isinstance(expr, Literal):
            return expr.value
        if isinstance(expr, Name):
            if expr.name in scope:
                return scope[expr.name]
            if expr.name in self.symbols:
                return self.symbols[expr.name]
            raise self.refuse(expr, f"{expr.name!r} is neither a tensor defined before nor a symbol declared "
                                    f"with 'extension tract_symbol'")
        if isinstance(expr, ArrayExpr):
            return [self.evaluate(e, scope) for e in expr.items]
        if isinstance(expr, TupleExpr):
            return tuple(self.evaluate(e, scope) for e in expr.items)
        if isinstance(expr, Binary):
            if expr.op == "in":
                raise self.refuse(expr, "the 'in' operator is not supported")
            args = (syntax.Argument(None, expr.left), syntax.Argument(None, expr.right))
            return self.call(Call(_BINARY_OPS[expr.op], None, args, expr.line, expr.col), scope, names)
        if isinstance(expr, Unary):
            call = Call(_UNARY_OPS[expr.op], None, (syntax.Argument(None, expr.operand),), expr.line, expr.col)
            return self.call(call, scope, names)
        if isinstance(expr, Conditional):
            cond = self.scalar(self.evaluate(expr.condition, scope), expr)
            return self.evaluate(expr.then if cond else expr.otherwise, scope, names)
        if isinstance(expr, Subscript):
            return self.subscript(expr, scope)
        assert isinstance(expr, Call)
        return self.call(expr, scope, names)

    def subscript(self, expr: Subscript, scope: dict[str, Any]) -> Any:
        target = self.evaluate(expr.target, scope)
        if isinstance(target, Wire):
            if target.known is None:
                raise self.refuse(expr, "a subscript of a tensor needs its value known at import")
            target = tv.python(target.known)
        if not isinstance(target, (list, tuple)):
            raise self.refuse(expr, f"cannot subscript {target!r}")
        start = None if expr.index is None else int(self.scalar(self.evaluate(expr.index, scope), expr))
        if not expr.is_range:
            assert start is not None
            return target[start]
        stop = None if expr.stop is None else int(self.scalar(self.evaluate(expr.stop, scope), expr))
        return target[start:stop]

    def scalar(self, value: Any, node: Any) -> Any:
        """A single known value (a rank-0 known tensor unwrapped)."""
        if isinstance(value, Wire):
            if value.known is None or tv.ndim(value.known) != 0:
                raise self.refuse(node, "expected a single value known at import")
            return tv.python(value.known)
        return value

    # ------------------------------------------------------------ invocations

    def fresh(self, names: Sequence[str], count: int) -> list[str]:
        if len(names) == count:
            return list(names)
        base = names[0] if names else "t"
        self.counter += 1
        return [f"{base}__{self.counter}_{i}" for i in range(count)]

    def call(self, call: Call, scope: dict[str, Any], names: Sequence[str]) -> Any:
        own = self.doc.fragments.get(call.op)
        if own is not None and own.body is not None:
            return self.expand(own, call, scope)
        if call.op in _BUILTINS:
            return getattr(self, "builtin_" + call.op)(call, scope, names)
        sig = signatures.lookup(call.op)
        if sig is None and call.op in OPS:
            raise self.refuse(call, f"operation {call.op!r} has a converter but no declaration")
        if call.op in OPS:
            assert sig is not None
            return self.apply(sig, call, scope, names)
        if sig is not None and sig.body is not None:
            return self.expand(sig, call, scope)
        raise self.refuse(call, f"undefined operation {call.op!r}")

    def bind_args(self, sig: Fragment | None, call: Call, scope: dict[str, Any]) -> dict[str, Any]:
        """tract's argument rule: by name, else by position while every argument before it is
        positional, else the declared default; extra positional arguments are ignored."""
        if sig is None:
            raise self.refuse(call, f"undefined operation {call.op!r}")
        params = [p.name for p in sig.params]
        for arg in call.args:
            if arg.name is not None and arg.name not in params:
                raise self.refuse(call, f"{call.op} has no parameter {arg.name!r} (parameters: {', '.join(params)})")
        out: dict[str, Any] = {}
        for ix, param in enumerate(sig.params):
            named = [a for a in call.args if a.name == param.name]
            if named:
                out[param.name] = self.evaluate(named[0].value, scope)
            elif len(call.args) > ix and all(a.name is None for a in call.args[:ix + 1]):
                out[param.name] = self.evaluate(call.args[ix].value, scope)
            elif param.default is not None:
                out[param.name] = self.evaluate(param.default, {})
            else:
                raise self.refuse(call, f"{call.op}: missing argument {param.name!r}")
        return out

    def expand(self, frag: Fragment, call: Call, scope: dict[str, Any]) -> Any:
        args = self.bind_args(frag, call, scope)
        if self.depth >= MAX_DEPTH:
            raise self.refuse(call, f"fragments nest more than {MAX_DEPTH} deep")
        inner = dict(args)
        line, label = self.line, self.label
        self.depth += 1
        try:
            assert frag.body is not None
            self.run_body(frag.body, inner)
        finally:
            self.depth -= 1
            self.line, self.label = line, label
        missing = [r.name for r in frag.results if r.name not in inner]
        if missing:
            raise self.refuse(call, f"fragment {frag.name!r} does not assign its result(s) {', '.join(missing)}")
        results = [inner[r.name] for r in frag.results]
        return results[0] if len(results) == 1 else tuple(results)

    def apply(self, sig: Fragment, call: Call, scope: dict[str, Any], names: Sequence[str]) -> Any:
        """An operation with a converter: fold it when its tensors are known, else convert it."""
        args = self.bind_args(sig, call, scope)
        tensors = {p.name: args[p.name] for p in sig.params if syntax.tensor_type(p.type)}
        attribs = {p.name: self.attribute(args[p.name], p.type, call)
                   for p in sig.params if not syntax.tensor_type(p.type)}
        folded = self.fold(call.op, tensors, attribs, call)
        if folded is not None:
            return folded
        outputs = self.fresh(names, len(sig.results))
        inputs = self.inputs_of(call.op, tensors)
        in_shapes = [self.shape(v) for v in inputs.values() if not isinstance(v, list)]
        try:
            shapes = tract_shapes.result_shapes(call.op, in_shapes, attribs)
        except (DimError, KeyError, IndexError, TypeError, ValueError) as e:
            raise self.refuse(call, f"{call.op}: cannot compute the result shape ({e})") from None
        idents = [self.ident(n) for n in outputs]
        for ident, shape in zip(idents, shapes or []):
            self.result_shapes[ident] = shape
        inv = types.SimpleNamespace(name=call.op, attribs=attribs, inputs=inputs,
                                    outputs={r.name: i for r, i in zip(sig.results, idents)},
                                    dtype=call.generic or "scalar")
        self.inv = inv
        produced = self.convert(self.label, call.op, OPS[call.op].fn, inv)
        self.inv = None
        results = list(produced) if isinstance(produced, (list, tuple)) and len(sig.results) > 1 else [produced]
        wires: list[Any] = []
        for ident, value in zip(idents, results):
            if isinstance(value, (list, tuple)):
                wires.append([Wire(v) for v in value])
                continue
            expected = self.result_shapes.get(ident)
            if expected is not None and list(self.spec(value).shape) != list(expected):
                raise VerificationError(f"{self.path}:{self.line}: {call.op} {self.label!r}: result has shape "
                                        f"{list(self.spec(value).shape)}, expected {expected}")
            wires.append(Wire(value))
        return wires[0] if len(wires) == 1 else tuple(wires)

    def ident(self, name: str) -> Any:
        import nnef

        self.counter += 1
        return nnef.Identifier(f"{name}#{self.counter}")

    def inputs_of(self, op: str, tensors: dict[str, Any]) -> dict[str, Any]:
        """Tensor arguments as identifiers of registered Wires; known operands of element-wise
        operations take the type of the other operands (tract compares an integer literal with a
        float tensor by casting it)."""
        target = None
        if op in _ELEMENTWISE:
            for v in tensors.values():
                if isinstance(v, Wire) and v.value is not None and v.known is None:
                    target = self.spec(v.value).dtype
                    break
        out: dict[str, Any] = {}
        for name, v in tensors.items():
            if isinstance(v, list):
                out[name] = [self.register(self.wire_of(x), None) for x in v]
            else:
                out[name] = self.register(self.wire_of(v), target)
        return out

    def wire_of(self, value: Any) -> Wire:
        if isinstance(value, Wire):
            return value
        if isinstance(value, (tuple, list)) and len(value) == 1 and isinstance(value[0], (Wire, tuple, list)):
            return self.wire_of(value[0])
        try:
            return Wire(known=tv.as_known(value))
        except NotSymbolic:
            self.fail(f"expected a tensor, got {value!r}")

    def register(self, wire: Wire, dtype: str | None) -> Any:
        ident = self.ident("v")
        value = self.materialize(wire, dtype)
        self.values[ident] = value
        self.wires[ident] = Wire(value, wire.known)
        return ident

    def materialize(self, wire: Wire, dtype: str | None = None) -> ir.Value:
        """The nn Value of a tensor (a known value becomes a constant, or nn.dims_value for
        dimensions), converted to `dtype` when given and the value is known."""
        if wire.value is not None and (dtype is None or wire.known is None):
            return wire.value
        assert wire.known is not None
        known = wire.known
        target = dtype or tv.nn_type(known)
        if isinstance(known, tv.SymArray):
            out = symbolic.dims_tensor(self, tv.objects(known).reshape(-1).tolist(), list(known.shape))
            return out if target == "int32" else self.op("cast", [out], to=target)
        array = np.asarray(known)
        if target == "int32" and array.dtype.kind in "iu" and array.size and \
                (array.max() > np.iinfo(np.int32).max or array.min() < np.iinfo(np.int32).min):
            self.fail(f"integer value out of the 32-bit range ({array.min()}..{array.max()})")
        value = self.const(array.astype(tv.numpy_kind(target) if target != "int32" else np.int32), target)
        if dtype is None:
            wire.value = value
        return value

    # the converters' view of tensors

    def is_zero(self, arg: Any) -> bool:
        wire = self.wires.get(arg) if isinstance(arg, str) else None
        if wire is not None:
            known = wire.known
            return known is not None and not isinstance(known, tv.SymArray) and tv.size(known) <= tv.FOLD_LIMIT \
                and bool(np.all(np.asarray(known) == 0))
        return bool(super().is_zero(arg))

    def tensor(self, arg: Any, dtype: str | None = None) -> ir.Value:
        if isinstance(arg, str) and arg in self.values:
            return self.values[arg]
        return super().tensor(arg, dtype)

    def shape(self, arg: Any) -> list[Any]:
        if isinstance(arg, list):
            return [self.shape(a) for a in arg]
        if isinstance(arg, str) and arg in self.result_shapes:
            return list(self.result_shapes[arg])
        if isinstance(arg, str) and arg in self.wires:
            return self.wires[arg].shape(self.spec)
        return list(np.shape(arg))

    # ------------------------------------------------------------ attributes

    def attribute(self, value: Any, type_text: str, node: Any) -> Any:
        """An argument where a non-tensor is declared, as Python data: known tensors unwrapped,
        one integer where an array is declared made a one-item list (tract does both)."""
        if isinstance(value, Wire):
            if value.known is None:
                raise self.refuse(node, f"{getattr(node, 'op', '')}: an argument of type {type_text} must be known "
                                        f"when the model is imported, got a tensor computed at run time")
            value = tv.python(value.known)
        if type_text.endswith("[]"):
            item = type_text[:-2]
            items = value if isinstance(value, (list, tuple)) else [value]
            return [self.attribute(v, item, node) for v in items]
        if type_text.startswith("("):
            if not isinstance(value, (list, tuple)):
                raise self.refuse(node, f"expected a tuple {type_text}, got {value!r}")
            return tuple(self.attribute(v, "?", node) for v in value)
        if isinstance(value, (list, tuple)):
            return [self.attribute(v, "?", node) for v in value]
        if isinstance(value, np.generic):
            value = value.item()
        if type_text == "scalar" and isinstance(value, (int, bool)) and not isinstance(value, Dim):
            return float(value)
        if type_text == "integer" and isinstance(value, float) and value.is_integer():
            return int(value)
        if type_text == "logical" and isinstance(value, (int, np.integer)):
            return bool(value)
        return value

    # ------------------------------------------------------------ folding

    def fold(self, op: str, tensors: dict[str, Any], attribs: dict[str, Any], call: Call) -> Wire | None:
        """The result of `op` when every tensor argument is known and small, else None."""
        from estuary.importers.nnef import tract_fold

        rule = tract_fold.RULES.get(op)
        if rule is None:
            return None
        known: dict[str, Known] = {}
        for name, v in tensors.items():
            if isinstance(v, list):
                return None
            w = self.wire_of(v)
            if w.known is None or tv.size(w.known) > tv.FOLD_LIMIT:
                return None
            known[name] = w.known
        try:
            result = rule(known, attribs)
        except (NotSymbolic, DimError):
            return None
        except (ValueError, IndexError, TypeError) as e:
            raise self.refuse(call, f"{op}: {e}") from None
        return None if result is None else Wire(known=result)

    # ------------------------------------------------------------ built-in operations

    def builtin_external(self, call: Call, scope: dict[str, Any], names: Sequence[str]) -> Wire:
        name = names[0] if names else ""
        if name not in self.inputs:
            raise self.refuse(call, f"external tensor {name!r} must be listed among the graph's inputs")
        return Wire(self.inputs[name])

    builtin_tract_core_external = builtin_external

    def builtin_variable(self, call: Call, scope: dict[str, Any], names: Sequence[str]) -> Wire:
        """The data of `<label>.dat`, a known value; its item type is the file's (tract reads the
        file's type; `variable<scalar>` holding integers is cast by the graph when needed)."""
        args = self.bind_args(signatures.lookup("variable"), call, scope)
        label = str(self.attribute(args["label"], "string", call))
        shape = [int(d) for d in self.attribute(args["shape"], "integer[]", call)]
        if not label:
            raise self.refuse(call, "variable label must not be empty")
        cache = self.__dict__.setdefault("_variable_data", {})
        key = label.lower()
        if key not in cache:
            data = np.asarray(self.files.read_variable(label, shape))
            cache[key] = data
        data = cache[key]
        if list(data.shape) != shape:
            raise self.refuse(call, f"variable {label!r} shares its data with a variable of shape "
                                    f"{list(data.shape)}, but is declared with shape {shape}")
        if data.dtype.kind == "f":
            data = data.astype(np.float16 if data.dtype == np.float16 else np.float32)
        elif data.dtype.kind in "iu":
            data = data.astype(np.int64)
        if call.generic == "logical" and data.dtype.kind != "b":
            data = data != 0
        return Wire(known=data)

    def builtin_constant(self, call: Call, scope: dict[str, Any], names: Sequence[str]) -> Wire:
        args = self.bind_args(signatures.lookup("constant"), call, scope)
        shape = [int(d) for d in self.attribute(args["shape"], "integer[]", call)]
        values = self.attribute(args["value"], "?[]", call)
        volume = int(np.prod(shape))
        if len(values) not in (1, volume):
            raise self.refuse(call, f"value has {len(values)} items; the shape {shape} needs {volume} or 1")
        dtype = tv.numpy_kind(tv.NNEF_TYPES.get(call.generic or "scalar", "float32"))
        array = np.asarray(values, dtype=dtype)
        return Wire(known=np.full(shape, array[0], dtype) if len(values) == 1 else array.reshape(shape))

    def builtin_tract_core_shape_of(self, call: Call, scope: dict[str, Any], names: Sequence[str]) -> Wire:
        args = self.bind_args(signatures.lookup(call.op), call, scope)
        shape = self.wire_of(args["input"]).shape(self.spec)
        return Wire(known=tv.as_known([symbolic.resolve(d) for d in shape]))

    def builtin_shape_of(self, call: Call, scope: dict[str, Any], names: Sequence[str]) -> list[dims.Value]:
        if len(call.args) != 1:
            raise self.refuse(call, "shape_of takes one tensor")
        return [symbolic.resolve(d) for d in self.wire_of(self.evaluate(call.args[0].value, scope)).shape(self.spec)]

    def builtin_length_of(self, call: Call, scope: dict[str, Any], names: Sequence[str]) -> int:
        value = self.evaluate(call.args[0].value, scope) if len(call.args) == 1 else None
        if not isinstance(value, (list, tuple)):
            raise self.refuse(call, "length_of takes one array")
        return len(value)

    def builtin_tract_core_scan(self, call: Call, scope: dict[str, Any], names: Sequence[str]) -> Any:
        from estuary.importers.nnef.ops.tract_core import scan

        args = self.bind_args(signatures.lookup(call.op), call, scope)
        return scan(self, call, args)


# ---------------------------------------------------------------- helpers


def _calls(expr: Expr) -> Iterator[Call]:
    if isinstance(expr, Call):
        yield expr
        for a in expr.args:
            yield from _calls(a.value)
    elif isinstance(expr, Binary):
        yield Call(_BINARY_OPS.get(expr.op, expr.op), None, (), expr.line, expr.col)
        yield from _calls(expr.left)
        yield from _calls(expr.right)
    elif isinstance(expr, Unary):
        yield Call(_UNARY_OPS[expr.op], None, (), expr.line, expr.col)
        yield from _calls(expr.operand)
    elif isinstance(expr, (ArrayExpr, TupleExpr)):
        for e in expr.items:
            yield from _calls(e)
    elif isinstance(expr, Conditional):
        for e in (expr.then, expr.condition, expr.otherwise):
            yield from _calls(e)
    elif isinstance(expr, Subscript):
        for part in (expr.target, expr.index, expr.stop):
            if part is not None:
                yield from _calls(part)


def _target_names(target: Expr) -> list[str]:
    if isinstance(target, Name):
        return [target.name]
    if isinstance(target, (ArrayExpr, TupleExpr)):
        return [n for t in target.items for n in _target_names(t)]
    return []


def _first_target(stmt: Assignment) -> str:
    names = _target_names(stmt.targets)
    return names[0] if names else "?"


def _bounds(value: Any) -> tuple[int, int] | None:
    """(min, max) for a range given in `shapes=`: a pair, or the text 'min..max'."""
    if isinstance(value, str) and ".." in value:
        lo, _, hi = value.partition("..")
        try:
            return int(lo), int(hi)
        except ValueError:
            raise ModelImportError(f"invalid range {value!r} (expected 'min..max')") from None
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return int(value[0]), int(value[1])
    if isinstance(value, range):
        return value.start, value.stop - 1
    return None


def load(files: Any, text: str, quant_text: str | None, shapes: Mapping[str, Sequence[Any]] | None) -> NNModule:
    """Import a document with tract's rules (after the loader's safety checks on its text)."""
    if quant_text is not None:
        raise ModelImportError(f"{files.graph_path}: graph.quant is not supported with tract's extensions")
    try:
        doc = syntax.parse_document(files.graph_path, text)  # registries: their operations are refused by name
        return Reader(doc, files, text, shapes).build()
    except RecursionError:
        raise ModelImportError(f"{files.graph_path}: the document nests expressions too deeply") from None


__all__ = ["DEFAULT_BOUND", "Reader", "is_tract_document", "load"]
