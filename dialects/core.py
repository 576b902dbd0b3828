"""Declaring `nn` ops in Python: operands, typed attributes, type rule, verifier, numpy reference.

An `nn` op is a generic-form MLIR operation (`"nn.conv2d"(...)`). Its definition lives here as
an `OpDef`, created by the `@nn_op` decorator on the op's type-inference function:

    @nn_op("relu", operands=["input"], reference=lambda x: np.maximum(x, 0))
    def relu(input):
        return input

The inference function receives one `TensorSpec` per operand (None for an omitted optional
operand, a list for a variadic one) and the attributes as keyword arguments; it returns the
result spec(s), and raises `VerificationError` with a clear message when the operands or attributes
are invalid. The same function is the verifier: the `nn-verify` pass re-runs it on the IR.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
import math
from typing import Any, SupportsInt, TypeVar

import numpy as np
import numpy.typing as npt
from iree.compiler import ir

from estuary.base import dims, dtypes
from estuary.base.dims import Dim, DimError
from estuary.base.errors import VerificationError
from estuary.base.registry import Registry, family_of

REQUIRED = object()
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
MAX_ELEMENTS = 1 << 31  # the largest tensor an op may produce (8 GiB of float32)


def check(cond: object, message: str) -> None:
    if not cond:
        raise VerificationError(message)


def check_size(shape: Sequence[dims.Value], what: str) -> None:
    """VerificationError when a tensor of `shape` exceeds MAX_ELEMENTS: an op's result or input, or an
    intermediate the lowering builds (a padded input, small results from huge padding and strides).
    A dynamic dimension counts at its lower bound (a model whose tensors outgrow memory at the
    upper bounds fails when run at such sizes, as it would with those shapes fixed)."""
    least = [dims.lower(d) if isinstance(d, Dim) else d for d in shape]
    size = math.prod(least)
    check(size <= MAX_ELEMENTS and all(dims.upper(d) <= MAX_ELEMENTS for d in shape),
          f"{what} {_show(shape)}: {size} elements{' at least' if not dims.is_static(shape) else ''}, more than "
          f"the {MAX_ELEMENTS} supported")


def _show(shape: Sequence[dims.Value]) -> str:
    return f"[{', '.join(map(str, shape))}]"


ENCODING = "dims"  # a dynamic tensor type's encoding: #nn.dims<"seq, 2*seq; seq=1..512">


@dataclass(frozen=True, init=False)
class TensorSpec:
    """Shape and WebNN data type of a tensor. A dimension is an int or a `Dim` (dynamic: a symbol
    or an expression of symbols, with bounds; estuary.base.dims). Any sequence of integers is
    accepted as the shape; it is stored as a tuple, so specs compare and hash by value."""

    shape: tuple[dims.Value, ...]
    dtype: str

    def __init__(self, shape: Iterable[SupportsInt | Dim], dtype: str) -> None:
        object.__setattr__(self, "shape", tuple(d if isinstance(d, Dim) else int(d) for d in shape))
        object.__setattr__(self, "dtype", dtype)

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> dims.Value:
        return dims.size(self.shape)

    @property
    def static(self) -> bool:
        """No dynamic dimension."""
        return dims.is_static(self.shape)

    def static_shape(self, what: str = "this operand") -> tuple[int, ...]:
        """The shape as ints; VerificationError naming the dynamic dimension otherwise."""
        for i, d in enumerate(self.shape):
            if isinstance(d, Dim):
                raise VerificationError(f"{what} has the dynamic dimension {i} ({d}) where a fixed size is needed")
        return tuple(int(d) for d in self.shape)

    def with_shape(self, shape: Iterable[SupportsInt | Dim]) -> TensorSpec:
        return TensorSpec(tuple(shape), self.dtype)

    def with_dtype(self, dtype: str) -> TensorSpec:
        return TensorSpec(self.shape, dtype)

    def mlir_type(self) -> ir.RankedTensorType:
        element = dtypes.mlir_type(self.dtype)
        if self.static:
            return ir.RankedTensorType.get([int(d) for d in self.shape], element)
        return ir.RankedTensorType.get(mlir_shape(self.shape), element, dims_encoding(self.shape))

    @staticmethod
    def of_type(t: ir.Type) -> TensorSpec:
        rt = ir.RankedTensorType(t)
        return TensorSpec(shape_of_type(rt), dtypes.from_mlir(rt.element_type))

    def __str__(self) -> str:
        return f"{self.dtype}[{', '.join(map(str, self.shape))}]"


def mlir_shape(shape: Iterable[dims.Value]) -> list[int]:
    """A shape for an MLIR type: dynamic dimensions as `?`."""
    return [ir.ShapedType.get_dynamic_size() if isinstance(d, Dim) else int(d) for d in shape]


def dims_encoding(shape: Sequence[dims.Value]) -> ir.Attribute:
    """`#nn.dims<"...">`: the dynamic dimensions of `shape` as expressions, with their symbols' bounds."""
    text = dims.shape_text(shape, only_dynamic=True)  # names and digits only: nothing to escape
    return ir.OpaqueAttr.get("nn", f'{ENCODING}<"{text}">'.encode(), ir.NoneType.get())


