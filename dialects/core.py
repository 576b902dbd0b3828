"""Declaring `nn` ops in Python: operands, typed attributes, type rule, verifier, numpy reference.

An `nn` op is a generic-form MLIR operation (`"nn.conv2d"(...)`). Its definition lives here as
an `OpDef`, created by the `@nn_op` decorator on the op's type-inference function:

    @nn_op("relu", operands=["input"], reference=lambda x: np.maximum(x, 0))
    def relu(input):
        return input

The inference function receives one `TensorSpec` per operand (None for an omitted optional
operand, a list for a variadic one) and the attributes as keyword arguments; it returns the
result spec(s), and raises `VerifyError` with a clear message when the operands or attributes
are invalid. The same function is the verifier: the `nn-verify` pass re-runs it on the IR.
"""
from dataclasses import dataclass
import math

import numpy as np
from iree.compiler import ir

from estuary import dtypes

REQUIRED = object()
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
MAX_ELEMENTS = 1 << 31  # the largest tensor an op may produce (8 GiB of float32)


class VerifyError(ValueError):
    """Raised by type rules; the caller adds the op name and location."""


def check(cond, message):
    if not cond:
        raise VerifyError(message)


def check_size(shape, what):
    """VerifyError when a tensor of `shape` exceeds MAX_ELEMENTS: an op's result or input, or an
    intermediate the lowering builds (a padded input, small results from huge padding and strides)."""
    size = math.prod(shape)
    check(size <= MAX_ELEMENTS and all(d <= MAX_ELEMENTS for d in shape),
          f"{what} {list(shape)}: {size} elements, more than the {MAX_ELEMENTS} supported")


@dataclass(frozen=True)
class TensorSpec:
    """Shape and WebNN data type of a tensor."""

    shape: tuple
    dtype: str

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))

    @property
    def rank(self):
        return len(self.shape)

    @property
    def size(self):
        return math.prod(self.shape)

    def with_shape(self, shape):
        return TensorSpec(tuple(shape), self.dtype)

    def with_dtype(self, dtype):
        return TensorSpec(self.shape, dtype)

    def mlir_type(self):
        return ir.RankedTensorType.get(list(self.shape), dtypes.mlir_type(self.dtype))

    @staticmethod
    def of_type(t):
        rt = ir.RankedTensorType(t)
        return TensorSpec(tuple(rt.shape), dtypes.from_mlir(rt.element_type))

    def __str__(self):
        return f"{self.dtype}[{', '.join(map(str, self.shape))}]"


# ---------------------------------------------------------------- attribute kinds


class AttrKind:
    """How one attribute is stored in MLIR and read back into Python."""

    what = "a value"  # for messages: what `normalize` accepts

    def __init__(self, default=REQUIRED, allowed=None, doc=""):
        self.default = default
        self.allowed = tuple(allowed) if allowed else None
        self.doc = doc

    def normalize(self, value):
        return value

    def validate(self, name, value):
        if self.allowed is not None and value not in self.allowed:
            raise VerifyError(f"attribute '{name}' must be one of {list(self.allowed)}, got {value!r}")


def _check_int64(name, values):
    for v in values:
        if not INT64_MIN <= v <= INT64_MAX:
            raise VerifyError(f"attribute '{name}' has {v}, outside the 64-bit integer range")


class Ints(AttrKind):
    """List of integers (DenseI64ArrayAttr)."""

    what = "a list of integers"

    def normalize(self, value):
        return None if value is None else [int(v) for v in value]

    def validate(self, name, value):
        _check_int64(name, value)
        super().validate(name, value)

    def to_mlir(self, value):
        return ir.DenseI64ArrayAttr.get(value)

    def from_mlir(self, attr):
        return list(ir.DenseI64ArrayAttr(attr))


class Floats(AttrKind):
    """List of floats (DenseF64ArrayAttr)."""

    what = "a list of numbers"

    def normalize(self, value):
        return None if value is None else [float(v) for v in value]

    def to_mlir(self, value):
        return ir.DenseF64ArrayAttr.get(value)

    def from_mlir(self, attr):
        return list(ir.DenseF64ArrayAttr(attr))


class Int(AttrKind):
    """Integer scalar (i64 IntegerAttr)."""

    what = "an integer"

    def normalize(self, value):
        return None if value is None else int(value)

    def validate(self, name, value):
        _check_int64(name, [value])
        super().validate(name, value)

    def to_mlir(self, value):
        return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value)

    def from_mlir(self, attr):
        return ir.IntegerAttr(attr).value


class Float(AttrKind):
    """Float scalar (f64 FloatAttr, so int64-range and float values survive)."""

    what = "a number"

    def normalize(self, value):
        return None if value is None else float(value)

    def to_mlir(self, value):
        return ir.FloatAttr.get(ir.F64Type.get(), value)

    def from_mlir(self, attr):
        return ir.FloatAttr(attr).value


class Bool(AttrKind):
    def normalize(self, value):
        return None if value is None else bool(value)

    def to_mlir(self, value):
        return ir.BoolAttr.get(value)

    def from_mlir(self, attr):
        return ir.BoolAttr(attr).value


class Str(AttrKind):
    """Enumeration stored as a StringAttr; `allowed` lists the values."""

    what = "a string"

    def normalize(self, value):
        return None if value is None else str(value)

    def to_mlir(self, value):
        return ir.StringAttr.get(value)

    def from_mlir(self, attr):
        return ir.StringAttr(attr).value


