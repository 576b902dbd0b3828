"""nn ops: GRU and LSTM networks and cells (WebNN §7.7.20 gru, 21 gruCell, 28 lstm, 29 lstmCell).

Each keeps the WebNN meaning as one op; results are lists as in the spec (gru: hidden [+ sequence],
lstm: hidden, cell [+ sequence], lstm_cell: hidden, cell). Semantics follow the spec's
decompositions, notably where ONNX differs: the LSTM output-gate peephole reads the *incoming* cell
state, and with return_sequence the sequence is ordered by iteration (a backward direction is not
re-reversed in time). Peephole weights are packed i, o, f whatever the gate layout.
"""
import numpy as np

from estuary.base import dtypes
from estuary.dialects.core import Bool, Int, Str, Strs, TensorSpec, check, dtype_in, nn_op, rank_is, same_dtype

ACTIVATIONS = ("relu", "sigmoid", "tanh")  # MLRecurrentNetworkActivation
DIRECTIONS = ("forward", "backward", "both")
GRU_LAYOUTS = ("zrn", "rzn")
LSTM_LAYOUTS = ("iofg", "ifgo")  # a layout spells the gate order along the gates * hiddenSize axis
PEEPHOLE_GATES = "iof"
GRU_ACTIVATIONS = ("sigmoid", "tanh")
LSTM_ACTIVATIONS = ("sigmoid", "tanh", "tanh")
MAX_DIMENSION = 2**31 - 1  # a valid dimension is in the range of `long`


# ---------------------------------------------------------------- validation


def _operand(spec, expected, what, input):
    """An optional operand: same data type as input and exactly the `expected` shape."""
    if spec is not None:
        same_dtype(input, spec, what=f"input and {what}")
        check(spec.shape == tuple(expected), f"{what} must have shape {list(expected)}, got {list(spec.shape)}")


def _hidden_size(hidden_size, gates):
    total = 2 * gates * hidden_size
    check(0 < total <= MAX_DIMENSION,
          f"hidden_size * {2 * gates} must be a valid dimension (1..{MAX_DIMENSION}), got hidden_size {hidden_size}")


def _activations(acts, count):
    # The spec's steps only clone the list; a list of another length has no meaning, so it is rejected
    # (as Chromium does).
    if acts is not None:
        check(len(acts) == count, f"activations must list {count} functions, got {list(acts)}")


def _network(input, weight, recurrent_weight, steps, hidden_size, direction, gates):
    """Common throw steps of gru/lstm; returns (numDirections, batchSize)."""
    dtype_in(input, dtypes.FLOATS)
    rank_is(input, 3, "input")
    rank_is(weight, 3, "weight")
    rank_is(recurrent_weight, 3, "recurrent_weight")
    check(steps > 0, f"steps must be greater than 0, got {steps}")
    check(input.shape[0] == steps, f"input.shape[0] {input.shape[0]} must equal steps {steps}")
    nd = 2 if direction == "both" else 1
    _, batch, size = input.shape
    _operand(weight, (nd, gates * hidden_size, size), "weight", input)
    _operand(recurrent_weight, (nd, gates * hidden_size, hidden_size), "recurrent_weight", input)
    _hidden_size(hidden_size, gates)
    return nd, batch


def _cell(input, weight, recurrent_weight, states, hidden_size, gates):
    """Common throw steps of gru_cell/lstm_cell; `states` maps names to hidden/cell state specs."""
    dtype_in(input, dtypes.FLOATS)
    rank_is(input, 2, "input")
    rank_is(weight, 2, "weight")
    rank_is(recurrent_weight, 2, "recurrent_weight")
    for what, spec in states.items():
        rank_is(spec, 2, what)
    batch, size = input.shape
    _operand(weight, (gates * hidden_size, size), "weight", input)
    _operand(recurrent_weight, (gates * hidden_size, hidden_size), "recurrent_weight", input)
    for what, spec in states.items():
        _operand(spec, (batch, hidden_size), what, input)
    _hidden_size(hidden_size, gates)
    return batch


# ---------------------------------------------------------------- numpy references (float64)

_NP_ACT = {"sigmoid": lambda v: 1 / (1 + np.exp(-v)), "tanh": np.tanh, "relu": lambda v: np.maximum(v, 0)}


def _gate(t, layout, gate, h):
    """The `gate` block of a bias/peephole vector (0 when absent)."""
    k = layout.index(gate)
    return 0.0 if t is None else t[k * h:(k + 1) * h]


def _proj(v, w, layout, gate, h):
    """v @ W[gate]^T for a [gates * h, K] weight."""
    return v @ _gate(w, layout, gate, h).T