def shape_of_type(rt: ir.RankedTensorType) -> list[dims.Value]:
    """The shape of a ranked tensor type, dynamic dimensions read from its `#nn.dims` encoding."""
    shape: list[dims.Value] = list(rt.shape)
    dynamic = [i for i, d in enumerate(shape) if d == ir.ShapedType.get_dynamic_size()]
    if not dynamic:
        return shape
    encoding = rt.encoding
    text = None
    if encoding is not None and isinstance(encoding, ir.OpaqueAttr) and encoding.dialect_namespace == "nn":
        data = bytes(encoding.data).decode()
        if data.startswith(ENCODING + '<"') and data.endswith('">'):
            text = data[len(ENCODING) + 2:-2]
    if text is None:
        raise VerificationError(f"the tensor type {rt} has dynamic dimensions without an #nn.dims encoding "
                                f"naming them")
    try:
        values = dims.parse_shape(text)
    except DimError as e:
        raise VerificationError(f"the tensor type {rt}: {e}") from None
    if len(values) != len(dynamic) or not all(isinstance(v, Dim) for v in values):
        raise VerificationError(f"the tensor type {rt}: its #nn.dims encoding names {len(values)} dynamic "
                                f"dimension(s) for {len(dynamic)} '?'")
    for i, v in zip(dynamic, values):
        shape[i] = v
    return shape


# ---------------------------------------------------------------- attribute kinds


class AttrKind(ABC):
    """How one attribute is stored in MLIR and read back into Python."""

    what = "a value"  # for messages: what `normalize` accepts

    def __init__(self, default: object = REQUIRED, allowed: Iterable[object] | None = None, doc: str = "") -> None:
        self.default = default
        self.allowed = tuple(allowed) if allowed else None
        self.doc = doc

    def normalize(self, value: Any) -> Any:
        return value

    def validate(self, name: str, value: Any) -> None:
        if self.allowed is not None and value not in self.allowed:
            raise VerificationError(f"attribute '{name}' must be one of {list(self.allowed)}, got {value!r}")

    # Every concrete kind stores its values as one MLIR attribute and reads them back.
    @abstractmethod
    def to_mlir(self, value: Any) -> ir.Attribute:
        """`value` (normalized) as the MLIR attribute stored on the op."""

    @abstractmethod
    def from_mlir(self, attr: ir.Attribute) -> Any:
        """The Python value of a stored attribute."""


def _check_int64(name: str, values: Iterable[int]) -> None:
    for v in values:
        if not INT64_MIN <= v <= INT64_MAX:
            raise VerificationError(f"attribute '{name}' has {v}, outside the 64-bit integer range")


