"""Building `nn` modules: the graph builder importers use, and the module holder they return.

The builder creates one `func.func @main` whose arguments are the model inputs, inserts
generic-form `nn.*` ops in creation order (so the function is topologically sorted by
construction), infers every result type from the op's declaration and reports invalid
operands/attributes as `VerificationError` naming the source file, layer and op type.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
import ctypes
import gc
import itertools
import json
import sys
import types
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar, cast
import weakref

import numpy as np
import numpy.typing as npt
from iree.compiler import ir
from iree.compiler.dialects import func

if TYPE_CHECKING:
    from iree.compiler import api

from estuary.base import dims, dtypes
from estuary.base.dims import Dim
from estuary.dialects import core
from estuary.dialects.core import TensorSpec
from estuary.base.errors import VerificationError, where

# Small constants stay inline (readable IR, foldable); larger ones become resources that are
# handed to IREE by reference, never printed.
INLINE_LIMIT = 64

_resource_ids = itertools.count()
# Resource name -> numpy array, so passes can read weights back without printing the module.
# Weak: the MLIR context keeps each buffer alive exactly as long as the module can use it.
RESOURCES: weakref.WeakValueDictionary[str, npt.NDArray[Any]] = weakref.WeakValueDictionary()

SIGNATURE_ATTR = "estuary.signature"
DIMS_ATTR = "nn.dims"  # on the module: what type inference learned about its symbols (dims.Unifier.text)

# An operand as the builder takes it: a Value, a list for a variadic operand, None for an omitted one.
Operand: TypeAlias = "ir.Value | Sequence[ir.Value] | None"
# What creating an op returns: its one result, or the list of them for a multi-result op.
Results: TypeAlias = "ir.Value | list[ir.Value]"
_Attr = TypeVar("_Attr", bound=ir.Attribute)


# MLIR's Python bindings look for a module `iree.compiler.dialects.<namespace>` each time they wrap
# an op of a dialect without one (every `value.owner`), and retry a failed import every time: a
# filesystem search per nn op visited (docs/performance.md, "Compile time of long elementwise
# chains"). An empty module for `nn` is found once and remembered; `nn` ops stay generic OpViews.
sys.modules.setdefault("iree.compiler.dialects.nn", types.ModuleType("iree.compiler.dialects.nn"))


def new_session() -> api.Session:
    """An IREE compiler session whose MLIR context knows IREE's dialects and accepts `nn` ops.

    Modules are built in the session's own context so they can be compiled without a text
    round trip."""
    from iree.compiler import api

    session = api.Session()
    session.context.load_all_available_dialects()
    session.context.allow_unregistered_dialects = True
    return session


def free_session(session: api.Session) -> bool:
    """Destroy an IREE compiler session and the MLIR context it handed out, weights included,
    when nothing else refers to that context; else leave both alive. Returns whether it freed.

    IREE's `Session.context` hands the context to a Python wrapper that never destroys it
    (iree-org/iree#14371), so each model built this way stayed in memory until the process ended.
    Every operation, attribute, type and location of the context references that wrapper, and an
    open compiler invocation holds its module: when the session's reference is the only one left,
    nothing can reach the context and it is destroyed here. The reference count is compared with a
    probe object's, not a constant, because `sys.getrefcount` differs between Python versions."""
    if (getattr(session, "_owned_context", None) is None or getattr(session, "_dependents", True)
            or not _only_held_by_session(session)):
        return False  # not ours to free: an invocation or another object still uses it
    try:
        from iree.compiler.api import ctypes_dl

        destroy = ctypes_dl._dylib.mlirContextDestroy
        pointer = ctypes_dl.PyCapsule_GetPointer(session._owned_context._CAPIPtr,
                                                 ctypes_dl.MLIR_PYTHON_CAPSULE_CONTEXT)
    except (AttributeError, ImportError, ValueError):
        return False  # another IREE build: keep the old behaviour (the context lives on)
    session.close()  # IREE's session object; the context it handed out outlives it
    session._owned_context = None  # the last reference to the wrapper
    destroy(ctypes.c_void_p(pointer))
    return True


def _only_held_by_session(session: api.Session) -> bool:
    """Whether the session's reference is the only one to its context's Python wrapper."""
    holder = [object()]  # a probe referenced once, as the session references the context
    alone = sys.getrefcount(holder[0])
    if sys.getrefcount(session._owned_context) <= alone:
        return True
    gc.collect()  # cycles (a finished traceback, an importer's builder) may hold its objects
    return sys.getrefcount(session._owned_context) <= alone


def dense_attr(array: npt.ArrayLike, spec: TensorSpec) -> ir.DenseElementsAttr:
    """An inline DenseElementsAttr for `array` typed as `spec`."""
    array = np.ascontiguousarray(array, dtype=dtypes.to_numpy(spec.dtype))
    return ir.DenseElementsAttr.get(array, type=spec.mlir_type())


def constant_attr(array: npt.ArrayLike, spec: TensorSpec, signless: bool = False) -> ir.Attribute:
    """Inline DenseElementsAttr for small data, DenseResourceElementsAttr for the rest.

    With `signless`, unsigned data is typed with the signless integer of its width (the
    element types TOSA/linalg use after lowering)."""
    array = np.ascontiguousarray(array, dtype=dtypes.to_numpy(spec.dtype)).reshape(spec.shape)
    element = dtypes.storage_type(spec.dtype) if signless else dtypes.mlir_type(spec.dtype)
    t = ir.RankedTensorType.get(list(spec.shape), element)
    if signless and spec.dtype in dtypes.UNSIGNED:
        array = array.view(np.dtype(f"i{array.dtype.itemsize}"))
    if array.size <= INLINE_LIMIT:
        return ir.DenseElementsAttr.get(array, type=t)
    name = f"w{next(_resource_ids)}"
    flat = array.reshape(-1)
    RESOURCES[name] = flat  # the very object the attribute's buffer holds (kept alive by it)
    return ir.DenseResourceElementsAttr.get_from_buffer(flat.data, name, t)  # a memoryview of flat


def constant_value(attr: ir.Attribute) -> npt.NDArray[Any] | None:
    """Numpy value of a constant attribute, or None when its data is not at hand."""
    if _cast(ir.DenseResourceElementsAttr, attr) is not None:
        name = str(attr).split("<", 1)[1].split(">", 1)[0]
        flat = RESOURCES.get(name)
        if flat is None:
            return None
        spec = TensorSpec.of_type(attr.type)
        return flat.view(dtypes.to_numpy(spec.dtype)).reshape(spec.shape) if spec.dtype in dtypes.NUMPY else None
    if _cast(ir.DenseElementsAttr, attr) is not None:
        spec = TensorSpec.of_type(attr.type)
        dense = ir.DenseElementsAttr(attr)
        if dense.is_splat:
            value = _splat_value(dense, spec)
            return np.full(spec.shape, value, dtype=dtypes.to_numpy(spec.dtype))
        return np.array(dense).astype(dtypes.to_numpy(spec.dtype), copy=False).reshape(spec.shape)
    return None


def _cast(cls: type[_Attr], attr: ir.Attribute) -> _Attr | None:
    """`attr` as an instance of `cls`, or None (resource attributes are not auto-downcast)."""
    if isinstance(attr, cls):
        return attr
    try:
        return cls(attr)
    except (ValueError, TypeError):
        return None


def _splat_value(dense: ir.DenseElementsAttr, spec: TensorSpec) -> float | int:
    v = dense.get_splat_value()
    if spec.dtype in dtypes.FLOATS:
        return ir.FloatAttr(v).value
    return ir.IntegerAttr(v).value


class Graph:
    """Builds the `nn` module of one model."""

    def __init__(self, source: object = "<memory>", format: str = "nn", session: api.Session | None = None) -> None:
        self.source = str(source)
        self.format = format
        self.session = session or new_session()
        self.context: ir.Context = self.session.context
        self.inputs: list[tuple[str, TensorSpec]] = []
        self.keep: list[npt.NDArray[Any]] = []  # buffers referenced by resources
        self.unifier = dims.Unifier()  # the symbols' bindings and run-time checks (dynamic shapes)
        self.symbols: dict[str, dims.Sym] = {}  # every input symbol by name
        with self.context, self._loc(None):
            self.module = ir.Module.create()
            with ir.InsertionPoint(self.module.body):
                self.func = func.FuncOp("main", ir.FunctionType.get([], []))
            self.block = self.func.add_entry_block()

    def _loc(self, name: object) -> ir.Location:
        file_loc = ir.Location.file(self.source, 0, 0)
        return file_loc if name is None else ir.Location.name(str(name), childLoc=file_loc)

    def input(self, name: str, spec: TensorSpec) -> ir.Value:
        """Add a runtime input; returns its Value."""
        try:
            _check_tensor(spec, "the declared shape is")
            self._declare_symbols(spec)
        except VerificationError as e:
            raise VerificationError(f"{self.source}: input {name!r}: {e}") from None
        with self.context, self._loc(name):
            arg = self.block.add_argument(spec.mlir_type(), self._loc(name))
        self.inputs.append((name, spec))
        return arg

    def _declare_symbols(self, spec: TensorSpec) -> None:
        """An input's dynamic dimensions must be plain symbols; a name used twice keeps its bounds."""
        for i, d in enumerate(spec.shape):
            if not isinstance(d, Dim):
                continue
            sym = d.sym
            core.check(sym is not None, f"dimension {i} ({d}) must be a plain symbol, not an expression")
            assert sym is not None
            have = self.symbols.setdefault(sym.name, sym)
            core.check(have == sym, f"dimension {i} is {sym.name} with bounds {sym.lo}..{sym.hi}, but an earlier "
                                    f"input gave {sym.name} the bounds {have.lo}..{have.hi}")

    def constant(self, array: npt.ArrayLike, spec: TensorSpec | None = None, name: str | None = None) -> ir.Value:
        """An `nn.constant` holding `array` (converted to spec's dtype/shape if given)."""
        array = np.asarray(array)
        if spec is None:
            spec = TensorSpec(array.shape, dtypes.from_numpy(array.dtype))
        if array.size != spec.size:
            raise VerificationError(f"{where(self.source, name, 'constant')}: data has {array.size} "
                                    f"elements, descriptor {spec} needs {spec.size}")
        with self.context, self._loc(name):
            attr = constant_attr(array, spec)
            self.keep.append(array)
        return cast(ir.Value, self.op("constant", [], {"value": attr}, name=name))  # one result

    def op(self, op_name: str, operands: Iterable[Operand], attrs: Mapping[str, Any] | None = None,
           name: str | None = None) -> Results:
        """Append `nn.<op_name>`; returns its result Value, or a list for multi-result ops."""
        with self.context, self._loc(name), ir.InsertionPoint(self.block), dims.unifying(self.unifier):
            try:
                return create_op(op_name, operands, attrs)
            except VerificationError as e:
                raise VerificationError(f"{where(self.source, name, op_name)}: {e}") from None

    def seal(self, outputs: Sequence[tuple[str, ir.Value]]) -> list[tuple[str, TensorSpec]]:
        """Return the named outputs ([(name, Value)]) from the current function and fix its type;
        returns the outputs' specs."""
        with self.context, self._loc(None):
            with ir.InsertionPoint(self.block):
                func.ReturnOp([v for _, v in outputs])
            arg_types = [spec.mlir_type() for _, spec in self.inputs]
            out_types = [v.type for _, v in outputs]
            self.func.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(arg_types, out_types))
        return [(n, TensorSpec.of_type(v.type)) for n, v in outputs]

    def begin_function(self, symbol: str) -> None:
        """Start another function `symbol` of the module (a multifunction model's other entry
        points): `input`, `op` and `seal` build it from here on; @main stays the first."""
        with self.context, self._loc(None):
            with ir.InsertionPoint(self.module.body):
                self.func = func.FuncOp(symbol, ir.FunctionType.get([], []))
            self.block = self.func.add_entry_block()
        self.inputs = []

    def finish(self, outputs: Sequence[tuple[str, ir.Value]]) -> NNModule:
        """Return the named outputs ([(name, Value)]) and seal the function; returns an NNModule."""
        out_specs = self.seal(outputs)
        nn = NNModule(self.module, self.session, self.inputs, out_specs, self.format, self.source)
        nn.keep = self.keep
        nn.unifier = self.unifier
        nn.write_dims()
        nn.write_signature()
        return nn


