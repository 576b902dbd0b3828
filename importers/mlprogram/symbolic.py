"""Shape arithmetic on dynamic dimensions (docs/mlprogram.md, "Flexible shapes").

A program converted with a `RangeDim` input keeps its shape computations: `shape(x)`, a `gather`
of one dimension, a `concat` into a reshape target, a `real_div` of two shapes giving `tile`'s
repetitions, a `range_1d` up to a length. The importer folds values known at import as numpy
(values.py); with dynamic dimensions a shape holds `Dim` expressions, so such a value is a
`SymArray`: a numpy object array of ints and Dims plus the element type it has in the program.

Converters fold SymArrays as they fold constants (`make`, `elementwise`, `exact_div`, `order`,
`slice_window`); a result whose Dims all cancel (`seq / seq`) is a plain numpy array again. What
the symbols' bounds do not decide (`seq == 8`, `seq // other`, a product with a fraction) raises
`NotSymbolic` and the converter computes it at run time instead: `materialize` turns the values
into data with `nn.dims_value`. Every Dim is read through the graph's Unifier (`dims.current()`),
so symbols found equal after a shape was taken compare equal.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from iree.compiler import ir

from estuary.base import dims
from estuary.base.dims import Dim

Objects = npt.NDArray[np.object_]  # ints and Dims


class NotSymbolic(Exception):
    """A fold the dynamic dimensions do not decide; the converter computes it at run time."""


@dataclass(frozen=True)
class SymArray:
    """A value known at import up to the dynamic dimensions: `values` (ints and Dims) standing for
    a tensor of element type `dtype` (int32 for shapes, float32 after a cast or a real_div)."""

    values: Objects
    dtype: np.dtype[Any]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.values.shape)

    def map(self, fn: Callable[[Objects], Any]) -> Known:
        """`fn` (a numpy data movement: reshape, transpose, take, indexing) applied to the values."""
        return make(fn(self.values), self.dtype)

    def symbols(self) -> str:
        """The symbols it depends on with their bounds, for messages: `seq=1..512`."""
        found: list[Any] = list(self.values.flat)
        return dims.bounds_text(dims.symbols(v for v in found if isinstance(v, Dim)).values())


Known = npt.NDArray[Any] | SymArray  # a value known at import


def known(v: object) -> bool:
    return isinstance(v, (np.ndarray, SymArray))


def resolve(v: dims.Value) -> dims.Value:
    """`v` with the symbols the graph's Unifier bound replaced by their representatives."""
    unifier = dims.current()
    return unifier.resolve(v) if unifier is not None and isinstance(v, Dim) else v


def _entry(v: Any) -> Any:
    """One element as an int or Dim (a whole float becomes an int; other floats stay)."""
    if isinstance(v, Dim):
        return resolve(v)
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return int(v)
    return v.item() if isinstance(v, np.generic) else v


def objects(v: Known) -> Objects:
    """The values of `v` as an object array of Python numbers and Dims."""
    raw = v.values if isinstance(v, SymArray) else np.asarray(v)
    out = np.empty(raw.shape, dtype=object)
    for i, x in np.ndenumerate(raw):
        out[i] = _entry(x)
    return out


def make(values: Any, dtype: Any) -> Known:
    """A SymArray when `values` holds a Dim, else the plain numpy array of `dtype`."""
    arr = np.asarray(values, dtype=object)
    arr = objects(SymArray(arr, np.dtype(dtype)))
    if any(isinstance(x, Dim) for x in arr.flat):
        return SymArray(arr, np.dtype(dtype))
    return arr.astype(dtype)


def elementwise(fn: Callable[..., Any], args: Sequence[Known], dtype: Any) -> Known:
    """`fn` applied element by element (numpy broadcasting) to Python numbers and Dims."""
    out = np.frompyfunc(fn, len(args), 1)(*[objects(a) for a in args])
    return make(np.asarray(out, dtype=object) if isinstance(out, np.ndarray) else _scalar(out), dtype)


def _scalar(v: Any) -> Objects:
    out = np.empty((), dtype=object)
    out[()] = v
    return out


