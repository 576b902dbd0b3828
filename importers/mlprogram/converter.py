"""The ML Program conversion context `Context` (`c` in importers/mlprogram/ops/).

It converts one function of a MIL program: its opset (CoreML5..8 = iOS15..18) selects the block
and tells converters which version of an op applies (`c.opset`). Values live in `env` by MIL
name: nn Values, or numpy arrays for what is known at import (consts, decompressed constexpr
weights, results folded from those). A converter reads its inputs with `c.x` (an nn Value),
`c.xs` (a variadic list), `c.val` (a compile-time constant), `c.known` / `c.dims` (known up to
dynamic dimensions: symbolic.py) and `c.has`, and returns the op's result(s). Each result is
checked against the op's declared output type.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from iree.compiler import ir

from estuary.base import dims, dtypes
from estuary.base.dims import Dim
from estuary.dialects.core import TensorSpec
from estuary.dialects.graph import Graph, NNModule
from estuary.base.errors import ModelImportError, UnsupportedOpError, VerificationError
from estuary.importers.context import ConversionContext
from estuary.importers.coreml import flexible, model_kinds
from estuary.importers.coreml.loader import model_pb2
from estuary.importers.coreml.nd import constant_array
from estuary.importers.mlprogram import symbolic, values
from estuary.importers.mlprogram.ops import OPS
from estuary.importers.mlprogram.package import Source
from estuary.importers.mlprogram.symbolic import SymArray

OPSETS = {"CoreML5": 15, "CoreML6": 16, "CoreML7": 17, "CoreML8": 18}
_REQUIRED = object()


def mil_pb() -> Any:
    import importlib

    pb = model_pb2()
    return importlib.import_module(pb.__name__.rsplit(".", 1)[0] + ".MIL_pb2")


class State:
    """An iOS18 state: its name, current value (read_state / write_state) and boundary dtype."""

    def __init__(self, name: str, value: Any, dtype: str) -> None:
        self.name, self.value, self.dtype = name, value, dtype
        self.initial = value  # the function's input


class Op:
    """A MIL operation: its type, name, input bindings, output names and declared types."""

    def __init__(self, proto: Any) -> None:
        self.proto = proto
        self.type: str = proto.type
        self.outputs = [o.name for o in proto.outputs]
        name_attr = proto.attributes.get("name") if "name" in proto.attributes else None
        label = None
        if name_attr is not None and name_attr.immediateValue.tensor.strings.values:
            label = name_attr.immediateValue.tensor.strings.values[0]
        self.name: str = label or (self.outputs[0] if self.outputs else "<unnamed>")

    def bindings(self, key: str) -> list[Any]:
        return list(self.proto.inputs[key].arguments) if key in self.proto.inputs else []


def walk(ops: Sequence[Any]) -> Iterator[Any]:
    """Every operation proto, nested blocks included."""
    for op in ops:
        yield op
        for block in op.blocks:
            yield from walk(block.operations)


class Context(ConversionContext):
    """Builds the nn module of one function of an ML Program."""

    def __init__(self, src: Source, shapes: Mapping[str, Sequence[int]] | None = None,
                 function: str | None = None, graph: Graph | None = None) -> None:
        super().__init__(graph or Graph(src.path, "mlprogram"), src.path)
        self.src = src
        self.pb = mil_pb()
        self.shapes = dict(shapes or {})
        program = src.model.mlProgram
        descr = src.model.description
        self.function_name = function or descr.defaultFunctionName or "main"
        if self.function_name not in program.functions:
            raise ModelImportError(f"{src.path}: the ML Program has no function {self.function_name!r} "
                                   f"(functions: {', '.join(sorted(program.functions))})")
        self.function = program.functions[self.function_name]
        self.descr = description(src.model, self.function_name)
        opset = self.function.opset
        if opset not in OPSETS:
            raise ModelImportError(f"{src.path}: function {self.function_name!r} uses opset {opset!r}; Estuary "
                                   f"imports {', '.join(OPSETS)} (iOS15..iOS18)")
        if opset not in self.function.block_specializations:
            raise ModelImportError(f"{src.path}: function {self.function_name!r} has no block for its opset {opset!r}")
        self.opset = OPSETS[opset]
        self.block = self.function.block_specializations[opset]
        self.env: dict[str, Any] = {}
        self.bool_names: set[str] = set()
        self.extra_signature: dict[str, Any] = {}  # classifiers: class labels (ops/classify.py)
        self.states: list[State] = []

    # ------------------------------------------------------------ diagnostics

    def place(self) -> str:
        return f"{self.path}: function {self.function_name!r} (iOS{self.opset})"

    def where(self) -> str:
        return f"{self.place()}: operation {self.label!r} ({self.op_type})"

    def error_prefix(self) -> str:
        return self.where()

    def located(self, err: VerificationError) -> VerificationError:
        """An nn type rule's error (it names the nn op) with the MIL operation being converted."""
        what = f"MIL {self.op_type}, " if self.op_type else ""
        return VerificationError(f"{err} ({what}function {self.function_name!r}, iOS{self.opset})")

    # ------------------------------------------------------------ inputs of an op

    def _resolve(self, binding: Any) -> Any:
        if binding.WhichOneof("binding") == "name":
            if binding.name not in self.env:
                self.fail(f"input {binding.name!r} is used before any operation defines it")
            return self.env[binding.name]
        return values.immediate(binding.value, self.pb, self.read_blob, self.where())

    def has(self, op: Op, key: str) -> bool:
        return bool(op.bindings(key)) or (key != "name" and key in op.proto.attributes)

    def arg(self, op: Op, key: str) -> Any:
        """Input `key`: a binding, or (iOS16 constexpr ops, const) an attribute of that name."""
        b = op.bindings(key)
        if not b and key != "name" and key in op.proto.attributes:
            return values.immediate(op.proto.attributes[key], self.pb, self.read_blob, self.where())
        if not b:
            self.fail(f"the required input {key!r} is missing")
        if len(b) != 1:
            self.fail(f"input {key!r} takes one value, got {len(b)}")
        return self._resolve(b[0])

    def x(self, op: Op, key: str = "x") -> ir.Value:
        """Input `key` as an nn Value (a constant becomes an nn.constant)."""
        return self.value(self.arg(op, key), key)

    def xs(self, op: Op, key: str) -> list[ir.Value]:
        return [self.value(self._resolve(b), key) for b in op.bindings(key)]

    def val(self, op: Op, key: str, default: Any = _REQUIRED) -> Any:
        """Input `key` as a numpy array / str known at import (`default` when absent)."""
        v = self.known(op, key, default)
        if isinstance(v, SymArray):
            self.fail(f"input {key!r} depends on the dynamic dimensions ({v.symbols()}) and must be a fixed "
                      f"number here; compile for a fixed shape (--shape / shapes=)")
        return v

    def known(self, op: Op, key: str, default: Any = _REQUIRED) -> Any:
        """Input `key` known at import: a numpy array / str, or a SymArray (a value of dynamic
        dimensions, symbolic.py); `default` when absent."""
        if not self.has(op, key):
            if default is _REQUIRED:
                self.fail(f"the required input {key!r} is missing")
            return default
        v = self.arg(op, key)
        if isinstance(v, ir.Value):
            folded = constant_array(v)
            if folded is None:
                self.fail(f"input {key!r} must be known at compile time (data-dependent shapes and "
                          f"parameters are not supported)")
            return folded
        return v

    def dims(self, op: Op, key: str) -> list[dims.Value]:
        """Input `key` (a shape, begin, end, ...) as a list of ints and dynamic dimensions."""
        v = self.known(op, key)
        try:
            return symbolic.as_dims(v, f"input {key!r}")
        except symbolic.NotSymbolic as e:
            self.fail(str(e))

    def ints(self, op: Op, key: str, default: Any = _REQUIRED) -> Any:
        v = self.val(op, key, default)
        return v if v is None or v is default else [int(i) for i in np.asarray(v).reshape(-1)]

    def scalar(self, op: Op, key: str, default: Any = _REQUIRED) -> Any:
        v = self.val(op, key, default)
        if isinstance(v, np.ndarray):
            self.check(v.size == 1, f"input {key!r} must be a scalar, got shape {list(v.shape)}")
            return v.reshape(-1)[0].item()
        return v

    def value(self, v: Any, what: str = "input") -> ir.Value:
        if isinstance(v, ir.Value):
            return v
        if isinstance(v, np.ndarray):
            return self.const_nn(v)
        if isinstance(v, SymArray):
            return symbolic.materialize(self, v)
        self.fail(f"{what} is a {type(v).__name__}, not a tensor")

    def const_nn(self, array: np.ndarray) -> ir.Value:
        """An nn.constant of a MIL constant, in the element type it computes as."""
        a = np.asarray(array)
        if a.dtype.kind == "f":
            return self.const(a.astype(np.float32), "float32")
        if a.dtype.kind == "b":
            return self.const(a.astype(np.uint8), "uint8")
        if a.dtype in (np.int8, np.uint8):
            return self.const(a)
        return self.const(a.astype(np.int32), "int32")

    def dtype_of(self, v: Any) -> str:
        if isinstance(v, SymArray):
            return "float32" if v.dtype.kind == "f" else "int32"
        return self.spec(v).dtype if isinstance(v, ir.Value) else self.spec(self.value(v)).dtype

    # ------------------------------------------------------------ weights

    def read_blob(self, file_name: str, offset: int, count: int, type_name: str) -> np.ndarray:
        return self.src.blob_file(file_name, self.where()).read(offset, count, self.where())

    # ------------------------------------------------------------ conversion

    def unsupported(self) -> list[tuple[str, str, str]]:
        out = []
        for proto in walk(self.block.operations):
            op = Op(proto)
            entry = OPS.get(op.type)
            if entry is None:
                out.append((op.name, op.type, f"unsupported MIL op {op.type} (iOS{self.opset}, op {op.name!r})"))
            elif self.opset < entry.since:
                out.append((op.name, op.type, f"MIL op {op.type} is not in opset iOS{self.opset} "
                                              f"(it appeared in iOS{entry.since}); wrong opset?"))
        return out

    def convert_ops(self, ops: Sequence[Any]) -> None:
        for proto in ops:
            op = Op(proto)
            with dims.unifying(self.graph.unifier):  # symbolic.py reads Dims through it
                result = self.convert(op.name, op.type, OPS[op.type].fn, op)
            results = list(result) if isinstance(result, (list, tuple)) else [result]
            self.label, self.op_type = op.name, op.type
            self.check(len(results) == len(op.outputs),
                       f"the converter produced {len(results)} value(s) for {len(op.outputs)} output(s)")
            for out, value in zip(proto.outputs, results):
                if isinstance(value, (np.generic, bool, int, float)):  # numpy folds of rank-0 values
                    value = np.asarray(value)
                self._check_declared(out, value)
                self.env[out.name] = value

    def tensor_type(self, vt: Any, what: str) -> tuple[str, list[int | None]] | None:
        """values.tensor_type of `what` (an input, a state, an op's result); an unknown data type
        code (a damaged file) is a malformed model named here."""
        try:
            return values.tensor_type(vt, self.pb)
        except ValueError as e:
            raise ModelImportError(f"{self.place()}: {what}: {e}") from None

    def _check_declared(self, out: Any, value: Any) -> None:
        tt = self.tensor_type(out.type, f"operation {self.label!r} ({self.op_type}) result {out.name!r}")
        if tt is None or isinstance(value, str):
            return
        name, declared = tt
        if isinstance(value, list) or name == "STRING":
            return
        shape = list(self.spec(value).shape) if isinstance(value, ir.Value) else list(np.shape(value))
        if isinstance(value, SymArray):
            shape = list(value.shape)
        if len(shape) != len(declared) or any(d is not None and not isinstance(s, Dim) and d != s
                                              for d, s in zip(declared, shape)):
            self.fail(f"result {out.name!r} has shape {shape}, the program declares "
                      f"{['?' if d is None else d for d in declared]}")
        if name == "BOOL":
            self.bool_names.add(out.name)

    def declare_inputs(self) -> None:
        descr = {f.name: f for f in self.descr.input}
        unknown = sorted(set(self.shapes) - {i.name for i in self.function.inputs})
        if unknown:
            raise ModelImportError(f"{self.place()}: shapes= names unknown inputs {unknown}")
        for inp in self.function.inputs:
            if inp.type.WhichOneof("type") == "stateType":
                self.declare_state(inp)
                continue
            tt = self.tensor_type(inp.type, f"input {inp.name!r}")
            if tt is None:
                raise ModelImportError(f"{self.place()}: input {inp.name!r} is a {inp.type.WhichOneof('type')}; "
                                       f"only tensor inputs are supported (states: not yet)")
            type_name, mil_dims = tt
            if inp.name in descr:
                kind, spec, _ = model_kinds.input_spec(descr[inp.name], self.shapes, self.path)
                flexible.check_override(descr[inp.name], self.shapes, self.path)
            else:
                kind = "array"
                if inp.name in self.shapes:
                    shape = self.shapes[inp.name]
                elif any(d is None for d in mil_dims):
                    raise ModelImportError(f"{self.place()}: input {inp.name!r} has a flexible shape; "
                                           f"pass shapes={{{inp.name!r}: [...]}}")
                else:
                    shape = [int(d) for d in mil_dims]  # type: ignore[arg-type]
                spec = TensorSpec(shape, "float16" if type_name == "FLOAT16" else values.nn_dtype(type_name))
            if type_name == "BOOL":
                spec = TensorSpec(spec.shape, "uint8")
                self.bool_names.add(inp.name)
            elif type_name in ("INT32", "INT64", "INT16") and spec.dtype != "int32":
                spec = TensorSpec(spec.shape, "int32")
            value = self.graph.input(inp.name, spec)
            if spec.dtype == "float16":
                value = self.op("cast", [value], to="float32")
            if kind == "image" or len(spec.shape) != len(mil_dims):
                padded = [1] * (len(mil_dims) - len(spec.shape)) + list(spec.shape)
                target = [d if d is not None else s for d, s in zip(mil_dims, padded)]
                if dims.size(target) != spec.size:
                    raise ModelImportError(f"{self.place()}: input {inp.name!r} of shape {list(spec.shape)} "
                                           f"does not fit the function's input shape {mil_dims}")
                value = self.reshape(value, target)
            self.env[inp.name] = value

    def declare_state(self, inp: Any) -> None:
        """A state (iOS18 ct.StateType) is an input holding its value before the run and an output
        of the same name holding its value after it (docs/mlprogram.md "States")."""
        tt = self.tensor_type(inp.type.stateType.wrappedType, f"state {inp.name!r}")
        if tt is None or any(d is None for d in tt[1]):
            raise ModelImportError(f"{self.place()}: state {inp.name!r} must wrap a tensor of fixed shape")
        type_name, mil_dims = tt
        dtype = "float16" if type_name == "FLOAT16" else values.nn_dtype(type_name)
        value = self.graph.input(inp.name, TensorSpec([int(d) for d in mil_dims], dtype))  # type: ignore[arg-type]
        if dtype == "float16":
            value = self.op("cast", [value], to="float32")
        self.env[inp.name] = State(inp.name, value, dtype)
        self.states.append(self.env[inp.name])

    def outputs(self) -> list[tuple[str, ir.Value]]:
        descr = {f.name: f for f in self.descr.output}
        out = []
        for name in self.block.outputs:
            if name not in self.env:
                raise VerificationError(f"{self.place()}: output {name!r} is not produced by any operation")
            self.label, self.op_type = name, "output"
            value = self.value(self.env[name], f"output {name!r}")
            f = descr.get(name)
            if f is not None and f.type.WhichOneof("Type") == "multiArrayType" \
                    and f.type.multiArrayType.dataType == 65552 and self.spec(value).dtype == "float32":
                value = self.op("cast", [value], to="float16")
            out.append((name, value))
        for state in self.states:
            self.label, self.op_type = state.name, "state"
            value = self.value(state.value, f"state {state.name!r}")
            if state.dtype == "float16":
                value = self.op("cast", [value], to="float16")
            out.append((state.name, value))
        return out

    def _convert(self) -> list[tuple[str, ir.Value]]:
        """Convert the function into the graph's current function; returns its outputs."""
        bad = self.unsupported()
        if bad:
            raise UnsupportedOpError(self.place(), bad)
        self.declare_inputs()
        self.convert_ops(self.block.operations)
        outputs = self.outputs()
        if self.states:  # the runtime keeps these on the device (estuary.state)
            self.extra_signature["states"] = [[s.name, list(self.spec(s.initial).shape), s.dtype] for s in self.states]
        return outputs

    def _boundary(self, outputs: list[tuple[str, ir.Value]]) -> dict[str, str]:
        bools = {n: dtypes.BOOL for n, _ in outputs if n in self.bool_names}
        bools.update({i.name: dtypes.BOOL for i in self.function.inputs if i.name in self.bool_names})
        return bools

    def build(self) -> NNModule:
        """The function as the module's @main."""
        outputs = self._convert()
        nn = self.graph.finish(outputs)
        nn.extra_signature = self.extra_signature
        nn.boundary = self._boundary(outputs)
        nn.write_signature()
        return nn

    def build_function(self, symbol: str) -> dict[str, Any]:
        """The function as another function `symbol` of the graph's module; returns its entry in
        the signature's "functions" (entry point, inputs, outputs, states, dynamic dimensions)."""
        self.graph.begin_function(symbol)
        outputs = self._convert()
        specs = self.graph.seal(outputs)
        entry = flexible.function_entry(self.graph.inputs, specs, self._boundary(outputs), self.graph.unifier)
        return {"entry": symbol, **entry, **self.extra_signature}