def create_op(op_name: str, operands: Iterable[Operand], attrs: Mapping[str, Any] | None = None) -> Results:
    """Create `nn.<op_name>` at the current insertion point and location, result types inferred.

    Returns the result Value (or a list for multi-result ops); VerificationError on invalid input."""
    opdef = core.get(op_name)
    if opdef is None:
        raise VerificationError(f"no such nn op: {op_name}")
    specs, flat, segments = _operand_specs(opdef, operands)
    full = opdef.complete_attrs(dict(attrs or {}))
    if not opdef.dynamic:
        refuse_dynamic(opdef, specs, full)
    results = infer(opdef, specs, full)
    mlir_attrs = {k: opdef.attrs[k].to_mlir(v) for k, v in full.items() if v is not None}
    if segments is not None:
        mlir_attrs["operandSegmentSizes"] = ir.DenseI32ArrayAttr.get(segments)
    op = ir.Operation.create(opdef.full_name, results=[r.mlir_type() for r in results],
                             operands=flat, attributes=mlir_attrs)
    return op.results[0] if len(results) == 1 else list(op.results)


def spec_of(value: ir.Value) -> TensorSpec:
    return TensorSpec.of_type(value.type)


def infer(opdef: core.OpDef, specs: Sequence[core.OperandSpec], attrs: Mapping[str, Any]) -> list[TensorSpec]:
    """The result specs of `opdef` for operand `specs` and `attrs` (symbols resolved through the
    current Unifier, whose run-time checks grow by the results' derived dimensions)."""
    unifier = dims.current()
    if unifier is not None:
        specs = [resolved(s, unifier) for s in specs]
        attrs = {k: [unifier.resolve(d) for d in v] if isinstance(v, list) and any(isinstance(d, Dim) for d in v)
                 else v for k, v in attrs.items()}
    try:
        results = opdef.infer_specs(specs, attrs)
    except dims.DimError as e:
        raise VerificationError(str(e)) from None
    out = []
    for r in results:
        core.check(isinstance(r, TensorSpec), f"type rule of nn.{opdef.name} returned {r!r}")
        r = resolved(r, unifier) if unifier is not None else r
        _check_tensor(r, "the result would be")
        out.append(r)
    return out


