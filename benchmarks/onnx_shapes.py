"""Shape arithmetic of ONNX graphs exported with dynamic axes, folded for onnx_to_webnn.

torch.onnx.export computes reshape targets, slice bounds and scales at run time from `Shape`:
chains of Shape, Gather, Slice, Unsqueeze, Concat, Cast, Div, Mul, ... over the input's sizes.
Here those chains are evaluated when converting: a value is a numpy array whose elements are ints
or, where they depend on a dynamic dimension, estuary `Dim` expressions (an object array), so a
reshape target becomes `[1, seq, 4, 8]` and its entries `{"name": "seq"}` / `{"expression": ...}`
in the WebNN JSON. Float arithmetic on fixed sizes (the attention scale 1/sqrt(head size)) folds
to a constant in float32 as onnxruntime computes it. A value that needs a dynamic size as data
(a float computed from `seq`) or an operation on sizes not listed here is refused with a message.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from onnx import TensorProto, helper

from estuary.base import dims
from estuary.base.dims import Dim

Array = npt.NDArray[Any]


class Refused(ValueError):
    """A pattern this converter does not fold (the message says which and why)."""


def symbolic(a: Array) -> bool:
    return a.dtype == object and any(isinstance(v, Dim) for v in a.reshape(-1))


def settle(a: Array) -> Array:
    """An object array without Dims as int64 (so later folding is plain numpy)."""
    return a.astype(np.int64) if a.dtype == object and not symbolic(a) else a


def _ints(a: Array, what: str) -> list[int]:
    if symbolic(a):
        raise Refused(f"{what} must be fixed, got {a.tolist()}")
    return [int(v) for v in np.asarray(a).reshape(-1)]


def _axes(node_attrs: dict[str, Any], values: Sequence[Array | None], index: int) -> list[int] | None:
    """Axes from the attribute (before opset 13/18) or the optional input `index`."""
    if "axes" in node_attrs:
        return list(node_attrs["axes"])
    if len(values) > index and values[index] is not None:
        return _ints(values[index], "axes")  # type: ignore[arg-type]
    return None


def _equal(a: Any, b: Any) -> bool:
    """Element equality of sizes; a Dim and an int outside its bounds differ, others must be equal."""
    if isinstance(a, Dim) or isinstance(b, Dim):
        if a == b:
            return True
        d, v = (a, b) if isinstance(a, Dim) else (b, a)
        if not isinstance(v, Dim) and (v < d.lower() or v > d.upper()):
            return False
        raise Refused(f"cannot compare the dynamic dimension {d} with {v} when converting")
    return bool(a == b)


def _float(a: Array) -> Array:
    if symbolic(a):
        raise Refused(f"a dynamic size {a.tolist()} is used as a number (only sizes may be dynamic)")
    return a


def _divide(a: Array, b: Array) -> Array:
    if a.dtype.kind == "f" or b.dtype.kind == "f":
        return np.asarray(_float(a) / _float(b))
    return np.asarray(a // b)  # sizes are positive: ONNX's truncation is the floor


def _slice(a: Array, starts: Array, ends: Array, axes: Array | None, steps: Array | None) -> Array:
    index = [slice(None)] * a.ndim
    axes_ = _ints(axes, "Slice axes") if axes is not None else list(range(len(starts)))
    steps_ = _ints(steps, "Slice steps") if steps is not None else [1] * len(axes_)
    for ax, s, e, k in zip(axes_, _ints(starts, "Slice starts"), _ints(ends, "Slice ends"), steps_):
        index[ax] = slice(s, e, k)
    return a[tuple(index)]


def _reshape(a: Array, shape: Array) -> Array:
    target = _ints(shape, "the reshape target of sizes")
    return a.reshape([a.shape[i] if d == 0 else d for i, d in enumerate(target)])


_NUMPY = {TensorProto.FLOAT: np.float32, TensorProto.DOUBLE: np.float64, TensorProto.INT64: np.int64,
          TensorProto.INT32: np.int32, TensorProto.BOOL: np.bool_, TensorProto.FLOAT16: np.float16}


def _cast(a: Array, to: int) -> Array:
    want = np.dtype(_NUMPY[to]) if to in _NUMPY else None
    if want is None:
        raise Refused(f"Cast to {helper.tensor_dtype_to_np_dtype(to)} of sizes")
    if want.kind in "iu" and a.dtype == object:
        return a  # sizes stay sizes
    return _float(a).astype(want) if want.kind == "f" else a.astype(want)


# op type -> fold(attributes, input values) -> output value(s)
FOLD: dict[str, Callable[[dict[str, Any], list[Any]], Array | list[Array]]] = {
    "Identity": lambda at, v: v[0],
    "Add": lambda at, v: np.asarray(v[0] + v[1]),
    "Sub": lambda at, v: np.asarray(v[0] - v[1]),
    "Mul": lambda at, v: np.asarray(v[0] * v[1]),
    "Div": lambda at, v: _divide(v[0], v[1]),
    "Mod": lambda at, v: np.asarray(v[0] % v[1]),
    "Neg": lambda at, v: np.asarray(-v[0]),
    "Sqrt": lambda at, v: np.sqrt(_float(v[0])),
    "Reciprocal": lambda at, v: np.asarray(1 / _float(v[0])),
    "Pow": lambda at, v: np.asarray(np.power(_float(v[0]), _float(v[1]))),
    "Floor": lambda at, v: np.floor(_float(v[0])),
    "Ceil": lambda at, v: np.ceil(_float(v[0])),
    "Cast": lambda at, v: _cast(v[0], at["to"]),
    "Gather": lambda at, v: np.asarray(np.take(v[0], _ints(v[1], "Gather indices") if v[1].ndim else
                                               int(v[1]), axis=at.get("axis", 0))),
    "Slice": lambda at, v: _slice(v[0], v[1], v[2], *(list(v[3:]) + [None, None])[:2]),
    "Concat": lambda at, v: np.concatenate([np.atleast_1d(x) for x in v], axis=at["axis"]),
    "Unsqueeze": lambda at, v: np.expand_dims(v[0], tuple(_axes(at, v, 1) or ())),
    "Squeeze": lambda at, v: np.squeeze(v[0], axis=tuple(a) if (a := _axes(at, v, 1)) is not None else None),
    "Reshape": lambda at, v: _reshape(v[0], v[1]),
    "Equal": lambda at, v: np.vectorize(_equal, otypes=[np.bool_])(v[0], v[1]),
    "Where": lambda at, v: np.where(v[0], v[1], v[2]),
    "Min": lambda at, v: np.minimum(*[_float(x) for x in v]) if len(v) > 1 else v[0],
    "Max": lambda at, v: np.maximum(*[_float(x) for x in v]) if len(v) > 1 else v[0],
    "Range": lambda at, v: np.arange(*[_float(x).item() for x in v]),
    "ConstantOfShape": lambda at, v: np.full(_ints(v[0], "the ConstantOfShape shape"),
                                             at["value"].reshape(-1)[0] if "value" in at else np.float32(0)),
    "Expand": lambda at, v: np.broadcast_to(v[0], np.broadcast_shapes(v[0].shape, tuple(_ints(v[1], "Expand")))),
}


def fold(op_type: str, attrs: dict[str, Any], values: list[Any]) -> list[Array]:
    """The node's outputs, evaluated (settled to int64 where no Dim remains)."""
    try:
        out = FOLD[op_type](attrs, values)
    except (TypeError, dims.DimError) as e:
        raise Refused(f"{op_type} on sizes {[np.asarray(v).tolist() for v in values]}: {e}") from None
    return [settle(np.asarray(o)) for o in (out if isinstance(out, list) else [out])]


