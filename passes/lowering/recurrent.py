"""Lowering rules: gru, gru_cell, lstm, lstm_cell unrolled over time into TOSA.

The arithmetic is the spec's decomposition (§7.7.20, 21, 28, 29), arranged for fewer ops:
- directions are the batch dimension of every rank-3 `tosa.matmul`, so one step of a
  bidirectional network is one set of ops on [numDirections, batchSize, ...] tensors;
- the input projections of all steps are one matmul up front (the input of a backward
  direction is reversed in time first, so iteration `s` reads row block `s` in each direction);
- all gates share one matmul, then gates are sliced out by the layout's gate order; with batch 1
  the recurrent product is instead one multi-result `linalg.generic` (a dot product per gate unit,
  `Forms.row_products`), which IREE does not turn into its latency-bound one-row matmul kernel
  and which llvm-cpu's `cpu-tiles` vectorizes along the reduction (docs/performance.md); an LSTM
  may take the target's own form of it (`Forms.lstm_gate_products`: llvm-cpu's column vectors).
With return_sequence, the sequence is stacked by iteration, as the spec's decomposition does.
Cells run as one step of a one-direction network. float16 is computed in float32 and rounded
once at the end.
"""
from __future__ import annotations

import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import arith, tosa
from iree.compiler.dialects import math as mathd

from estuary.dialects.ops.recurrent import GRU_ACTIVATIONS, LSTM_ACTIVATIONS, PEEPHOLE_GATES
from estuary.passes.lowering import RuleContext, lowering
from estuary.passes.lowering import common as C
from estuary.passes.lowering.forms import GENERIC, Forms
from estuary.passes.lowering.matvec import is_constant

FLOAT_MAX = float(np.finfo(np.float32).max)


def _f32():
    return ir.F32Type.get()


def _wide(v):
    """`v` as float32 (None stays None)."""
    if v is None or C.element_of(v) == _f32():
        return v
    return tosa.cast(C.tensor_type(C.shape_of(v), _f32()), v)


def _narrow(v, spec):
    out = C.storage(spec)
    v = C.reshape(v, spec.shape)
    return v if out.element_type == _f32() else tosa.cast(out, v)


def _broadcast_type(a, b):
    shape = [max(x, y) for x, y in zip(C.shape_of(a), C.shape_of(b))]
    return C.tensor_type(shape, _f32())


def _add(a, b):
    return tosa.add(_broadcast_type(a, b), a, b)


def _sub(a, b):
    return tosa.sub(_broadcast_type(a, b), a, b)


def _mul(a, b):
    return C.mul(a, b, _broadcast_type(a, b))


def _matmul(a, b):
    """[N, M, K] x [N, K, P] -> [N, M, P] in float32."""
    (n, m, _), p = C.shape_of(a), C.shape_of(b)[2]
    zp = C.zero_point("float32")
    return tosa.matmul(C.tensor_type([n, m, p], _f32()), a, b, zp, C.zero_point("float32"))


def _sigmoid(x):
    # 1 / (1 + exp(-x)) in a generic body: TOSA's sigmoid approximation is tens of ULP off
    def body(v):
        one = C.scalar_const(v.type, 1.0)
        return arith.divf(one, arith.addf(one, mathd.exp(arith.negf(v))))

    return C.elementwise(C.shape_of(x), _f32(), [x], body)


_ACTIVATION = {
    "sigmoid": _sigmoid,
    "tanh": lambda x: tosa.tanh(x.type, x),
    "relu": lambda x: C.clamp(x, 0.0, FLOAT_MAX),
}


def _activate(name, x):
    return _ACTIVATION[name](x)


def _gate(t, order, gate, hidden):
    """The `gate` block of the last axis of rank-3 `t`, whose blocks are in `order`."""
    n, b, _ = C.shape_of(t)
    return C.slice_(t, [0, 0, order.index(gate) * hidden], [n, b, hidden])


def _transposed(w):
    """[N, G, K] weight -> [N, K, G] matmul operand."""
    return C.transpose(w, [0, 2, 1])


def _as_dirs(t):
    """A [N, G] per-direction vector as [N, 1, G] (broadcasts over the batch)."""
    return None if t is None else C.reshape(t, [C.shape_of(t)[0], 1, C.shape_of(t)[1]])