def _gru_cell_np(x, w, rw, h, bias, rbias, hidden_size, reset_after, layout, activations):
    f, g = (_NP_ACT[a] for a in (activations or GRU_ACTIVATIONS))
    n_ = hidden_size
    z = f(_gate(bias, layout, "z", n_) + _gate(rbias, layout, "z", n_) + _proj(x, w, layout, "z", n_)
          + _proj(h, rw, layout, "z", n_))
    r = f(_gate(bias, layout, "r", n_) + _gate(rbias, layout, "r", n_) + _proj(x, w, layout, "r", n_)
          + _proj(h, rw, layout, "r", n_))
    if reset_after:
        n = g(_gate(bias, layout, "n", n_) + _proj(x, w, layout, "n", n_)
              + r * (_gate(rbias, layout, "n", n_) + _proj(h, rw, layout, "n", n_)))
    else:
        n = g(_gate(bias, layout, "n", n_) + _gate(rbias, layout, "n", n_) + _proj(x, w, layout, "n", n_)
              + _proj(r * h, rw, layout, "n", n_))
    return z * h + n * (1 - z)


def _lstm_cell_np(x, w, rw, h, c, bias, rbias, peephole, hidden_size, layout, activations):
    f, g, hh = (_NP_ACT[a] for a in (activations or LSTM_ACTIVATIONS))
    n_ = hidden_size

    def pre(gate):
        p = _gate(bias, layout, gate, n_) + _gate(rbias, layout, gate, n_) + _proj(x, w, layout, gate, n_) \
            + _proj(h, rw, layout, gate, n_)
        return p + c * _gate(peephole, PEEPHOLE_GATES, gate, n_) if gate in PEEPHOLE_GATES else p

    i, fg, o = f(pre("i")), f(pre("f")), f(pre("o"))
    ct = fg * c + i * g(pre("g"))
    return [o * hh(ct), ct]


def _network_np(cell, x, params, states, steps, direction, return_sequence):
    """Run `cell(xt, *params[d], *states[d])` like the spec's gru()/lstm() decompositions."""
    nd = len(states)
    sequence = []
    for step in range(steps):
        for d in range(nd):
            t = steps - step - 1 if (d == 1 or direction == "backward") else step
            states[d] = cell(x[t], *params[d], *states[d])
        sequence.append(np.stack([s[0] for s in states]))
    out = [np.stack([s[k] for s in states]) for k in range(len(states[0]))]
    return out + ([np.stack(sequence)] if return_sequence else [])


def _f64(*arrays):
    return [None if a is None else np.asarray(a, np.float64) for a in arrays]


def _per_dir(t, d):
    return None if t is None else t[d]


def _gru_ref(input, weight, recurrent_weight, bias, recurrent_bias, initial_hidden_state, steps, hidden_size,
             reset_after, return_sequence, direction, layout, activations):
    x, w, rw, b, rb, h0 = _f64(input, weight, recurrent_weight, bias, recurrent_bias, initial_hidden_state)
    nd = w.shape[0]
    h0 = np.zeros((nd, x.shape[1], hidden_size)) if h0 is None else h0
    cell = lambda xt, w_, rw_, b_, rb_, h: [_gru_cell_np(  # noqa: E731
        xt, w_, rw_, h, b_, rb_, hidden_size, reset_after, layout, activations)]
    params = [[w[d], rw[d], _per_dir(b, d), _per_dir(rb, d)] for d in range(nd)]
    out = _network_np(cell, x, params, [[h0[d]] for d in range(nd)], steps, direction, return_sequence)
    return [o.astype(input.dtype) for o in out]


def _lstm_ref(input, weight, recurrent_weight, bias, recurrent_bias, peephole_weight, initial_hidden_state,
              initial_cell_state, steps, hidden_size, return_sequence, direction, layout, activations):
    x, w, rw, b, rb, p, h0, c0 = _f64(input, weight, recurrent_weight, bias, recurrent_bias, peephole_weight,
                                      initial_hidden_state, initial_cell_state)
    nd = w.shape[0]
    zeros = np.zeros((nd, x.shape[1], hidden_size))
    h0, c0 = zeros if h0 is None else h0, zeros if c0 is None else c0
    cell = lambda xt, w_, rw_, b_, rb_, p_, h, c: _lstm_cell_np(  # noqa: E731
        xt, w_, rw_, h, c, b_, rb_, p_, hidden_size, layout, activations)
    params = [[w[d], rw[d], _per_dir(b, d), _per_dir(rb, d), _per_dir(p, d)] for d in range(nd)]
    out = _network_np(cell, x, params, [[h0[d], c0[d]] for d in range(nd)], steps, direction, return_sequence)
    return [o.astype(input.dtype) for o in out]


def _gru_cell_ref(input, weight, recurrent_weight, hidden_state, bias, recurrent_bias, hidden_size, reset_after,
                  layout, activations):
    args = _f64(input, weight, recurrent_weight, hidden_state, bias, recurrent_bias)
    return _gru_cell_np(*args, hidden_size, reset_after, layout, activations).astype(input.dtype)


def _lstm_cell_ref(input, weight, recurrent_weight, hidden_state, cell_state, bias, recurrent_bias, peephole_weight,
                   hidden_size, layout, activations):
    args = _f64(input, weight, recurrent_weight, hidden_state, cell_state, bias, recurrent_bias, peephole_weight)
    return [o.astype(input.dtype) for o in _lstm_cell_np(*args, hidden_size, layout, activations)]


# ---------------------------------------------------------------- declarations

