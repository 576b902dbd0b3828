"""Decompositions: gru, gru_cell, lstm, lstm_cell into nn matmul/slice/element-wise ops, exactly as
the WebNN spec's decompositions (§7.7.20, 21, 28, 29) build them."""
from estuary.passes.lowering import decompose

GRU_GATES = {"zrn": {"z": 0, "r": 1, "n": 2}, "rzn": {"r": 0, "z": 1, "n": 2}}
LSTM_GATES = {"iofg": {"i": 0, "o": 1, "f": 2, "g": 3}, "ifgo": {"i": 0, "f": 1, "g": 2, "o": 3}}
PEEPHOLE = {"i": 0, "o": 1, "f": 2}  # peephole weights are packed i, o, f whatever the layout


def _rows(d, t, index, h):
    """Rows [index*h, (index+1)*h) of a [k*h, ...] weight (or elements of a [k*h] bias)."""
    shape = d.spec(t).shape
    return d.op("slice", [t], starts=[index * h] + [0] * (len(shape) - 1), sizes=[h] + list(shape[1:]))


def _linear(d, x, w, index, h):
    """x @ W[gate]^T."""
    return d.op("matmul", [x, d.op("transpose", [_rows(d, w, index, h)])])


def _act(d, name, x):
    return d.op(name, [x])


def _add_opt(d, x, *terms):
    for t in terms:
        if t is not None:
            x = d.op("add", [x, t])
    return x


def gru_cell_values(d, x, w, rw, h_prev, bias, rbias, hidden, reset_after, layout, activations):
    g = GRU_GATES[layout]
    f_act, g_act = activations or ["sigmoid", "tanh"]
    b = lambda t, gate: None if t is None else _rows(d, t, g[gate], hidden)  # noqa: E731

    def gate(name):
        pre = d.op("add", [_linear(d, x, w, g[name], hidden), _linear(d, h_prev, rw, g[name], hidden)])
        return _act(d, f_act, _add_opt(d, pre, b(bias, name), b(rbias, name)))

    z, r = gate("z"), gate("r")
    if reset_after:
        rec = _add_opt(d, _linear(d, h_prev, rw, g["n"], hidden), b(rbias, "n"))
        pre = d.op("add", [_linear(d, x, w, g["n"], hidden), d.op("mul", [r, rec])])
        n = _act(d, g_act, _add_opt(d, pre, b(bias, "n")))
    else:
        pre = d.op("add", [_linear(d, x, w, g["n"], hidden), _linear(d, d.op("mul", [r, h_prev]), rw, g["n"], hidden)])
        n = _act(d, g_act, _add_opt(d, pre, b(bias, "n"), b(rbias, "n")))
    one = d.const(1.0, d.spec(x).dtype)
    return d.op("add", [d.op("mul", [z, h_prev]), d.op("mul", [n, d.op("sub", [one, z])])])


def lstm_cell_values(d, x, w, rw, h_prev, c_prev, bias, rbias, peephole, hidden, layout, activations):
    g = LSTM_GATES[layout]
    f_act, g_act, h_act = activations or ["sigmoid", "tanh", "tanh"]
    b = lambda t, gate: None if t is None else _rows(d, t, g[gate], hidden)  # noqa: E731

    def pre(name):
        p = d.op("add", [_linear(d, x, w, g[name], hidden), _linear(d, h_prev, rw, g[name], hidden)])
        p = _add_opt(d, p, b(bias, name), b(rbias, name))
        if peephole is not None and name in PEEPHOLE:  # peepholes read the incoming cell state
            p = d.op("add", [p, d.op("mul", [c_prev, _rows(d, peephole, PEEPHOLE[name], hidden)])])
        return p

    i, f, o = (_act(d, f_act, pre(k)) for k in ("i", "f", "o"))
    cell = _act(d, g_act, pre("g"))
    c = d.op("add", [d.op("mul", [f, c_prev]), d.op("mul", [i, cell])])
    return [d.op("mul", [o, _act(d, h_act, c)]), c]


