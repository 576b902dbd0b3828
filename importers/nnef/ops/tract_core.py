"""tract's core operations (sonos/tract nnef/src/ops/core/*.rs), as torch-to-nnef writes them.

Declared here in NNEF text (parameter order, types and defaults, as doc/nnef/tract-core.nnef
writes them) for the tract-semantics reader (tract_reader.py), and converted onto nn ops:

- tract_core_erf, tract_core_hard_swish (x * relu6(x + 3) / 6), tract_core_is_nan / is_inf,
  tract_core_xor: one nn op each;
- tract_core_cast(input, to): 'f32', 'f16', 'bool' (non-zero), integers and 'TDim' (tract's
  dimension type) as int32; float -> integer truncates;
- tract_core_gather (numpy take; negative indices count from the end), tract_core_gather_elements
  (torch.gather), tract_core_gather_nd (ONNX GatherND, batch_dims = 0: a gather on the flattened
  leading axes, so dynamic dimensions work);
- tract_core_range(start, end, step) (arange; a dynamic end with step 1 counts at run time);
- tract_core_broadcast (expand to a shape), tract_core_trilu (triangular), tract_core_product_reduce,
  tract_core_one_hot, tract_core_softmax;
- tract_core_resize: linear with 'half_pixel' / 'pytorch_half_pixel' coordinates (nn.resample2d;
  an output extent of 1 under 'pytorch_half_pixel' reads index 0, as tract does), and nearest
  with 'asymmetric' coordinates and 'floor' rounding (a gather): what torch's bilinear
  (align_corners=False) and nearest interpolation export to. Other modes are refused by name;
- tract_core_scan: the cumulative-sum form torch-to-nnef writes for torch.cumsum (a body adding
  the scanned slice to the state, the state as a full output); other scans are refused.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from estuary.base import dims
from estuary.base.dims import Dim
from estuary.importers.mlprogram import symbolic
from estuary.importers.nnef import signatures
from estuary.importers.nnef import tract_values as tv
from estuary.importers.nnef.ops import OPS

signatures.declare("""
fragment tract_core_external( datum_type: string, shape: integer[] ) -> ( output: tensor<?> );
fragment tract_core_shape_of( input: tensor<scalar> ) -> ( output: tensor<integer> );
fragment tract_core_erf( x: tensor<scalar> ) -> ( y: tensor<scalar> );
fragment tract_core_hard_swish( x: tensor<scalar> ) -> ( y: tensor<scalar> );
fragment tract_core_is_nan( x: tensor<scalar> ) -> ( y: tensor<logical> );
fragment tract_core_is_inf( x: tensor<scalar> ) -> ( y: tensor<logical> );
fragment tract_core_xor( x: tensor<scalar>, y: tensor<scalar> ) -> ( z: tensor<scalar> );
fragment tract_core_cast( input: tensor<scalar>, to: string ) -> ( output: tensor<scalar> );
fragment tract_core_gather( input: tensor<scalar>, indices: tensor<scalar>, axis: integer ) -> ( output: tensor<scalar> );
fragment tract_core_gather_elements( input: tensor<scalar>, indices: tensor<scalar>, axis: integer )
    -> ( output: tensor<scalar> );
fragment tract_core_gather_nd( input: tensor<scalar>, indices: tensor<scalar>, batch_dims: integer )
    -> ( output: tensor<scalar> );
fragment tract_core_range( start: integer, end: integer, step: integer ) -> ( output: tensor<scalar> );
fragment tract_core_broadcast( input: tensor<scalar>, shape: integer[] ) -> ( output: tensor<scalar> );
fragment tract_core_trilu( input: tensor<scalar>, k: tensor<integer>, upper: logical ) -> ( output: tensor<scalar> );
fragment tract_core_product_reduce( input: tensor<scalar>, axes: integer[] ) -> ( output: tensor<scalar> );
fragment tract_core_one_hot( input: tensor<scalar>, axis: integer, dim: integer, value_off: scalar = 0.0,
    value_on: scalar = 1.0 ) -> ( output: tensor<scalar> );
fragment tract_core_softmax( x: tensor<scalar>, axes: integer[], exp: string = '' ) -> ( output: tensor<scalar> );
fragment tract_core_resize( input: tensor<scalar>, scales: tensor<scalar> = false, sizes: tensor<scalar> = false,
    coord_transformer: string = 'half_pixel', interpolator: string = 'nearest', nearest_mode: string = 'floor' )
    -> ( output: tensor<scalar> );
