"""The NNEF conversion context: walks the parsed graph's operations in order and maps each onto nn ops.

A converter is `fn(c, inv)`, registered by operation name in importers/nnef/ops/<family>.py: `c` is
this context, `inv` the `nnef` parser's operation record (`inv.name`, `inv.attribs`, `inv.inputs`,
`inv.outputs`, `inv.dtype`); it returns the nn Value(s) of the invocation's results in order (a
list for array results). NNEF types map
to nn types as scalar -> float32, integer -> int32, logical -> uint8 (0/1). NNEF broadcasting aligns
shapes at the *leading* axes (missing trailing axes are singletons, §4.2.2), so `c.align` pads the
lower-rank operand with trailing 1s before an nn (numpy-style) broadcasting op.
"""
import numpy as np

from estuary.base import dtypes
from estuary.dialects.core import TensorSpec
from estuary.dialects.graph import Graph
from estuary.base.errors import VerificationError, where
from estuary.importers.context import ConversionContext
from estuary.importers.nnef import quant
from estuary.importers.nnef.loader import find_line
from estuary.importers.nnef.ops import OPS

DTYPES = {"scalar": "float32", "integer": "int32", "logical": "uint8"}
NUMPY = {"scalar": np.float32, "integer": np.int32, "logical": np.uint8}


def is_identifier(arg):
    import nnef

    return isinstance(arg, nnef.Identifier)


class Converter(ConversionContext):
    """Builds the nn module of one parsed (and shape-inferred) NNEF graph."""

    def __init__(self, parsed, files, text):
        super().__init__(Graph(files.graph_path, "nnef"), files.graph_path)
        self.parsed = parsed
        self.files = files
        self.text = text
        self.values = {}  # tensor identifier -> nn Value
        self.inv = None

    # ------------------------------------------------------------ diagnostics

    def line_of(self, name):
        return find_line(self.text, name)

    def where(self):
        line = self.line_of(self.label)
        source = f"{self.path}:{line}" if line else self.path
        op_type = self.inv.name if self.inv is not None else None
        return where(source, self.label, op_type)

    def located(self, err):
        line = self.line_of(self.label)
        text = str(err).replace(self.path, f"{self.path}:{line}", 1) if line else str(err)
        if self.inv is not None:
            text += f" (while converting NNEF {self.inv.name})"
        return VerificationError(text)

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
        return self.const(array, dtype or ("int32" if array.dtype.kind in "iu" else None))

    def is_zero(self, arg):
        """Whether an argument is a literal (or, for the tract reader, a known value) equal to 0
        everywhere: an absent bias."""
        return not is_identifier(arg) and bool(np.all(np.asarray(arg) == 0))

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

    def build(self):
        """The nn module of the whole model."""
        self.declare_inputs()
        self.run(self.parsed.operations)
        outputs = []
        for name in self.parsed.outputs:
            if name not in self.values:
                raise VerificationError(f"{self.path}: graph output {name!r} is never computed")
            outputs.append((str(name), self.values[name]))
        nn = self.graph.finish(outputs)
        logical = [str(n) for n in list(self.parsed.inputs) + list(self.parsed.outputs)
                   if self.parsed.tensors[n].dtype == "logical"]
        if logical:  # a logical tensor is a numpy bool at the model boundary (uint8 0/1 inside)
            nn.boundary = {name: dtypes.BOOL for name in logical}
            nn.write_signature()
        return nn

    def subgraph(self, parsed, values):
        """A context converting another parsed graph (e.g. a quantization fragment applied to one
        tensor) into the same nn function, its tensors named by `values` {identifier: Value}."""
        sub = Converter.__new__(Converter)
        sub.__dict__.update(self.__dict__)
        sub.parsed, sub.values, sub.inv, sub.label, sub.op_type, sub.text = parsed, dict(values), None, None, None, None
        return sub

    def run(self, operations):
        """Convert `operations` in order, binding their results."""
        for inv in operations:
            self.inv = inv
            results = list(inv.outputs.values())
            self.label = str(_flatten(results)[0]) if _flatten(results) else inv.name
            produced = self.convert(self.label, inv.name, OPS[inv.name].fn, inv)
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