def description(model: Any, function: str) -> Any:
    """The feature description of one function (a multifunction model describes each apart)."""
    return next((f for f in model.description.functions if f.name == function), model.description)


def build_all(src: Source, shapes: Mapping[str, Sequence[int]] | None = None, function: str | None = None) -> NNModule:
    """Every function of the model (only `function` when given) in one module, each compiled once
    per combination of its inputs' enumerated shapes (coreml/flexible.py): the default function
    (at its default shapes) as @main, the others as @fn1, @fn2, ...; the signature's "functions"
    maps each name to its entry point, inputs, outputs and states (docs/mlprogram.md "Functions")."""
    program = src.model.mlProgram
    default = function or src.model.description.defaultFunctionName or "main"
    shapes = dict(shapes or {})
    names = [default] if function else [default] + sorted(n for n in program.functions if n != default)
    inputs = {n: {i.name for i in program.functions[n].inputs} for n in program.functions}
    unknown = sorted(set(shapes) - set().union(*inputs.values()))
    if unknown and len(names) > 1:
        raise ModelImportError(f"{src.path}: shapes= names unknown inputs {unknown}")
    plan: list[tuple[str, str, dict[str, Sequence[int]]]] = []  # (name in the signature, MIL function, shapes=)
    enumerated: dict[str, dict[str, Any]] = {}
    for name in names:
        mine = {k: v for k, v in shapes.items() if k in inputs.get(name, ()) or len(names) == 1}
        combos = flexible.variants(description(src.model, name).input, mine, src.path)
        for combo in combos:
            label = flexible.variant_name(name, combo)
            plan.append((label, name, {**mine, **combo}))
            enumerated[label] = {"function": name, "shapes": combo}
        if not combos:
            plan.append((name, name, mine))
    if len(plan) == 1:
        return Context(src, plan[0][2], plan[0][1]).build()
    main = Context(src, plan[0][2], plan[0][1])
    nn = main.build()
    functions = {label: Context(src, fn_shapes, fn, main.graph).build_function(f"fn{i}")
                 for i, (label, fn, fn_shapes) in enumerate(plan[1:], 1)}
    return flexible.assemble(nn, functions, plan[0][0], enumerated)