class Ints(AttrKind):
    """List of integers (DenseI64ArrayAttr)."""

    what = "a list of integers"

    def normalize(self, value: Any) -> list[int] | None:
        return None if value is None else [int(v) for v in value]

    def validate(self, name: str, value: Any) -> None:
        _check_int64(name, value)
        super().validate(name, value)

    def to_mlir(self, value: Sequence[int]) -> ir.Attribute:
        return ir.DenseI64ArrayAttr.get(value)

    def from_mlir(self, attr: ir.Attribute) -> list[int]:
        return list(ir.DenseI64ArrayAttr(attr))


class Shape(AttrKind):
    """A list of dimensions (ints, or `Dim` expressions for dynamic ones): a DenseI64ArrayAttr when
    every entry is an int (static models keep their plain form), else a StringAttr in the
    `dims.shape_text` form (`"1, seq, 64; seq=1..512"`)."""

    what = "a list of integers or dimensions"

    def normalize(self, value: Any) -> list[dims.Value] | None:
        return None if value is None else [dims.value(v) for v in value]

    def validate(self, name: str, value: Any) -> None:
        _check_int64(name, [v for v in value if not isinstance(v, Dim)])
        super().validate(name, value)

    def to_mlir(self, value: Sequence[dims.Value]) -> ir.Attribute:
        if dims.is_static(value):
            return ir.DenseI64ArrayAttr.get([int(v) for v in value])
        return ir.StringAttr.get(dims.shape_text(value))

    def from_mlir(self, attr: ir.Attribute) -> list[dims.Value]:
        if isinstance(attr, ir.StringAttr):
            try:
                return dims.parse_shape(attr.value)
            except DimError as e:
                raise VerificationError(str(e)) from None
        return list(ir.DenseI64ArrayAttr(attr))


class Floats(AttrKind):
    """List of floats (DenseF64ArrayAttr)."""

    what = "a list of numbers"

    def normalize(self, value: Any) -> list[float] | None:
        return None if value is None else [float(v) for v in value]

    def to_mlir(self, value: Sequence[float]) -> ir.Attribute:
        return ir.DenseF64ArrayAttr.get(value)

    def from_mlir(self, attr: ir.Attribute) -> list[float]:
        return list(ir.DenseF64ArrayAttr(attr))


class Int(AttrKind):
    """Integer scalar (i64 IntegerAttr)."""

    what = "an integer"

    def normalize(self, value: Any) -> int | None:
        return None if value is None else int(value)

    def validate(self, name: str, value: Any) -> None:
        _check_int64(name, [value])
        super().validate(name, value)

    def to_mlir(self, value: int) -> ir.Attribute:
        return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value)

    def from_mlir(self, attr: ir.Attribute) -> int:
        return ir.IntegerAttr(attr).value


class Float(AttrKind):
    """Float scalar (f64 FloatAttr, so int64-range and float values survive)."""

    what = "a number"

    def normalize(self, value: Any) -> float | None:
        return None if value is None else float(value)

    def to_mlir(self, value: float) -> ir.Attribute:
        return ir.FloatAttr.get(ir.F64Type.get(), value)

    def from_mlir(self, attr: ir.Attribute) -> float:
        return ir.FloatAttr(attr).value


class Bool(AttrKind):
    """Boolean (BoolAttr)."""

    def normalize(self, value: Any) -> bool | None:
        return None if value is None else bool(value)

    def to_mlir(self, value: bool) -> ir.Attribute:
        return ir.BoolAttr.get(value)

    def from_mlir(self, attr: ir.Attribute) -> bool:
        return ir.BoolAttr(attr).value


class Str(AttrKind):
    """Enumeration stored as a StringAttr; `allowed` lists the values."""

    what = "a string"

    def normalize(self, value: Any) -> str | None:
        return None if value is None else str(value)

    def to_mlir(self, value: str) -> ir.Attribute:
        return ir.StringAttr.get(value)

    def from_mlir(self, attr: ir.Attribute) -> str:
        return ir.StringAttr(attr).value