# ---------------------------------------------------------------- sizes of data operations


def reshape_target(shape: Sequence[dims.Value], target: Sequence[dims.Value]) -> list[dims.Value]:
    """ONNX Reshape's output shape: 0 copies the input's dimension, -1 takes what remains."""
    out = [shape[i] if (not isinstance(d, Dim) and d == 0) else d for i, d in enumerate(target)]
    unknown = [i for i, d in enumerate(out) if not isinstance(d, Dim) and d == -1]
    if len(unknown) > 1:
        raise Refused(f"the reshape target {list(target)} has more than one -1")
    if unknown:
        known = dims.size(d for i, d in enumerate(out) if i != unknown[0])
        out[unknown[0]] = exact_quotient(dims.size(shape), known)
    return out


def exact_quotient(total: dims.Value, part: dims.Value) -> dims.Value:
    """total / part when it divides exactly, as a dimension; Refused otherwise."""
    if not isinstance(part, Dim):
        quotient = total // part
    elif len(part.terms) == 1:  # a product of symbols: divide each of total's monomials by it
        mono, coeff = part.terms[0]
        terms: dict[tuple[Any, ...], int] = {}
        for m, c in (total.terms if isinstance(total, Dim) else (((), total),)):
            rest = list(m)
            for atom in mono:
                if atom not in rest:
                    raise Refused(f"{total} is not a multiple of {part}")
                rest.remove(atom)
            terms[tuple(rest)] = c // coeff
        quotient = Dim.make(terms)
    else:
        raise Refused(f"cannot divide {total} by {part}")
    if quotient * part != total:
        raise Refused(f"{total} is not a multiple of {part}")
    return quotient


def slice_window(size: dims.Value, start: dims.Value, end: dims.Value) -> tuple[dims.Value, dims.Value]:
    """(start, length) of ONNX Slice's [start, end) on a dimension of `size`, step 1: negative
    bounds count from the end, large ones clamp; a bound that needs a clamp it cannot decide for
    every value of the dynamic dimensions is Refused."""
    big = 1 << 62

    def place(v: dims.Value) -> dims.Value:
        if isinstance(v, Dim):
            return v
        if v >= big // 2:
            return size
        return v + size if v < 0 else v

    s, e = place(start), place(end)
    if dims.lower(s) < 0 or dims.lower(size - e) < 0 or dims.lower(e - s) < 1:
        raise Refused(f"slice [{start}, {end}) of a dimension of size {size} needs a clamp that depends on the "
                      f"dynamic dimensions")
    return s, e - s