@decompose("gru_cell")
def decompose_gru_cell(d):
    x, w, rw, h, bias, rbias = d.inputs
    a = d.attrs
    return gru_cell_values(d, x, w, rw, h, bias, rbias, a["hidden_size"], a["reset_after"], a["layout"],
                           a["activations"])


@decompose("lstm_cell")
def decompose_lstm_cell(d):
    x, w, rw, h, c, bias, rbias, peep = d.inputs
    a = d.attrs
    return lstm_cell_values(d, x, w, rw, h, c, bias, rbias, peep, a["hidden_size"], a["layout"], a["activations"])


def _dir(d, t, k, shape):
    """Direction k of a per-direction tensor, with its leading dimension dropped."""
    if t is None:
        return None
    full = d.spec(t).shape
    return d.op("reshape", [d.op("slice", [t], starts=[k] + [0] * (len(full) - 1), sizes=[1] + list(full[1:]))],
                new_shape=shape)


def _network(d, n_params, step_fn, n_states, initial):
    """Run the cell over time for each direction; returns final states (+ the sequence)."""
    a = d.attrs
    x = d.inputs[0]
    w, rw = d.inputs[1], d.inputs[2]
    steps, hidden = a["steps"], a["hidden_size"]
    dtype = d.spec(x).dtype
    _, batch, size = d.spec(x).shape
    nd = 2 if a["direction"] == "both" else 1
    states = []  # per direction: list of state values
    for k in range(nd):
        per = []
        for s in range(n_states):
            init = _dir(d, initial[s], k, [batch, hidden])
            per.append(init if init is not None else d.const(_zeros(batch, hidden), dtype))
        states.append(per)
    params = [[_dir(d, t, k, list(d.spec(t).shape[1:])) if t is not None else None for t in d.inputs[1:1 + n_params]]
              for k in range(nd)]
    sequence = []
    for step in range(steps):
        for k in range(nd):
            t = steps - step - 1 if (k == 1 or a["direction"] == "backward") else step
            xt = d.op("reshape", [d.op("slice", [x], starts=[t, 0, 0], sizes=[1, batch, size])], new_shape=[batch, size])
            states[k] = step_fn(xt, params[k], states[k])
        if a["return_sequence"]:
            sequence.append(_stack(d, [states[k][0] for k in range(nd)], nd, batch, hidden, 4))
    results = [_stack(d, [states[k][s] for k in range(nd)], nd, batch, hidden, 3) for s in range(n_states)]
    if a["return_sequence"]:
        results.append(sequence[0] if steps == 1 else d.op("concat", [sequence], axis=0))
    return results


def _zeros(batch, hidden):
    import numpy as np

    return np.zeros((batch, hidden))


def _stack(d, values, nd, batch, hidden, rank):
    shape = [1, batch, hidden] if rank == 3 else [1, 1, batch, hidden]
    parts = [d.op("reshape", [v], new_shape=shape) for v in values]
    return parts[0] if nd == 1 else d.op("concat", [parts], axis=rank - 3)


@decompose("gru")
def decompose_gru(d):
    a = d.attrs

    def step(xt, p, state):
        w, rw, bias, rbias = p
        return [gru_cell_values(d, xt, w, rw, state[0], bias, rbias, a["hidden_size"], a["reset_after"], a["layout"],
                                a["activations"])]

    return _network(d, 4, step, 1, [d.inputs[5]])


@decompose("lstm")
def decompose_lstm(d):
    a = d.attrs

    def step(xt, p, state):
        w, rw, bias, rbias, peep = p
        return lstm_cell_values(d, xt, w, rw, state[0], state[1], bias, rbias, peep, a["hidden_size"], a["layout"],
                                a["activations"])

    return _network(d, 5, step, 2, [d.inputs[6], d.inputs[7]])