def _whole(*vs: Any) -> tuple[Any, ...]:
    """The values, Dims resolved through the Unifier; NotSymbolic unless each is an int or a Dim
    (a Dim times 0.5 is no dimension)."""
    if not all(isinstance(v, (int, Dim)) and not isinstance(v, bool) for v in vs):
        raise NotSymbolic(f"{vs} mixes dynamic dimensions with non-integers")
    return tuple(resolve(v) for v in vs)


def add(a: Any, b: Any) -> Any:
    a, b = _whole(a, b)
    return a + b


def sub(a: Any, b: Any) -> Any:
    a, b = _whole(a, b)
    return a - b


def mul(a: Any, b: Any) -> Any:
    a, b = _whole(a, b)
    return a * b


def exact_div(a: Any, b: Any) -> Any:
    """a / b when it is a whole number (or an expression) for every value of the symbols."""
    a, b = _whole(a, b)
    if not isinstance(a, Dim) and not isinstance(b, Dim):
        if b == 0 or a % b:
            raise NotSymbolic(f"{a} / {b} is not whole")
        return a // b
    if isinstance(b, Dim):
        return _divide_by_monomial(a, b)
    if b < 0:
        return exact_div(-a, -b)
    q = a // b if b else None
    if q is None or q * b != a:
        raise NotSymbolic(f"{a} is not a multiple of {b}")
    return q


def _divide_by_monomial(a: dims.Value, b: Dim) -> dims.Value:
    """a / b for b = c * (a product of atoms) that divides every term of a."""
    if a == b:
        return 1
    if len(b.terms) != 1 or not isinstance(a, Dim):
        raise NotSymbolic(f"{a} / {b} is not a whole expression")
    (mono, coef), = b.terms
    want = Counter(mono)
    out: dict[tuple[Any, ...], int] = {}
    for m, c in a.terms:
        have = Counter(m)
        if any(have[x] < n for x, n in want.items()) or c % coef:
            raise NotSymbolic(f"{a} / {b} is not a whole expression")
        rest = tuple(sorted((have - want).elements(), key=lambda x: x.key))
        out[rest] = out.get(rest, 0) + c // coef
    return Dim.make(out)


def floor_div(a: Any, b: Any) -> Any:
    a, b = _whole(a, b)
    if isinstance(b, Dim) or b <= 0:
        return exact_div(a, b)  # a floor that is not exact needs the sign of the remainder
    return a // b


def mod(a: Any, b: Any) -> Any:
    a, b = _whole(a, b)
    if isinstance(b, Dim) or b <= 0:
        raise NotSymbolic(f"{a} mod {b}")
    return a % b


def decide(mil: str, a: Any, b: Any) -> bool:
    """The MIL comparison `mil` of a and b when it holds, or fails, for every value of the
    symbols (judged on the bounds of a - b); NotSymbolic otherwise."""
    a, b = _whole(a, b)
    test = COMPARE[mil]
    d = a - b
    lo, hi = dims.lower(d), dims.upper(d)
    if mil in ("equal", "not_equal"):
        if lo == hi or lo > 0 or hi < 0:
            return test(lo)
    elif test(lo) == test(hi):  # the others are thresholds: one answer over [lo, hi]
        return test(lo)
    raise NotSymbolic(f"{a} {mil.replace('_', ' ')} {b} depends on the dynamic dimensions")


COMPARE: dict[str, Callable[[int], bool]] = {
    "equal": lambda d: d == 0, "not_equal": lambda d: d != 0, "less": lambda d: d < 0,
    "less_equal": lambda d: d <= 0, "greater": lambda d: d > 0, "greater_equal": lambda d: d >= 0}


def compare(mil: str, a: Known, b: Known) -> Known:
    """A MIL comparison decided by the symbols' bounds (a bool array), else NotSymbolic."""
    return elementwise(lambda x, y: decide(mil, x, y), [a, b], np.bool_)


def maximum(a: Any, b: Any) -> Any:
    return a if decide("greater_equal", a, b) else b


def minimum(a: Any, b: Any) -> Any:
    return a if decide("less_equal", a, b) else b