_NETWORK_ATTRS = {"steps": Int(), "hidden_size": Int(), "return_sequence": Bool(False),
                  "direction": Str("forward", DIRECTIONS), "activations": Strs(None, ACTIVATIONS)}


@nn_op("gru", ["input", "weight", "recurrent_weight", "bias?", "recurrent_bias?", "initial_hidden_state?"],
       {**_NETWORK_ATTRS, "reset_after": Bool(True), "layout": Str("zrn", GRU_LAYOUTS)},
       reference=_gru_ref)
def gru(input, weight, recurrent_weight, bias, recurrent_bias, initial_hidden_state, steps, hidden_size,
        reset_after, return_sequence, direction, layout, activations):
    """GRU over `steps`: [hidden [dirs, batch, h]] (+ sequence [steps, dirs, batch, h]).

    activations: [update/reset gate, new gate], default sigmoid, tanh."""
    nd, batch = _network(input, weight, recurrent_weight, steps, hidden_size, direction, 3)
    _operand(bias, (nd, 3 * hidden_size), "bias", input)
    _operand(recurrent_bias, (nd, 3 * hidden_size), "recurrent_bias", input)
    _operand(initial_hidden_state, (nd, batch, hidden_size), "initial_hidden_state", input)
    _activations(activations, 2)
    hidden = TensorSpec((nd, batch, hidden_size), input.dtype)
    return [hidden] + ([TensorSpec((steps, nd, batch, hidden_size), input.dtype)] if return_sequence else [])


@nn_op("gru_cell", ["input", "weight", "recurrent_weight", "hidden_state", "bias?", "recurrent_bias?"],
       {"hidden_size": Int(), "reset_after": Bool(True), "layout": Str("zrn", GRU_LAYOUTS),
        "activations": Strs(None, ACTIVATIONS)}, reference=_gru_cell_ref)
def gru_cell(input, weight, recurrent_weight, hidden_state, bias, recurrent_bias, hidden_size, reset_after, layout,
             activations):
    """One GRU step: the new hidden state [batch, h]."""
    batch = _cell(input, weight, recurrent_weight, {"hidden_state": hidden_state}, hidden_size, 3)
    _operand(bias, (3 * hidden_size,), "bias", input)
    _operand(recurrent_bias, (3 * hidden_size,), "recurrent_bias", input)
    _activations(activations, 2)
    return TensorSpec((batch, hidden_size), input.dtype)


@nn_op("lstm", ["input", "weight", "recurrent_weight", "bias?", "recurrent_bias?", "peephole_weight?",
                "initial_hidden_state?", "initial_cell_state?"],
       {**_NETWORK_ATTRS, "layout": Str("iofg", LSTM_LAYOUTS)}, reference=_lstm_ref)
def lstm(input, weight, recurrent_weight, bias, recurrent_bias, peephole_weight, initial_hidden_state,
         initial_cell_state, steps, hidden_size, return_sequence, direction, layout, activations):
    """LSTM over `steps`: [hidden, cell [dirs, batch, h]] (+ sequence [steps, dirs, batch, h]).

    activations: [i/f/o gates, cell gate, cell state filter], default sigmoid, tanh, tanh."""
    nd, batch = _network(input, weight, recurrent_weight, steps, hidden_size, direction, 4)
    _operand(bias, (nd, 4 * hidden_size), "bias", input)
    _operand(recurrent_bias, (nd, 4 * hidden_size), "recurrent_bias", input)
    _operand(peephole_weight, (nd, 3 * hidden_size), "peephole_weight", input)
    _operand(initial_hidden_state, (nd, batch, hidden_size), "initial_hidden_state", input)
    _operand(initial_cell_state, (nd, batch, hidden_size), "initial_cell_state", input)
    _activations(activations, 3)
    state = TensorSpec((nd, batch, hidden_size), input.dtype)
    return [state, state] + ([TensorSpec((steps, nd, batch, hidden_size), input.dtype)] if return_sequence else [])


@nn_op("lstm_cell", ["input", "weight", "recurrent_weight", "hidden_state", "cell_state", "bias?", "recurrent_bias?",
                     "peephole_weight?"],
       {"hidden_size": Int(), "layout": Str("iofg", LSTM_LAYOUTS), "activations": Strs(None, ACTIVATIONS)},
       reference=_lstm_cell_ref)
def lstm_cell(input, weight, recurrent_weight, hidden_state, cell_state, bias, recurrent_bias, peephole_weight,
              hidden_size, layout, activations):
    """One LSTM step: [new hidden state, new cell state], each [batch, h]."""
    batch = _cell(input, weight, recurrent_weight, {"hidden_state": hidden_state, "cell_state": cell_state},
                  hidden_size, 4)
    _operand(bias, (4 * hidden_size,), "bias", input)
    _operand(recurrent_bias, (4 * hidden_size,), "recurrent_bias", input)
    _operand(peephole_weight, (3 * hidden_size,), "peephole_weight", input)
    _activations(activations, 3)
    state = TensorSpec((batch, hidden_size), input.dtype)
    return [state, state]