def _gate_products(forms: Forms, h: ir.Value, rw: ir.Value, blocks: int, hidden: int,
                   joined: bool = True) -> ir.Value | list[ir.Value]:
    """h · (the first `blocks` gate blocks of rw)^T for a batch-1 step: h [nd, 1, K], rw [nd, G, K]
    -> [nd, 1, blocks * hidden], like the matmul path (or, not `joined`, one [nd, 1, hidden] per
    block). One multi-result generic (`forms.row_products`, a result per gate), joined: that
    keeps the gate math out of the product's dispatch, where it ran one element at a time under
    the product's one-row tiles; in its own dispatch it is vectorized (faster for the LSTM and a
    GRU with reset-after: docs/performance.md). An LSTM takes `forms.lstm_gate_products` where
    the target has them."""
    nd, _, k = C.shape_of(h)
    lead = [nd] if nd > 1 else []
    weights = [C.reshape(C.slice_(rw, [0, i * hidden, 0], [nd, hidden, k]), lead + [hidden, k])
               for i in range(blocks)]
    results = forms.row_products(C.reshape(h, lead + [k]), weights)
    if not joined:
        return [C.reshape(r, [nd, 1, hidden]) for r in results]
    return C.reshape(C.concat(results, len(lead)), [nd, 1, blocks * hidden])


def _plus(x, *terms):
    for t in terms:
        if t is not None:
            x = _add(x, t)
    return x


class _Unrolled:
    """Shapes and per-step inputs of a network: x [steps, batch, size], numDirections `nd`."""

    def __init__(self, x, w, bias, direction, hidden):
        self.steps, self.batch, size = C.shape_of(x)
        self.nd = C.shape_of(w)[0]
        self.hidden = hidden
        flat = [1, self.steps * self.batch, size]
        reverse = C.reshape(tosa.reverse(x.type, x, 0), flat) if direction != "forward" else None
        xs = [C.reshape(x, flat) if direction != "backward" else reverse] + ([reverse] if self.nd == 2 else [])
        # [nd, steps * batch, G]: every step's input projection, bias included
        self.projection = _plus(_matmul(C.concat(xs, 0), _transposed(w)), _as_dirs(bias))
        # batch 1: recurrent products per gate (_gate_products); a constant network is left to
        # IREE's const-eval
        self.per_gate = self.batch == 1 and not is_constant(x)

    def input_at(self, step):
        """[nd, batch, G]: the input projection that iteration `step` consumes in each direction."""
        gates = C.shape_of(self.projection)[2]
        return C.slice_(self.projection, [0, step * self.batch, 0], [self.nd, self.batch, gates])

    def state(self, initial):
        if initial is not None:
            return initial
        return C.const(np.zeros((self.nd, self.batch, self.hidden)), "float32")

    def run(self, step_fn, states, return_sequence):
        """Iterate `states = step_fn(step, states)`; returns final states (+ sequence by iteration)."""
        sequence = []
        for step in range(self.steps):
            states = step_fn(step, states)
            if return_sequence:
                sequence.append(C.reshape(states[0], [1, self.nd, self.batch, self.hidden]))
        return list(states) + ([C.concat(sequence, 0)] if return_sequence else [])


def _gru(forms, x, w, rw, bias, rbias, h0, hidden, reset_after, return_sequence, direction, layout, activations):
    """float32 GRU values: [hidden (+ sequence)] of shapes [nd, batch, h] and [steps, nd, batch, h];
    `forms`: the target's forms."""
    f, g = activations or GRU_ACTIVATIONS
    if not reset_after and rbias is not None:
        bias = rbias if bias is None else _add(bias, rbias)  # both biases sit outside the reset product
        rbias = None
    net = _Unrolled(x, w, bias, direction, hidden)
    rt = None if net.per_gate and reset_after else _transposed(rw)  # [nd, h, 3h]
    if not reset_after:  # "zrn" and "rzn" both end in n
        n_weight = C.slice_(rt, [0, 0, 2 * hidden], [net.nd, hidden, hidden])
    one = C.const(np.ones((1, 1, 1)), "float32")

    def product(h, blocks):
        """h times the first `blocks` gate blocks of the recurrent weight."""
        if net.per_gate:
            return _gate_products(forms, h, rw, blocks, hidden)
        return _matmul(h, rt if blocks == 3 else C.slice_(rt, [0, 0, 0], [net.nd, hidden, blocks * hidden]))

    def step(s, states):
        (h,) = states
        xp = net.input_at(s)
        if net.per_gate and not reset_after:
            # left apart: the z/r math then fuses into the products' dispatch, which ends at the n
            # product anyway (joined, a GRU without reset-after ran slower)
            rz = dict(zip(layout[:2], _gate_products(forms, h, rw, 2, hidden, joined=False)))
            z_pre, r_pre = (_add(_gate(xp, layout, name, hidden), rz[name]) for name in "zr")
        else:
            rp = _plus(product(h, 3), _as_dirs(rbias)) if reset_after else product(h, 2)
            z_pre, r_pre = (_add(_gate(xp, layout, name, hidden), _gate(rp, layout, name, hidden)) for name in "zr")
        rn = _gate(rp, layout, "n", hidden) if reset_after else None
        z, r = _activate(f, z_pre), _activate(f, r_pre)
        if reset_after:
            recurrent = _mul(r, rn)
        else:
            recurrent = _matmul(_mul(r, h), n_weight)
        n = _activate(g, _add(_gate(xp, layout, "n", hidden), recurrent))
        return [_add(_mul(z, h), _mul(n, _sub(one, z)))]

    return net.run(step, [net.state(h0)], return_sequence)