def resolved(spec: Any, unifier: dims.Unifier) -> Any:
    """`spec` (a TensorSpec, a list of them or None) with bound symbols replaced."""
    if isinstance(spec, list):
        return [resolved(s, unifier) for s in spec]
    if isinstance(spec, TensorSpec) and not spec.static:
        return spec.with_shape(unifier.resolve(d) for d in spec.shape)
    return spec


def refuse_dynamic(opdef: core.OpDef, specs: Sequence[core.OperandSpec], attrs: Mapping[str, Any]) -> None:
    """VerificationError naming the operand (or attribute) and dimension, for an op whose type rule
    and lowering take only fixed shapes."""
    for declared, spec in zip(opdef.operands, specs):
        for i, s in enumerate(spec if isinstance(spec, list) else [spec]):
            if s is not None and not s.static:
                d = next(x for x in s.shape if isinstance(x, Dim))
                name = declared.rstrip("?*") + (f"[{i}]" if isinstance(spec, list) else "")
                raise VerificationError(f"nn.{opdef.name} does not take dynamic dimensions: operand '{name}' is "
                                        f"{s} ({dims.bounds_text(d.symbols())}); compile for a fixed shape "
                                        f"(--shape / shapes=)")
    for key, value in attrs.items():
        if isinstance(value, list) and any(isinstance(v, Dim) for v in value):
            raise VerificationError(f"nn.{opdef.name} does not take dynamic dimensions: attribute '{key}' is "
                                    f"{[str(v) for v in value]}")