fragment tract_core_scan( body: string, scan: (string, tensor<scalar>, integer, integer)[],
    full: (string, tensor<scalar>)[], state: (string, tensor<scalar>, string)[],
    output: (string, string, integer, integer)[], skip: integer = 0, reset_every_turn: integer = 0 )
    -> ( outputs: tensor<scalar>[] );
fragment relu6( x: tensor<scalar> ) -> ( y: tensor<scalar> );
fragment erf( x: tensor<scalar> ) -> ( y: tensor<scalar> );
""")


def _unary(nn_name: str) -> Any:
    def convert(c: Any, inv: Any) -> Any:
        return c.op(nn_name, [c.tensor(inv.inputs["x"])])

    return convert


OPS.op("tract_core_erf", "erf")(_unary("erf"))
OPS.op("tract_core_hard_swish")(_unary("hard_swish"))
OPS.op("tract_core_is_nan")(_unary("is_nan"))
OPS.op("tract_core_is_inf")(_unary("is_infinite"))


@OPS.op("relu6")
def relu6(c: Any, inv: Any) -> Any:
    """min(max(x, 0), 6), for a document that calls relu6 without defining it."""
    return c.op("clamp", [c.tensor(inv.inputs["x"])], min_value=0.0, max_value=6.0)


@OPS.op("tract_core_xor")
def xor(c: Any, inv: Any) -> Any:
    x, y = c.align(c.tensor(inv.inputs["x"]), c.tensor(inv.inputs["y"]))
    return c.op("logical_xor", [x, y])


@OPS.op("tract_core_cast")
def cast(c: Any, inv: Any) -> Any:
    x = c.tensor(inv.inputs["input"])
    target = tv.datum_type(str(inv.attribs["to"]))
    c.check(target is not None, f"unsupported type {inv.attribs['to']!r} (f32, f16, bool, integer types, TDim)")
    dtype = c.spec(x).dtype
    if target == dtype:
        return c.op("identity", [x])
    if target == "uint8":
        zero = c.const(np.zeros((), dtypes_np(dtype)), dtype)
        return c.op("not_equal", [x, zero])
    return c.op("cast", [x], to=target)


def dtypes_np(dtype: str) -> Any:
    return {"float32": np.float32, "float16": np.float16, "int32": np.int32, "uint8": np.uint8}[dtype]


def _indices(c: Any, inv: Any, extent: dims.Value | None = None) -> Any:
    """int32 indices; negative ones count from the end of an axis of `extent` when given."""
    idx = c.tensor(inv.inputs["indices"])
    if c.spec(idx).dtype != "int32":
        idx = c.op("cast", [idx], to="int32")
    if extent is None:
        return idx
    size = symbolic.dims_tensor(c, [extent], [])
    negative = c.op("lesser", [idx, c.const(np.int32(0))])
    return c.op("where", [negative, c.op("add", [idx, size]), idx])


@OPS.op("tract_core_gather")
def gather(c: Any, inv: Any) -> Any:
    x = c.tensor(inv.inputs["input"])
    axis = int(inv.attribs["axis"])
    rank = c.spec(x).rank
    axis = axis + rank if axis < 0 else axis
    c.check(0 <= axis < rank, f"axis {inv.attribs['axis']} out of range for rank {rank}")
    return c.op("gather", [x, _indices(c, inv, c.spec(x).shape[axis])], axis=axis)


@OPS.op("tract_core_gather_elements")
def gather_elements(c: Any, inv: Any) -> Any:
    x = c.tensor(inv.inputs["input"])
    axis = int(inv.attribs["axis"])
    axis = axis + c.spec(x).rank if axis < 0 else axis
    return c.op("gather_elements", [x, _indices(c, inv, c.spec(x).shape[axis])], axis=axis)


@OPS.op("tract_core_gather_nd")
def gather_nd(c: Any, inv: Any) -> Any:
    """input [d0, .., dn-1], indices [..., k] -> input[idx0, .., idx(k-1)] with the remaining axes:
    the flat index sum(idx_j * d(j+1) * .. * d(k-1)) into input reshaped to [d0 * .. * d(k-1), ...]."""
    x = c.tensor(inv.inputs["input"])
    c.check(int(inv.attribs.get("batch_dims", 0)) == 0, "batch_dims other than 0 is not supported")
    idx = _indices(c, inv)
    shape, ishape = list(c.spec(x).shape), list(c.spec(idx).shape)
    k = ishape[-1]
    c.check(isinstance(k, int) and 1 <= k <= len(shape), f"index depth {k} must be 1..{len(shape)}")
    strides = [dims.prod(shape[j + 1:k]) for j in range(k)]
    weights = symbolic.dims_tensor(c, strides, [1] * (len(ishape) - 1) + [k])
    flat = c.op("reduce_sum", [c.op("mul", [idx, weights])], axes=[len(ishape) - 1], keep_dimensions=False)
    table = c.reshape(x, [dims.prod(shape[:k])] + shape[k:])
    return c.op("gather", [table, flat], axis=0)


@OPS.op("tract_core_range")
def range_(c: Any, inv: Any) -> Any:
    start, end, step = (inv.attribs[k] for k in ("start", "end", "step"))
    if not any(isinstance(v, Dim) for v in (start, end, step)):
        return c.const(np.arange(start, end, step).astype(np.int32), "int32")
    c.check(not isinstance(step, Dim) and step != 0, f"a range with a dynamic step {step}")
    count = symbolic.floor_div(end - start + (step - 1 if step > 0 else step + 1), step)
    c.check(dims.upper(count) >= 1, f"the range {start}..{end} by {step} is empty")
    ramp = symbolic.iota(c, count)
    if step != 1:
        ramp = c.op("mul", [ramp, c.const(np.int32(step))])
    if not (isinstance(start, int) and start == 0):
        ramp = c.op("add", [ramp, symbolic.dims_tensor(c, [start], [])])
    return ramp


@OPS.op("tract_core_broadcast")
def broadcast(c: Any, inv: Any) -> Any:
    x = c.tensor(inv.inputs["input"])
    shape = list(inv.attribs["shape"])
    rank = c.spec(x).rank
    c.check(len(shape) >= rank, f"shape {shape} has fewer axes than the input's {rank}")
    x = c.reshape(x, [1] * (len(shape) - rank) + list(c.spec(x).shape))  # numpy alignment
    out = [d if not (isinstance(d, int) and d == 1) else s for d, s in zip(shape, c.spec(x).shape)]
    return c.op("expand", [x], new_shape=out)


@OPS.op("tract_core_trilu")
def trilu(c: Any, inv: Any) -> Any:
    k = inv.inputs["k"]
    diagonal = int(tv.python(c.wires[k].known)) if isinstance(k, str) and c.wires[k].known is not None else int(k)
    return c.op("triangular", [c.tensor(inv.inputs["input"])], upper=bool(inv.attribs["upper"]), diagonal=diagonal)


@OPS.op("tract_core_product_reduce")
def product_reduce(c: Any, inv: Any) -> Any:
    return c.op("reduce_product", [c.tensor(inv.inputs["input"])], axes=[int(a) for a in inv.attribs["axes"]],
                keep_dimensions=True)


@OPS.op("tract_core_one_hot")
def one_hot(c: Any, inv: Any) -> Any:
    idx = _indices(c, types_ns(indices=inv.inputs["input"]))
    axis, depth = int(inv.attribs["axis"]), int(inv.attribs["dim"])
    shape = list(c.spec(idx).shape)
    axis = axis + len(shape) + 1 if axis < 0 else axis
    idx = c.reshape(idx, shape[:axis] + [1] + shape[axis:])
    grid = c.const(np.arange(depth, dtype=np.int32).reshape([1] * axis + [depth] + [1] * (len(shape) - axis)))
    on = c.const(np.float32(inv.attribs.get("value_on", 1.0)))
    off = c.const(np.float32(inv.attribs.get("value_off", 0.0)))
    return c.op("where", [c.op("equal", [idx, grid]), on, off])


def types_ns(**inputs: Any) -> Any:
    import types

    return types.SimpleNamespace(inputs=inputs)


@OPS.op("tract_core_softmax")
def softmax(c: Any, inv: Any) -> Any:
    axes = [int(a) for a in inv.attribs["axes"]]
    c.check(len(axes) == 1, f"softmax over axes {axes}: one axis is supported")
    c.check(inv.attribs.get("exp", "") in ("", "libc", "fast_compact"), f"exp {inv.attribs.get('exp')!r}")
    return c.op("softmax", [c.tensor(inv.inputs["x"])], axis=axes[0])


# ---------------------------------------------------------------- resize


@OPS.op("tract_core_resize")
def resize(c: Any, inv: Any) -> Any:
    x = c.tensor(inv.inputs["input"])
    shape = list(c.spec(x).shape)
    c.check(len(shape) == 4, f"resize of a rank-{len(shape)} tensor: rank 4 (N, C, H, W) is supported")
    sizes = _known_list(c, inv.inputs.get("sizes"))
    scales = _known_list(c, inv.inputs.get("scales"))
    c.check((sizes is None) != (scales is None), "give either scales or sizes")
    if sizes is not None:
        out = [int(s) for s in sizes]
    else:
        assert scales is not None
        out = [int(np.floor(int(d) * float(np.float32(s)))) for d, s in zip(shape, scales)]
    c.check(len(out) == 4 and out[:2] == shape[:2], f"resize to {out}: only the last two axes may change")
    mode, coords = inv.attribs.get("interpolator", "nearest"), inv.attribs.get("coord_transformer", "half_pixel")
    if mode == "linear" and coords in ("half_pixel", "pytorch_half_pixel"):
        if coords == "pytorch_half_pixel" and 1 in out[2:]:
            x = _take_first(c, x, [a for a in (2, 3) if out[a] == 1])
            if out[2:] == list(c.spec(x).shape)[2:]:
                return x
        return c.op("resample2d", [x], mode="linear", sizes=out[2:], axes=[2, 3])
    if mode == "nearest" and coords == "asymmetric" and inv.attribs.get("nearest_mode", "floor") == "floor":
        for axis in (2, 3):
            index = (np.arange(out[axis]) * int(shape[axis])) // out[axis]
            x = c.op("gather", [x, c.const(index.astype(np.int32), "int32")], axis=axis)
        return x
    c.fail(f"resize with interpolator {mode!r}, coordinates {coords!r} and nearest mode "
           f"{inv.attribs.get('nearest_mode')!r} is not supported (linear with half_pixel / pytorch_half_pixel, "
           f"nearest with asymmetric + floor are)")


def _take_first(c: Any, x: Any, axes: list[int]) -> Any:
    shape = list(c.spec(x).shape)
    sizes = [1 if a in axes else d for a, d in enumerate(shape)]
    return c.op("slice", [x], starts=[0] * len(shape), sizes=sizes)


def _known_list(c: Any, arg: Any) -> list[Any] | None:
    if arg is None or (not isinstance(arg, str) and not np.any(np.asarray(arg))):
        return None  # the `false` default
    if isinstance(arg, str):
        known = c.wires[arg].known
        c.check(known is not None, "resize sizes / scales must be known when the model is imported")
        if np.asarray(known).dtype == bool and np.ndim(known) == 0 and not bool(known):
            return None  # the `false` default
        return list(np.asarray(known).reshape(-1))
    return list(np.asarray(arg).reshape(-1))


# ---------------------------------------------------------------- scan


def scan(c: Any, call: Any, args: dict[str, Any]) -> Any:
    """tract_core_scan in the form torch-to-nnef writes for cumsum: one state whose body adds the
    scanned input, the state's successive values as the full output along `axis`. The scanned
    tensor is the body fragment's other parameter: a cumulative sum of it along `axis`."""
    from estuary.importers.nnef import syntax

    body = c.doc.fragments.get(str(args["body"]))
    state = args["state"]
    outputs = args["output"]
    ok = body is not None and body.body is not None and len(body.body) == 1 and len(state) == 1 \
        and len(outputs) == 1 and len(body.params) == 2
    if ok:
        stmt = body.body[0]
        names = {p.name for p in body.params}
        value = stmt.value
        ok = isinstance(value, syntax.Binary) and value.op == "+" and \
            {getattr(value.left, "name", None), getattr(value.right, "name", None)} == names and \
            outputs[0][1] == "full" and state[0][2] == outputs[0][0]
    if not ok:
        raise c.refuse(call, "tract_core_scan: only the cumulative-sum form (a body adding the scanned slice to "
                             "the state) is supported")
    scanned = [s for s in args["scan"]]
    if scanned:
        source = c.wire_of(scanned[0][1])
        axis = int(tv.python(tv.as_known(scanned[0][2]))) if not isinstance(scanned[0][2], int) else scanned[0][2]
    else:
        # torch-to-nnef 0.24 leaves `scan = []`: the scanned tensor is the caller's `input`, and
        # the axis is the output's (tract_cumsum(input, init, axis))
        raise c.refuse(call, "tract_core_scan without a scanned input (scan = []) cannot be read: the "
                             "exporter wrote no tensor to scan")
    init = c.materialize(c.wire_of(state[0][1]))
    x = c.materialize(source)
    total = c.op("cumulative_sum", [x], axis=axis, exclusive=False, reversed=False)
    return tv.Wire(c.op("add", [total, init]))  # one output: the tensor itself (tract unwraps one-item tuples)