def _lstm(ctx, forms, x, w, rw, bias, rbias, peephole, h0, c0, hidden, return_sequence, direction, layout,
          activations):
    """float32 LSTM values: [hidden, cell (+ sequence)]; `ctx`: the rule's context, `forms` the
    target's forms."""
    f, g, hh = activations or LSTM_ACTIVATIONS
    net = _Unrolled(x, w, rbias if bias is None else _plus(bias, rbias), direction, hidden)
    rt = None if net.per_gate else _transposed(rw)  # [nd, h, 4h]
    peep = _as_dirs(peephole)  # [nd, 1, 3h], packed i, o, f
    columns_of = forms.lstm_gate_products(ctx, rw, hidden, net.nd) if net.per_gate else None

    def step(s, states):
        h, c = states
        xp = net.input_at(s)
        columns = dict(zip(layout, columns_of(h))) if columns_of is not None else None
        if columns is None:
            full = _gate_products(forms, h, rw, 4, hidden) if net.per_gate else _matmul(h, rt)

        def product(name):
            return columns[name] if columns is not None else _gate(full, layout, name, hidden)

        # the input projection is added per gate, so the adds fuse into the gate math's dispatch
        # (one add over all gates was a dispatch of its own: 3 -> 2 dispatches per step)
        pre = {name: _add(_gate(xp, layout, name, hidden), product(name)) for name in layout}

        def gate(name, act):
            p = pre[name]
            if peep is not None and name in PEEPHOLE_GATES:  # peepholes read the incoming cell state
                p = _add(p, _mul(c, _gate(peep, PEEPHOLE_GATES, name, hidden)))
            return _activate(act, p)

        i, fg, o, cell = gate("i", f), gate("f", f), gate("o", f), gate("g", g)
        c_new = _add(_mul(fg, c), _mul(i, cell))
        return [_mul(o, _activate(hh, c_new)), c_new]

    return net.run(step, [net.state(h0), net.state(c0)], return_sequence)


def _network_inputs(n, count):
    return [_wide(v) for v in n.inputs[:count]]


@lowering("gru")
def lower_gru(n: RuleContext, forms: Forms = GENERIC) -> list[ir.Value]:
    x, w, rw, bias, rbias, h0 = _network_inputs(n, 6)
    a = n.attrs
    values = _gru(forms, x, w, rw, bias, rbias, h0, a["hidden_size"], a["reset_after"], a["return_sequence"],
                  a["direction"], a["layout"], a["activations"])
    return [_narrow(v, spec) for v, spec in zip(values, n.out_specs)]


@lowering("lstm")
def lower_lstm(n: RuleContext, forms: Forms = GENERIC) -> list[ir.Value]:
    x, w, rw, bias, rbias, peep, h0, c0 = _network_inputs(n, 8)
    a = n.attrs
    values = _lstm(n, forms, x, w, rw, bias, rbias, peep, h0, c0, a["hidden_size"], a["return_sequence"],
                   a["direction"], a["layout"], a["activations"])
    return [_narrow(v, spec) for v, spec in zip(values, n.out_specs)]


def _one_direction(v, rank):
    """A cell operand as a one-step, one-direction network operand (leading 1s up to `rank`)."""
    return None if v is None else C.expand_rank(_wide(v), rank)


@lowering("gru_cell")
def lower_gru_cell(n: RuleContext, forms: Forms = GENERIC) -> ir.Value:
    x, w, rw, h, bias, rbias = n.inputs
    a = n.attrs
    (hidden,) = _gru(forms, _one_direction(x, 3), _one_direction(w, 3), _one_direction(rw, 3), _one_direction(bias, 2),
                     _one_direction(rbias, 2), _one_direction(h, 3), a["hidden_size"], a["reset_after"], False,
                     "forward", a["layout"], a["activations"])
    return _narrow(hidden, n.out)


@lowering("lstm_cell")
def lower_lstm_cell(n: RuleContext, forms: Forms = GENERIC) -> list[ir.Value]:
    x, w, rw, h, c, bias, rbias, peep = n.inputs
    a = n.attrs
    values = _lstm(n, forms, _one_direction(x, 3), _one_direction(w, 3), _one_direction(rw, 3), _one_direction(bias, 2),
                   _one_direction(rbias, 2), _one_direction(peep, 2), _one_direction(h, 3), _one_direction(c, 3),
                   a["hidden_size"], False, "forward", a["layout"], a["activations"])
    return [_narrow(v, spec) for v, spec in zip(values, n.out_specs)]