ARITHMETIC: dict[str, Callable[[Any, Any], Any]] = {
    "add": add, "sub": sub, "mul": mul, "real_div": exact_div, "floor_div": floor_div, "mod": mod,
    "maximum": maximum, "minimum": minimum}


def as_dims(v: Known, what: str) -> list[dims.Value]:
    """A rank-0 or rank-1 shape value as a list of ints and Dims."""
    flat = objects(v).reshape(-1)
    for x in flat:
        if not isinstance(x, (int, Dim)) or isinstance(x, bool):
            raise NotSymbolic(f"{what} holds {x!r}, not a whole number")
    return list(flat)


# ---------------------------------------------------------------- slicing


def index_in(i: dims.Value, dim: dims.Value) -> dims.Value:
    """Python's normalization of a slice bound: negative counts from the end, then clamped to
    [0, dim]; NotSymbolic when the symbols' bounds do not decide the case."""
    if decide("less", i, 0):
        i = i + dim
        return i if decide("greater_equal", i, 0) else 0
    return i if decide("less_equal", i, dim) else dim


def slice_window(dim: dims.Value, begin: dims.Value, end: dims.Value, stride: int, begin_masked: bool,
                 end_masked: bool) -> tuple[dims.Value, dims.Value]:
    """(start, size) of the window `begin:end:stride` (stride > 0) of an axis of size `dim`."""
    if stride <= 0:
        raise NotSymbolic("a slice with a negative stride over a dynamic dimension")
    start = 0 if begin_masked else index_in(begin, dim)
    stop = dim if end_masked else index_in(end, dim)
    size = stop - start
    if dims.upper(size) < 1:
        raise NotSymbolic(f"the slice {start}:{stop} is empty")
    return start, size


def sized_window(dim: dims.Value, begin: dims.Value, size: dims.Value) -> tuple[dims.Value, dims.Value]:
    """(start, size) of slice_by_size's window `begin`, `size` (-1: to the end) of an axis."""
    start = begin + dim if decide("less", begin, 0) else begin
    size = dim - start if isinstance(size, int) and size == -1 else size
    if not (decide("greater_equal", start, 0) and decide("less_equal", start + size, dim)) or dims.upper(size) < 1:
        raise NotSymbolic(f"the window {begin}, {size} may not fit an axis of size {dim}")
    return start, size


def element_at(dim: dims.Value, index: dims.Value) -> dims.Value:
    """The position of `x[index]` along an axis of size `dim` (negative counts from the end)."""
    i = index + dim if decide("less", index, 0) else index
    if not (decide("greater_equal", i, 0) and decide("less", i, dim)):
        raise NotSymbolic(f"index {index} may be outside an axis of size {dim}")
    return i


# ---------------------------------------------------------------- run-time data


def dims_tensor(c: Any, values: Sequence[dims.Value], shape: Sequence[int] | None = None,
                dtype: str = "int32") -> ir.Value:
    """`values` (ints and Dims) as an nn Value of `shape` (default [len(values)]): a constant when
    they are all ints, else nn.dims_value."""
    values = [resolve(v) for v in values]
    shape = [len(values)] if shape is None else list(shape)
    if dims.is_static(values):
        return c.const(np.asarray(values, dtype=dtype).reshape(shape), dtype)
    out = c.op("dims_value", [], values=values, dtype=dtype)
    return c.reshape(out, shape)


def materialize(c: Any, v: SymArray) -> ir.Value:
    """A SymArray as run-time data (int32, or float32 for a float value)."""
    out = dims_tensor(c, as_dims(v, "the value"), v.shape)
    return c.op("cast", [out], to="float32") if v.dtype.kind == "f" else out


def iota(c: Any, n: dims.Value) -> ir.Value:
    """0, 1, ..., n - 1 as an int32 nn Value [n] (a running sum of ones when n is dynamic)."""
    if not isinstance(n, Dim):
        return c.const(np.arange(n, dtype=np.int32), "int32")
    ones = c.op("expand", [c.const(np.ones([1], np.int32), "int32")], new_shape=[n])
    return c.op("cumulative_sum", [ones], axis=0, exclusive=True)