class Strs(AttrKind):
    """List of enumeration strings (ArrayAttr of StringAttr)."""

    what = "a list of strings"

    def normalize(self, value: Any) -> list[str] | None:
        return None if value is None else [str(v) for v in value]

    def validate(self, name: str, value: Any) -> None:
        if self.allowed is not None:
            for v in value:
                if v not in self.allowed:
                    raise VerificationError(f"attribute '{name}' entries must be among {list(self.allowed)}, got {v!r}")

    def to_mlir(self, value: Sequence[str]) -> ir.Attribute:
        return ir.ArrayAttr.get([ir.StringAttr.get(v) for v in value])

    def from_mlir(self, attr: ir.Attribute) -> list[str]:
        return [ir.StringAttr(a).value for a in ir.ArrayAttr(attr)]


class DType(Str):
    """A WebNN data type name."""

    def __init__(self, default: object = REQUIRED, allowed: Iterable[object] | None = dtypes.ALL,
                 doc: str = "") -> None:
        super().__init__(default, allowed, doc)


class Tensor(AttrKind):
    """Constant data: DenseElementsAttr or DenseResourceElementsAttr; read back as numpy."""

    def normalize(self, value: Any) -> Any:
        return value

    def validate(self, name: str, value: Any) -> None:
        pass

    def to_mlir(self, value: ir.Attribute) -> ir.Attribute:
        return value  # built by the graph builder (it owns the buffers)

    def from_mlir(self, attr: ir.Attribute) -> ir.Attribute:
        return attr


# ---------------------------------------------------------------- op definitions

# What a type rule receives per declared operand: a spec, None (omitted optional), a list (variadic).
OperandSpec = TensorSpec | list[TensorSpec] | None
# A type rule: (*operand specs, **attributes) -> the result spec(s).
InferFn = Callable[..., TensorSpec | list[TensorSpec] | tuple[TensorSpec, ...]]
# A numpy reference: (*arrays, **attributes) -> ndarray | list[ndarray].
ReferenceFn = Callable[..., Any]
_Infer = TypeVar("_Infer", bound=InferFn)