def _check_tensor(spec: TensorSpec, what: str) -> None:
    """VerificationError unless `spec` is a tensor Estuary can build (no negative or zero-size
    dimension, at most core.MAX_ELEMENTS elements). Empty tensors are refused here, for every
    format, at the input that declares one or the op that would produce one: IREE crashes on some
    (an argMin over an empty axis dies with SIGFPE) and raises raw errors on others."""
    fixed = [d for d in spec.shape if not isinstance(d, Dim)]
    core.check(all(d >= 0 for d in fixed), f"{what} {spec}: a negative dimension")
    core.check(all(d != 0 for d in fixed), f"{what} {spec}: a zero-size dimension (empty tensors "
                                           "are not supported)")
    unifier = dims.current()
    for d in spec.shape:
        if isinstance(d, Dim):
            positive = unifier.need_positive(d) if unifier is not None else d.upper() >= 1
            core.check(positive, f"{what} {spec}: the dimension {d} is never positive "
                                 f"({dims.bounds_text(d.symbols())})")
    core.check_size(spec.shape, f"{what} {spec.dtype}")


def _operand_specs(opdef: core.OpDef, operands: Iterable[Operand]
                   ) -> tuple[list[core.OperandSpec], list[ir.Value], list[int] | None]:
    """Specs per declared operand, the flat Value list, and operandSegmentSizes (or None)."""
    operands = list(operands)
    decl = opdef.operands
    core.check(len(operands) <= len(decl), f"expects at most {len(decl)} operands, got {len(operands)}")
    operands += [None] * (len(decl) - len(operands))
    specs: list[core.OperandSpec] = []
    flat: list[ir.Value] = []
    segments: list[int] = []
    for d, v in zip(decl, operands):
        if d.endswith("*"):
            vs: list[ir.Value] = list(v or [])
            core.check(all(isinstance(x, ir.Value) for x in vs), f"operands '{d}' must be tensors")
            specs.append([spec_of(x) for x in vs])
            flat += vs
            segments.append(len(vs))
        elif v is None:
            core.check(d.endswith("?"), f"missing operand '{d}'")
            specs.append(None)
            segments.append(0)
        else:
            core.check(isinstance(v, ir.Value), f"operand '{d}' must be a tensor, got {type(v).__name__}")
            specs.append(spec_of(v))
            flat.append(v)
            segments.append(1)
    return specs, flat, (segments if opdef.has_segments else None)


