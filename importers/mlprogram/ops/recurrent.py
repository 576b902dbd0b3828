"""MIL lstm, gru and rnn as nn.lstm / nn.gru (single ops lowered straight to TOSA) and, for rnn,
an unrolled composition.

MIL gate orders are reordered at import: lstm [i, f, o, g] -> nn "ifgo", peepholes [i, f, o] ->
nn [i, o, f]; gru [r, n, z] -> nn "rzn". States are [batch, directions * H] in MIL and
[directions, batch, H] in nn. nn orders a backward direction's sequence by iteration, MIL by
time, so that half of the sequence is reversed. Activations other than sigmoid/tanh/relu and
lstm's `clip` are refused.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from estuary.importers.mlprogram.ops import OPS
from estuary.importers.mlprogram.ops.shape import shape_of

_DIRECTIONS = {"forward": "forward", "reverse": "backward", "bidirectional": "both"}
_ACTS = ("sigmoid", "tanh", "relu")


def _act(c: Any, op: Any, key: str, default: str) -> str:
    a = str(c.val(op, key, default)).lower()
    c.check(a in _ACTS, f"{key} {a!r} is not supported (sigmoid, tanh or relu)")
    return a


def _gates(w: np.ndarray, order: list[int], n: int) -> np.ndarray:
    blocks = np.split(np.asarray(w, dtype=np.float32), n, axis=0)
    return np.concatenate([blocks[i] for i in order], axis=0)


def _weights(c: Any, op: Any, direction: str, n: int, order: list[int], keys: tuple[str, ...]) -> list[Any]:
    """Per key, the forward (and backward) parameters stacked [dirs, ...], gates reordered."""
    out: list[Any] = []
    for key in keys:
        fwd = c.val(op, key, None)
        if fwd is None:
            out.append(None)
            continue
        parts = [_gates(fwd, order, n)]
        if direction == "bidirectional":
            back = c.val(op, key + "_back", None)
            c.check(back is not None, f"a bidirectional layer needs {key}_back")
            parts.append(_gates(back, order, n))
        out.append(np.stack(parts))
    return out


def _state(c: Any, op: Any, key: str, nd: int, hidden: int) -> Any:
    if not c.has(op, key):
        return None
    s = c.x(op, key)
    b = shape_of(c, s)[0]
    c.check(shape_of(c, s) == [b, nd * hidden], f"{key} has shape {shape_of(c, s)}, expected [batch, {nd * hidden}]")
    return c.op("transpose", [c.reshape(s, [b, nd, hidden])], permutation=[1, 0, 2])


def _flat_state(c: Any, s: Any) -> Any:
    """[dirs, batch, H] -> [batch, dirs * H]"""
    nd, b, h = shape_of(c, s)
    return c.reshape(c.op("transpose", [s], permutation=[1, 0, 2]), [b, nd * h])


def _sequence(c: Any, seq: Any, direction: str) -> Any:
    """[steps, dirs, batch, H] (backward by iteration) -> [steps, batch, dirs * H] (by time)."""
    steps, nd, b, h = shape_of(c, seq)
    if direction != "forward":
        parts = list(c.op("split", [seq], splits=[1] * nd, axis=1)) if nd > 1 else [seq]
        parts[-1] = c.op("reverse", [parts[-1]], axes=[0])
        seq = c.op("concat", [parts], axis=1) if nd > 1 else parts[0]
    return c.reshape(c.op("transpose", [seq], permutation=[0, 2, 1, 3]), [steps, b, nd * h])


def _last(c: Any, op: Any, seq: Any, h: Any) -> Any:
    if bool(c.scalar(op, "output_sequence", False)):
        return seq
    return c.reshape(h, [1] + shape_of(c, h))


@OPS.op("lstm")
def convert_lstm(c: Any, op: Any) -> Any:
    x = c.x(op)
    steps = shape_of(c, x)[0]
    direction = str(c.val(op, "direction", "forward"))
    c.check(direction in _DIRECTIONS, f"unknown direction {direction!r}")
    c.check(c.val(op, "clip", None) is None, "clip is not supported")
    w_ih, w_hh, bias = _weights(c, op, direction, 4, [0, 1, 3, 2], ("weight_ih", "weight_hh", "bias"))
    (peep,) = _weights(c, op, direction, 3, [0, 2, 1], ("peephole",))  # [i, f, o] -> [i, o, f]
    peep = peep if peep is not None and np.any(peep) else None
    nd, hidden = w_ih.shape[0], w_ih.shape[1] // 4
    acts = [_act(c, op, "recurrent_activation", "sigmoid"), _act(c, op, "cell_activation", "tanh"),
            _act(c, op, "activation", "tanh")]
    h0, c0 = _state(c, op, "initial_h", nd, hidden), _state(c, op, "initial_c", nd, hidden)
    operands = [x, c.const(w_ih), c.const(w_hh), None if bias is None else c.const(bias), None,
                None if peep is None else c.const(peep), h0, c0]
    h, cell, seq = c.op("lstm", operands, steps=steps, hidden_size=hidden, return_sequence=True,
                        direction=_DIRECTIONS[direction], layout="ifgo", activations=acts)
    h, cell = _flat_state(c, h), _flat_state(c, cell)
    return [_last(c, op, _sequence(c, seq, direction), h), h, cell]


@OPS.op("gru")
def convert_gru(c: Any, op: Any) -> Any:
    """iOS15-17: n = act(W_in x + b_n + r * (W_hn h)) (one bias, on the input side); iOS18 adds
    input_bias and reset_after."""
    x = c.x(op)
    steps = shape_of(c, x)[0]
    direction = str(c.val(op, "direction", "forward"))
    c.check(direction in ("forward", "reverse"), f"direction {direction!r} is not supported for gru")
    w_ih, w_hh, bias = _weights(c, op, direction, 3, [0, 2, 1], ("weight_ih", "weight_hh", "bias"))
    input_bias = _weights(c, op, direction, 3, [0, 2, 1], ("input_bias",))[0] if c.opset >= 18 else None
    reset_after = bool(c.scalar(op, "reset_after", False)) if c.opset >= 18 else False
    hidden = w_ih.shape[1] // 3
    acts = [_act(c, op, "recurrent_activation", "sigmoid"), _act(c, op, "activation", "tanh")]
    if c.opset < 18:  # the bias sits outside the reset product: input-side bias, reset after
        in_bias, rec_bias, reset_after = bias, None, True
    else:
        in_bias, rec_bias = input_bias, bias
    h0 = _state(c, op, "initial_h", 1, hidden)
    operands = [x, c.const(w_ih), c.const(w_hh), None if in_bias is None else c.const(in_bias),
                None if rec_bias is None else c.const(rec_bias), h0]
    h, seq = c.op("gru", operands, steps=steps, hidden_size=hidden, return_sequence=True,
                  direction=_DIRECTIONS[direction], reset_after=reset_after, layout="rzn", activations=acts)
    h = _flat_state(c, h)
    return [_last(c, op, _sequence(c, seq, direction), h), h]


@OPS.op("rnn")
def convert_rnn(c: Any, op: Any) -> Any:
    """h_t = act(W_ih x_t + W_hh h_{t-1} + b), unrolled over the steps."""
    x = c.x(op)
    steps, batch, _ = shape_of(c, x)
    direction = str(c.val(op, "direction", "forward"))
    c.check(direction in ("forward", "reverse"), f"direction {direction!r} is not supported for rnn")
    act = _act(c, op, "activation", "tanh")
    w_ih = np.asarray(c.val(op, "weight_ih"), np.float32)
    w_hh = np.asarray(c.val(op, "weight_hh"), np.float32)
    hidden = w_ih.shape[0]
    bias = np.asarray(c.val(op, "bias", np.zeros(hidden, np.float32)), np.float32)
    h = c.x(op, "initial_h") if c.has(op, "initial_h") else c.const(np.zeros((batch, hidden), np.float32))
    xs = list(c.op("split", [x], splits=[1] * steps, axis=0)) if steps > 1 else [x]
    wi, wh, b = c.const(w_ih.T), c.const(w_hh.T), c.const(bias)
    outs: list[Any] = [None] * steps
    order = range(steps) if direction == "forward" else range(steps - 1, -1, -1)
    for t in order:
        pre = c.op("add", [c.op("add", [c.op("matmul", [c.reshape(xs[t], [batch, shape_of(c, x)[2]]),
                                                          wi]), c.op("matmul", [h, wh])]), b])
        h = c.op(act, [pre])
        outs[t] = c.reshape(h, [1, batch, hidden])
    seq = c.op("concat", [outs], axis=0) if steps > 1 else outs[0]
    return [seq if bool(c.scalar(op, "output_sequence", False)) else c.reshape(h, [1, batch, hidden]), h]