@dataclass
class OpDef:
    name: str
    operands: list[str]  # names; "x?" optional, "xs*" variadic
    attrs: dict[str, AttrKind]
    infer: InferFn
    reference: ReferenceFn | None = None
    family: str = ""
    doc: str = ""
    dynamic: bool = False  # the type rule and the lowering handle dynamic dimensions

    @property
    def full_name(self) -> str:
        return "nn." + self.name

    @property
    def operand_names(self) -> list[str]:
        return [o.rstrip("?*") for o in self.operands]

    @property
    def has_segments(self) -> bool:
        return any(o.endswith(("?", "*")) for o in self.operands)

    def complete_attrs(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """Defaults filled in, values normalized and validated; unknown names rejected."""
        unknown = set(given) - set(self.attrs)
        if unknown:
            raise VerificationError(f"unknown attribute(s) {sorted(unknown)}; expected some of {sorted(self.attrs)}")
        out: dict[str, Any] = {}
        for name, kind in self.attrs.items():
            value = given.get(name, kind.default)
            if value is REQUIRED:
                raise VerificationError(f"missing required attribute '{name}'")
            try:
                value = kind.normalize(value)
            except (TypeError, ValueError, OverflowError):
                raise VerificationError(f"attribute '{name}' must be {kind.what}, got {value!r}") from None
            if value is not None:
                kind.validate(name, value)
            out[name] = value
        return out

    def infer_specs(self, specs: Sequence[OperandSpec], attrs: Mapping[str, Any]) -> list[TensorSpec]:
        result = self.infer(*specs, **attrs)
        return list(result) if isinstance(result, (list, tuple)) else [result]


# Every nn op declaration, by short name; `OPS.load()` imports each family module of dialects/ops/.
OPS: Registry[str, OpDef] = Registry("nn op", packages=["estuary.dialects.ops"])


def nn_op(name: str, operands: Iterable[str], attrs: Mapping[str, AttrKind] | None = None,
          reference: ReferenceFn | None = None, family: str | None = None,
          dynamic: bool = False) -> Callable[[_Infer], _Infer]:
    """Decorator declaring an op; the decorated function is its type rule and verifier. The op's
    family is the declaring module's name (dialects/ops/<family>.py) unless `family` says otherwise.
    `dynamic`: its type rule and lowering take dynamic dimensions (others refuse them, by name)."""

    def wrap(fn: _Infer) -> _Infer:
        opdef = OpDef(name, list(operands), dict(attrs or {}), fn, reference,
                      family or family_of(fn.__module__), (fn.__doc__ or "").strip(), dynamic)
        OPS.add(name, opdef, fn.__module__)
        return fn

    return wrap


def get(name: str) -> OpDef | None:
    """OpDef by short name ('conv2d') or full name ('nn.conv2d')."""
    return OPS.load().get(name[3:] if name.startswith("nn.") else name)


# ---------------------------------------------------------------- shape helpers for type rules


def same_dim(a: dims.Value, b: dims.Value, what: str) -> dims.Value:
    """The common value of two dimensions that must be equal: equal ones, or dynamic ones made
    equal by the graph's Unifier (a check the runtime repeats); VerificationError(what) otherwise."""
    common = dims.same(a, b)
    if common is None:
        raise VerificationError(what)
    return common


def broadcast_shapes(a: Iterable[dims.Value], b: Iterable[dims.Value]) -> tuple[dims.Value, ...]:
    """Bidirectional (numpy) broadcasting; VerificationError when incompatible. A dynamic dimension
    broadcasts with 1; two different dynamic dimensions are taken as equal (the graph's Unifier
    records it and the runtime checks it)."""
    a, b = tuple(a), tuple(b)
    rank = max(len(a), len(b))
    a = (1,) * (rank - len(a)) + a
    b = (1,) * (rank - len(b)) + b
    out: list[dims.Value] = []
    for x, y in zip(a, b):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            common = dims.same(x, y) if isinstance(x, Dim) or isinstance(y, Dim) else None
            if common is None:
                raise VerificationError(f"shapes {_show(a)} and {_show(b)} are not broadcastable")
            out.append(common)
    return tuple(out)


def unidirectional_broadcastable(src: Iterable[dims.Value], dst: Iterable[dims.Value]) -> bool:
    """Whether `src` broadcasts to `dst` (dynamic dimensions unified as in broadcast_shapes)."""
    src, dst = tuple(src), tuple(dst)
    if len(src) > len(dst):
        return False
    src = (1,) * (len(dst) - len(src)) + src
    return all(s == d or s == 1 or ((isinstance(s, Dim) or isinstance(d, Dim)) and dims.same(s, d) is not None)
               for s, d in zip(src, dst))


def same_dtype(*specs: TensorSpec | None, what: str = "operands") -> None:
    kinds = {s.dtype for s in specs if s is not None}
    check(len(kinds) <= 1, f"{what} must have the same data type, got {sorted(kinds)}")


def dtype_in(spec: TensorSpec, allowed: Collection[str], what: str = "input") -> None:
    check(spec.dtype in allowed, f"{what} data type must be one of {list(allowed)}, got {spec.dtype}")


def rank_is(spec: TensorSpec, rank: int, what: str = "input") -> None:
    check(spec.rank == rank, f"{what} must be of rank {rank}, got shape {_show(spec.shape)}")


def axes_valid(axes: Sequence[int], rank: int, what: str = "axes") -> None:
    check(all(0 <= a < rank for a in axes), f"{what} {list(axes)} out of range for rank {rank}")
    check(len(set(axes)) == len(axes), f"{what} {list(axes)} contain duplicates")


def numpy_dtype(spec: TensorSpec) -> np.dtype[Any]:
    return dtypes.to_numpy(spec.dtype)


def cast_like(x: npt.ArrayLike, dtype_name: str) -> npt.NDArray[Any]:
    return np.asarray(x).astype(dtypes.to_numpy(dtype_name))