def operand_groups(opdef: core.OpDef, op: ir.Operation) -> list[ir.Value | list[ir.Value] | None]:
    """Regroup an op's flat operands by declaration (None / list for optional / variadic)."""
    values = list(op.operands)
    if not opdef.has_segments:
        return values
    segments = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
    out: list[ir.Value | list[ir.Value] | None] = []
    i = 0
    for d, n in zip(opdef.operands, segments):
        chunk = values[i:i + n]
        i += n
        if d.endswith("*"):
            out.append(chunk)
        else:
            out.append(chunk[0] if chunk else None)
    return out


def op_attrs(opdef: core.OpDef, op: ir.Operation) -> dict[str, Any]:
    """Python values of an op's declared attributes (defaults for absent ones)."""
    out: dict[str, Any] = {}
    for name, kind in opdef.attrs.items():
        if name in op.attributes:
            out[name] = kind.from_mlir(op.attributes[name])
        else:
            out[name] = None if kind.default is core.REQUIRED else kind.default
    return out


def loc_name(op: ir.Operation) -> str | None:
    """The source layer/operation name carried in an op's NameLoc (or None)."""
    loc = op.location
    try:
        return loc.name_str
    except (ValueError, RuntimeError, AttributeError):
        return None


class NNModule:
    """An `nn` (or lowered) MLIR module plus the model signature it implements."""

    extra_signature: dict[str, Any]  # optional: more signature entries (e.g. Core ML class labels)

    def __init__(self, module: ir.Module, session: api.Session, inputs: Iterable[tuple[str, TensorSpec]],
                 outputs: Iterable[tuple[str, TensorSpec]], format: str = "nn", source: object = "<memory>") -> None:
        self.module = module
        self.session: api.Session | None = session
        self.context: ir.Context = session.context
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.format = format
        self.source = str(source)
        self.target: str | None = None  # set by the compiler; recorded in the signature
        self.keep: list[npt.NDArray[Any]] = []
        # the dtype the caller sees where it differs from the nn dtype, by input/output name:
        # "bool" for a uint8 0/1 tensor that is a boolean in the source format (NNEF `logical`)
        self.boundary: dict[str, str] = {}
        # what type inference learned about the dynamic dimensions' symbols (read back from DIMS_ATTR)
        self.unifier = read_dims(module)

    @property
    def main(self) -> ir.OpView:
        for op in self.module.body.operations:
            if op.operation.name == "func.func":
                return op
        raise VerificationError(f"{self.source}: module has no function")

    def signature(self) -> dict[str, Any]:
        sig: dict[str, Any] = {
            "format": self.format,
            "source": self.source,
            "inputs": [[n, shape_json(s.shape), self.boundary.get(n, s.dtype)] for n, s in self.inputs],
            "outputs": [[n, shape_json(s.shape), self.boundary.get(n, s.dtype)] for n, s in self.outputs],
        }
        table = dims.symbols(d for _, s in self.inputs + self.outputs for d in s.shape)
        if table:  # dynamic dimensions: the symbols' bounds and what the runtime must check
            sig["dims"] = {"symbols": {n: [s.lo, s.hi] for n, s in sorted(table.items())},
                           "rules": self.unifier.text()}
        if self.target:
            sig["target"] = self.target
        sig.update(getattr(self, "extra_signature", None) or {})  # e.g. Core ML class labels
        return sig

    def write_dims(self) -> None:
        """Store the Unifier's bindings and checks on the module (nothing for a static model)."""
        lines = self.unifier.text()
        if lines:
            with self.context:
                self.module.operation.attributes[DIMS_ATTR] = ir.ArrayAttr.get([ir.StringAttr.get(t) for t in lines])

    def write_signature(self) -> None:
        """Store the signature on @main as IREE reflection metadata (it travels into the .vmfb)."""
        with self.context:
            text = ir.StringAttr.get(json.dumps(self.signature()))
            self.main.attributes["iree.reflection"] = ir.DictAttr.get({SIGNATURE_ATTR: text})

    @staticmethod
    def from_module(module: ir.Module, session: api.Session, source: object = "<memory>") -> NNModule:
        """Wrap a parsed module; the signature comes from its reflection attribute or its types."""
        nn = NNModule(module, session, [], [], "nn", source)
        main = nn.main
        refl = main.attributes["iree.reflection"] if "iree.reflection" in main.attributes else None
        if refl is not None and SIGNATURE_ATTR in ir.DictAttr(refl):
            sig = json.loads(ir.StringAttr(ir.DictAttr(refl)[SIGNATURE_ATTR]).value)
            nn.format = sig.get("format", "nn")
            nn.boundary = {n: d for n, _, d in sig["inputs"] + sig["outputs"] if d == dtypes.BOOL}
            table = {n: dims.Sym(n, lo, hi) for n, (lo, hi) in sig.get("dims", {}).get("symbols", {}).items()}
            nn.inputs = [(n, TensorSpec(shape_from_json(s, table), "uint8" if d == dtypes.BOOL else d))
                         for n, s, d in sig["inputs"]]
            nn.outputs = [(n, TensorSpec(shape_from_json(s, table), "uint8" if d == dtypes.BOOL else d))
                          for n, s, d in sig["outputs"]]
            nn.extra_signature = {k: v for k, v in sig.items()
                                  if k not in ("format", "source", "inputs", "outputs", "target", "dims")}
            return nn
        ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
        nn.inputs = [(f"input{i}", TensorSpec.of_type(t)) for i, t in enumerate(ftype.inputs)]
        nn.outputs = [(f"output{i}", TensorSpec.of_type(t)) for i, t in enumerate(ftype.results)]
        nn.write_signature()
        return nn

    def close(self) -> bool:
        """Release the module and, when nothing else uses it, its MLIR context and weights
        (`free_session`). The NNModule is unusable afterwards. Returns whether memory was freed."""
        session, self.session = self.session, None
        self.module = self.context = None
        self.keep = []
        return session is not None and free_session(session)

    def __str__(self) -> str:
        return str(self.module)

    def asm(self, large_elements_limit: int | None = None) -> str:
        return self.module.operation.get_asm(large_elements_limit=large_elements_limit)


def shape_json(shape: Iterable[dims.Value]) -> list[int | str]:
    """A shape for the signature: ints, dynamic dimensions as their expression text."""
    return [str(d) if isinstance(d, Dim) else int(d) for d in shape]


def shape_from_json(shape: Iterable[int | str], table: Mapping[str, dims.Sym]) -> list[dims.Value]:
    return [dims.parse(d, table) if isinstance(d, str) else int(d) for d in shape]


def read_dims(module: ir.Module | ir.Operation) -> dims.Unifier:
    """The Unifier stored on a module (DIMS_ATTR), else an empty one."""
    attrs = module.operation.attributes if isinstance(module, ir.Module) else module.attributes
    if DIMS_ATTR not in attrs:
        return dims.Unifier()
    try:
        return dims.Unifier.from_text(ir.StringAttr(a).value for a in ir.ArrayAttr(attrs[DIMS_ATTR]))
    except (dims.DimError, ValueError) as e:
        raise VerificationError(f"module attribute {DIMS_ATTR}: {e}") from None
