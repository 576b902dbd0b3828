"""The NNEF conversion context: walks the parsed graph's operations in order and maps each onto nn ops.

Converters (registered in importers/nnef/registry.py) receive this context as `c`. NNEF types map
to nn types as scalar -> float32, integer -> int32, logical -> uint8 (0/1). NNEF broadcasting aligns
shapes at the *leading* axes (missing trailing axes are singletons, §4.2.2), so `c.align` pads the
lower-rank operand with trailing 1s before an nn (numpy-style) broadcasting op.
"""
import re

import numpy as np

from estuary.dialects.core import TensorSpec
from estuary.dialects.graph import Graph, spec_of
from estuary.errors import MALFORMED, VerificationError, where
from estuary.importers.nnef import quant
from estuary.importers.nnef.registry import OPS

DTYPES = {"scalar": "float32", "integer": "int32", "logical": "uint8"}
NUMPY = {"scalar": np.float32, "integer": np.int32, "logical": np.uint8}


def is_identifier(arg):
    import nnef

    return isinstance(arg, nnef.Identifier)


class Converter:
    """Builds the nn module of one parsed (and shape-inferred) NNEF graph."""

    def __init__(self, parsed, files, text):
        self.parsed = parsed
        self.files = files
        self.path = files.graph_path
        self.text = text
        self.graph = Graph(self.path, "nnef")
        self.values = {}  # tensor identifier -> nn Value
        self.inv = None
        self.label = None

    # ------------------------------------------------------------ diagnostics

    def line_of(self, name):
        return find_line(self.text, name)

    def fail(self, message):
        line = self.line_of(self.label)
        source = f"{self.path}:{line}" if line else self.path
        op_type = self.inv.name if self.inv is not None else None
        raise VerificationError(f"{where(source, self.label, op_type)}: {message}")

    def check(self, cond, message):
        if not cond:
            self.fail(message)

    # ------------------------------------------------------------ helpers for converters

    def tensor(self, arg, dtype=None):
        """The nn Value of an argument: a tensor identifier, or a literal (number, bool, nested list)
        made a constant (float -> float32, int -> int32, bool -> uint8, unless `dtype` is given)."""
        if is_identifier(arg):
            if arg not in self.values:
                self.fail(f"tensor {arg!r} is used before it is defined")
            return self.values[arg]
        if isinstance(arg, (list, tuple)) and any(is_identifier(a) for a in _flatten(arg)):
            self.fail(f"expected a single tensor, got a list of tensors {arg!r}")
        array = np.asarray(arg)
        if dtype is None:
            kind = array.dtype.kind
            dtype = "uint8" if kind == "b" else "int32" if kind in "iu" else "float32"
        return self.const(array, dtype)

    def tensors(self, list_arg):
        """nn Values of an array argument (list of identifiers and/or literals)."""
        if not isinstance(list_arg, (list, tuple)):
            return [self.tensor(list_arg)]
        return [self.tensor(a) for a in list_arg]

    def shape(self, arg):
        """Static shape of an argument from the parser's shape inference (list of ints)."""
        if isinstance(arg, (list, tuple)) and any(is_identifier(a) for a in _flatten(arg)):
            return [self.shape(a) for a in arg]
        if is_identifier(arg):
            shape = self.parsed.tensors[arg].shape
            return list(shape) if shape is not None else list(self.spec(self.values[arg]).shape)
        return list(np.shape(arg))

    def spec(self, value):
        return spec_of(value)

    def op(self, nn_name, operands, **attrs):
        """Append nn.<nn_name> named after the current NNEF result; None attributes are omitted."""
        try:
            return self.graph.op(nn_name, list(operands), {k: v for k, v in attrs.items() if v is not None},
                                 name=self.label)
        except VerificationError as e:
            line = self.line_of(self.label)
            text = str(e).replace(self.path, f"{self.path}:{line}", 1) if line else str(e)
            if self.inv is not None:
                text += f" (while converting NNEF {self.inv.name})"
            raise VerificationError(text) from None

    def const(self, array, dtype=None):
        array = np.asarray(array)
        spec = TensorSpec(array.shape, dtype or ("float32" if array.dtype.kind == "f" else
                                                 "uint8" if array.dtype.kind == "b" else "int32"))
        from estuary import dtypes

        return self.graph.constant(array.astype(dtypes.to_numpy(spec.dtype)), spec, name=self.label)

    def reshape(self, value, shape):
        shape = [int(d) for d in shape]
        if list(self.spec(value).shape) == shape:
            return value
        return self.op("reshape", [value], new_shape=shape)

    def align(self, *values):
        """Pad ranks with trailing singleton axes so that NNEF broadcasting becomes numpy broadcasting."""
        rank = max(self.spec(v).rank for v in values)
        out = []
        for v in values:
            s = self.spec(v)
            if 0 < s.rank < rank:
                v = self.reshape(v, list(s.shape) + [1] * (rank - s.rank))
            out.append(v)
        return out

    # ------------------------------------------------------------ conversion

    def declare_inputs(self):
        for name in self.parsed.inputs:
            t = self.parsed.tensors[name]
            if t.dtype not in DTYPES:
                raise VerificationError(f"{self.path}: input {name!r} has unsupported type {t.dtype!r}")
            self.values[name] = self.graph.input(str(name), TensorSpec(t.shape, DTYPES[t.dtype]))

    def convert(self):
        self.declare_inputs()
        self.run(self.parsed.operations)
        outputs = []
        for name in self.parsed.outputs:
            if name not in self.values:
                raise VerificationError(f"{self.path}: graph output {name!r} is never computed")
            outputs.append((str(name), self.values[name]))
        return self.graph.finish(outputs)

    def subgraph(self, parsed, values):
        """A context converting another parsed graph (e.g. a quantization fragment applied to one
        tensor) into the same nn function, its tensors named by `values` {identifier: Value}."""
        sub = Converter.__new__(Converter)
        sub.__dict__.update(self.__dict__)
        sub.parsed, sub.values, sub.inv, sub.label, sub.text = parsed, dict(values), None, None, None
        return sub

    def run(self, operations):
        """Convert `operations` in order, binding their results."""
        for inv in operations:
            self.inv = inv
            results = list(inv.outputs.values())
            self.label = str(_flatten(results)[0]) if _flatten(results) else inv.name
            try:
                produced = OPS[inv.name](self, inv)
            except MALFORMED as e:
                self.fail(f"cannot convert this invocation ({type(e).__name__}: {e})")
            produced = _as_results(results, produced)
            self.check(len(produced) == len(results),
                       f"converter produced {len(produced)} results, the operation has {len(results)}")
            for ident, value in zip(results, produced):
                self.bind(ident, value)
        self.inv = None
        self.label = None

    def bind(self, ident, value):
        if isinstance(ident, list):
            self.check(isinstance(value, (list, tuple)) and len(value) == len(ident),
                       f"expected {len(ident)} results for {ident}")
            for i, v in zip(ident, value):
                self.bind(i, v)
            return
        t = self.parsed.tensors[ident]
        if t.dtype in DTYPES and self.spec(value).dtype != DTYPES[t.dtype]:
            value = self.op("cast", [value], to=DTYPES[t.dtype])
        if t.shape is not None:
            self.check(list(self.spec(value).shape) == list(t.shape),
                       f"result {ident!r} has shape {list(self.spec(value).shape)}, "
                       f"shape inference says {list(t.shape)}")
        if t.quantization:
            self.label = str(ident)
            value = quant.apply(self, value, t.quantization)
        self.values[ident] = value


def find_line(text, name):
    """1-based line of the statement assigning tensor `name` in graph.nnef text, or None."""
    if not name or not text:
        return None
    pattern = re.compile(r"(^|[\[,\s])" + re.escape(str(name)) + r"\s*([,\]]|=(?!=))")
    for i, line in enumerate(text.splitlines(), 1):
        body = line.split("#", 1)[0]
        if "=" in body and pattern.search(body.split("=", 1)[0] + "="):
            return i
    return None


def _flatten(x):
    if isinstance(x, (list, tuple)):
        return [y for item in x for y in _flatten(item)]
    return [x]


def _as_results(results, produced):
    """A converter's return value as one entry per result of the invocation."""
    if len(results) != 1:
        return list(produced)
    if isinstance(results[0], list):  # one array-typed result: a list of Values (or [that list])
        nested = len(produced) == 1 and isinstance(produced[0], (list, tuple))
        return list(produced) if nested else [produced]
    return list(produced) if isinstance(produced, (list, tuple)) else [produced]