class Strs(AttrKind):
    """List of enumeration strings (ArrayAttr of StringAttr)."""

    what = "a list of strings"

    def normalize(self, value):
        return None if value is None else [str(v) for v in value]

    def validate(self, name, value):
        if self.allowed is not None:
            for v in value:
                if v not in self.allowed:
                    raise VerifyError(f"attribute '{name}' entries must be among {list(self.allowed)}, got {v!r}")

    def to_mlir(self, value):
        return ir.ArrayAttr.get([ir.StringAttr.get(v) for v in value])

    def from_mlir(self, attr):
        return [ir.StringAttr(a).value for a in ir.ArrayAttr(attr)]


class DType(Str):
    """A WebNN data type name."""

    def __init__(self, default=REQUIRED, allowed=dtypes.ALL, doc=""):
        super().__init__(default, allowed, doc)


class Tensor(AttrKind):
    """Constant data: DenseElementsAttr or DenseResourceElementsAttr; read back as numpy."""

    def normalize(self, value):
        return value

    def validate(self, name, value):
        pass

    def to_mlir(self, value):
        return value  # built by the graph builder (it owns the buffers)

    def from_mlir(self, attr):
        return attr


# ---------------------------------------------------------------- op definitions


@dataclass
class OpDef:
    name: str
    operands: list  # names; "x?" optional, "xs*" variadic
    attrs: dict  # name -> AttrKind
    infer: object  # (*specs, **attrs) -> TensorSpec | list[TensorSpec]
    reference: object = None  # (*arrays, **attrs) -> ndarray | list[ndarray]
    family: str = ""
    doc: str = ""

    @property
    def full_name(self):
        return "nn." + self.name

    @property
    def operand_names(self):
        return [o.rstrip("?*") for o in self.operands]

    @property
    def has_segments(self):
        return any(o.endswith(("?", "*")) for o in self.operands)

    def complete_attrs(self, given):
        """Defaults filled in, values normalized and validated; unknown names rejected."""
        unknown = set(given) - set(self.attrs)
        if unknown:
            raise VerifyError(f"unknown attribute(s) {sorted(unknown)}; expected some of {sorted(self.attrs)}")
        out = {}
        for name, kind in self.attrs.items():
            value = given.get(name, kind.default)
            if value is REQUIRED:
                raise VerifyError(f"missing required attribute '{name}'")
            try:
                value = kind.normalize(value)
            except (TypeError, ValueError, OverflowError):
                raise VerifyError(f"attribute '{name}' must be {kind.what}, got {value!r}") from None
            if value is not None:
                kind.validate(name, value)
            out[name] = value
        return out

    def infer_specs(self, specs, attrs):
        result = self.infer(*specs, **attrs)
        return list(result) if isinstance(result, (list, tuple)) else [result]


REGISTRY = {}


def nn_op(name, operands, attrs=None, reference=None, family=""):
    """Decorator declaring an op; the decorated function is its type rule and verifier."""

    def wrap(fn):
        if name in REGISTRY:
            raise ValueError(f"nn.{name} declared twice")
        REGISTRY[name] = OpDef(name, list(operands), dict(attrs or {}), fn, reference, family,
                               (fn.__doc__ or "").strip())
        return fn

    return wrap


def get(name):
    """OpDef by short name ('conv2d') or full name ('nn.conv2d')."""
    return REGISTRY.get(name[3:] if name.startswith("nn.") else name)


# ---------------------------------------------------------------- shape helpers for type rules


def broadcast_shapes(a, b):
    """Bidirectional (numpy) broadcasting; VerifyError when incompatible."""
    a, b = tuple(a), tuple(b)
    rank = max(len(a), len(b))
    a = (1,) * (rank - len(a)) + a
    b = (1,) * (rank - len(b)) + b
    out = []
    for x, y in zip(a, b):
        if x != y and x != 1 and y != 1:
            raise VerifyError(f"shapes {list(a)} and {list(b)} are not broadcastable")
        out.append(y if x == 1 else x)
    return tuple(out)


def unidirectional_broadcastable(src, dst):
    src, dst = tuple(src), tuple(dst)
    if len(src) > len(dst):
        return False
    src = (1,) * (len(dst) - len(src)) + src
    return all(s == d or s == 1 for s, d in zip(src, dst))


def same_dtype(*specs, what="operands"):
    kinds = {s.dtype for s in specs if s is not None}
    check(len(kinds) <= 1, f"{what} must have the same data type, got {sorted(kinds)}")


def dtype_in(spec, allowed, what="input"):
    check(spec.dtype in allowed, f"{what} data type must be one of {list(allowed)}, got {spec.dtype}")


def rank_is(spec, rank, what="input"):
    check(spec.rank == rank, f"{what} must be of rank {rank}, got shape {list(spec.shape)}")


def axes_valid(axes, rank, what="axes"):
    check(all(0 <= a < rank for a in axes), f"{what} {list(axes)} out of range for rank {rank}")
    check(len(set(axes)) == len(axes), f"{what} {list(axes)} contain duplicates")


def numpy_dtype(spec):
    return dtypes.to_numpy(spec.dtype)


def cast_like(x, dtype_name):
    return np.asarray(x).astype(dtypes.to_numpy(dtype_name))
