"""Classic Core ML recurrent layers: simpleRecurrent, gru, uniDirectionalLSTM, biDirectionalLSTM.

The recurrences are unrolled over the (static) sequence length with the spec's equations: every
gate pre-activation is clipped to [-50, 50]; activations are any ActivationParams (sigmoidHard, linear
and scaledTanh with all-zero parameters, as coremltools writes them, mean their usual defaults
(0.2, 0.5), (1, 0) and (1, 1)). Sequences are
[Seq, Batch, inputVectorSize, 1, 1]; optional inputs give the initial states ([1, Batch, H, 1, 1],
zeros when absent). `reverseInput` processes x_S .. x_1 and, like the backward half of the
bidirectional LSTM in the spec, output position t holds the state after x_S .. x_t.
LSTM: `forgetBias` adds 1 to the forget gate bias; `cellClipThreshold` > 0 clips the cell state to
[-threshold, threshold] (0, the protobuf default, means no clipping).
"""
import numpy as np

from estuary.importers.coreml.ops import OPS
from estuary.importers.coreml.ops.activation import apply_activation


class _Cell:
    """Shared helpers of one unrolled recurrence on [B, n] matrices."""

    def __init__(self, c, layer, n_in, n_out):
        self.c = c
        x = c.input(layer)
        shape = list(c.spec(x).shape)
        c.check(len(shape) == 5 and shape[2] == n_in and shape[3] == shape[4] == 1,
                f"expects an input [Seq, Batch, {n_in}, 1, 1], got {shape}")
        self.seq, self.batch, self.n_in, self.n_out = shape[0], shape[1], n_in, n_out
        self.x = c.reshape(x, [self.seq, self.batch, n_in])

    def state(self, layer, k, zeros=True):
        """Initial state from optional input k ([1, B, H, 1, 1]); when absent, zeros (None unless
        `zeros`: the caller then leaves out the products of the zero state, which IREE cannot
        always compile when they are constant: "failed to move consumer into region")."""
        c = self.c
        if not zeros and not (len(layer.input) > k and layer.input[k]):
            return None
        if len(layer.input) > k and layer.input[k]:
            v = c.input(layer, k)
            c.check(c.spec(v).size == self.batch * self.n_out,
                    f"initial state {layer.input[k]!r} has shape {list(c.spec(v).shape)}, "
                    f"[1, {self.batch}, {self.n_out}, 1, 1] expected")
            return c.reshape(v, [self.batch, self.n_out])
        return c.const(np.zeros((self.batch, self.n_out), np.float32))

    def step_input(self, t):
        c = self.c
        v = c.op("slice", [self.x], starts=[t, 0, 0], sizes=[1, self.batch, self.n_in])
        return c.reshape(v, [self.batch, self.n_in])

    def matrix(self, wp, cols, what):
        return self.c.const(self.c.weights(wp, [self.n_out, cols], what))

    def vector(self, wp, what, use=True):
        return self.c.const(self.c.weights(wp, [self.n_out], what)) if use else None

    def affine(self, terms, bias):
        """clip(sum of x @ W^T terms + bias, -50, 50)."""
        c = self.c
        acc = None
        for v, w in terms:
            if v is None:  # a product of the omitted (zero) initial state
                continue
            y = c.op("gemm", [v, w], b_transpose=True)
            acc = y if acc is None else c.op("add", [acc, y])
        if bias is not None:
            acc = c.op("add", [acc, bias])
        return c.op("clamp", [acc], min_value=-50.0, max_value=50.0)

    def act(self, a, v):
        c = self.c
        a = _with_defaults(a)
        return c.reshape(apply_activation(c, a, c.reshape(v, [self.batch, self.n_out, 1, 1])),
                         [self.batch, self.n_out])

    def sequence(self, outs, full):
        """[Seq, B, H, 1, 1] of the per-position outputs, or [1, B, H, 1, 1] of the last one."""
        c = self.c
        if not full:
            return c.reshape(outs[-1], [1, self.batch, self.n_out, 1, 1])
        stacked = c.op("concat", [[c.reshape(o, [1, self.batch, self.n_out]) for o in outs]], axis=0)
        return c.reshape(stacked, [self.seq, self.batch, self.n_out, 1, 1])

    def final(self, v):
        return self.c.reshape(v, [1, self.batch, self.n_out, 1, 1])


# coremltools' converters emit recurrent activations by name with empty parameter messages
# (builder._set_recurrent_activation); these take the usual defaults instead of all-zero parameters.
_DEFAULTS = {"sigmoidHard": (0.2, 0.5), "linear": (1.0, 0.0), "scaledTanh": (1.0, 1.0)}


def _with_defaults(a):
    kind = a.WhichOneof("NonlinearityType")
    if kind in _DEFAULTS:
        p = getattr(a, kind)
        if p.alpha == 0 and p.beta == 0:
            a = type(a).FromString(a.SerializeToString())
            getattr(a, kind).alpha, getattr(a, kind).beta = _DEFAULTS[kind]
    return a


def _order(seq, reverse):
    return list(range(seq - 1, -1, -1)) if reverse else list(range(seq))


def _activations(c, acts, n, what):
    acts = list(acts)
    c.check(len(acts) == n, f"{what} needs {n} activations, the layer has {len(acts)}")
    return acts


@OPS.op("simpleRecurrent")
def simple_recurrent(c, layer):
    p = layer.simpleRecurrent
    cell = _Cell(c, layer, int(p.inputVectorSize), int(p.outputVectorSize))
    w = cell.matrix(p.weightMatrix, cell.n_in, "weightMatrix")
    r = cell.matrix(p.recursionMatrix, cell.n_out, "recursionMatrix")
    b = cell.vector(p.biasVector, "biasVector", p.hasBiasVector)
    h = cell.state(layer, 1)
    outs = [None] * cell.seq
    for t in _order(cell.seq, p.reverseInput):
        h = cell.act(p.activation, cell.affine([(cell.step_input(t), w), (h, r)], b))
        outs[t] = h
    last = outs[0] if p.reverseInput else outs[-1]
    seq_out = cell.sequence(outs, True) if p.sequenceOutput else cell.final(last)
    return [seq_out, cell.final(h)][:len(layer.output)]


@OPS.op("gru")
def gru(c, layer):
    p = layer.gru
    cell = _Cell(c, layer, int(p.inputVectorSize), int(p.outputVectorSize))
    f, g = _activations(c, p.activations, 2, "GRU")
    W = {k: cell.matrix(getattr(p, f"{k}GateWeightMatrix"), cell.n_in, f"{k}GateWeightMatrix")
         for k in ("update", "reset", "output")}
    R = {k: cell.matrix(getattr(p, f"{k}GateRecursionMatrix"), cell.n_out, f"{k}GateRecursionMatrix")
         for k in ("update", "reset", "output")}
    B = {k: cell.vector(getattr(p, f"{k}GateBiasVector"), f"{k}GateBiasVector", p.hasBiasVectors)
         for k in ("update", "reset", "output")}
    h = cell.state(layer, 1, zeros=False)  # None: zeros, whose products step 0 leaves out
    one = c.const(np.float32(1.0))
    outs = [None] * cell.seq
    for t in _order(cell.seq, p.reverseInput):
        x = cell.step_input(t)
        z = cell.act(f, cell.affine([(x, W["update"]), (h, R["update"])], B["update"]))
        r = cell.act(f, cell.affine([(x, W["reset"]), (h, R["reset"])], B["reset"]))
        hr = None if h is None else c.op("mul", [h, r])
        o = cell.act(g, cell.affine([(x, W["output"]), (hr, R["output"])], B["output"]))
        h = c.op("mul", [c.op("sub", [one, z]), o]) if h is None else \
            c.op("add", [c.op("mul", [c.op("sub", [one, z]), o]), c.op("mul", [z, h])])
        outs[t] = h
    last = outs[0] if p.reverseInput else outs[-1]
    seq_out = cell.sequence(outs, True) if p.sequenceOutput else cell.final(last)
    return [seq_out, cell.final(h)][:len(layer.output)]


def _lstm(c, cell, acts, params, wp, h, s, reverse):
    """Run one LSTM direction; returns (outputs by position, final h, final c)."""
    f, g, hh = acts
    gates = ("inputGate", "forgetGate", "blockInput", "outputGate")
    W = {k: cell.matrix(getattr(wp, f"{k}WeightMatrix"), cell.n_in, f"{k}WeightMatrix") for k in gates}
    R = {k: cell.matrix(getattr(wp, f"{k}RecursionMatrix"), cell.n_out, f"{k}RecursionMatrix") for k in gates}
    B = {}
    for k in gates:
        if params.hasBiasVectors:
            v = c.weights(getattr(wp, f"{k}BiasVector"), [cell.n_out], f"{k}BiasVector")
        else:
            v = np.zeros(cell.n_out, np.float32)
        if k == "forgetGate" and params.forgetBias:
            v = v + np.float32(1.0)
        B[k] = c.const(v.astype(np.float32)) if (params.hasBiasVectors or k == "forgetGate" and params.forgetBias) \
            else None
    P = {k: cell.vector(getattr(wp, f"{k}PeepholeVector"), f"{k}PeepholeVector", params.hasPeepholeVectors)
         for k in ("inputGate", "forgetGate", "outputGate")}
    one = c.const(np.float32(1.0))
    clip = float(params.cellClipThreshold)

    def pre(k, x, h, state):
        terms = [(x, W[k]), (h, R[k])]
        bias = B[k]
        if P.get(k) is not None:
            peep = c.op("mul", [state, P[k]])
            bias = peep if bias is None else c.op("add", [peep, bias])
        return cell.affine(terms, bias)

    outs = [None] * cell.seq
    for t in _order(cell.seq, reverse):
        x = cell.step_input(t)
        fg = cell.act(f, pre("forgetGate", x, h, s))
        ig = c.op("sub", [one, fg]) if params.coupledInputAndForgetGate else cell.act(f, pre("inputGate", x, h, s))
        z = cell.act(g, pre("blockInput", x, h, None))
        s = c.op("add", [c.op("mul", [s, fg]), c.op("mul", [ig, z])])
        if clip > 0:
            s = c.op("clamp", [s], min_value=-clip, max_value=clip)
        o = cell.act(f, pre("outputGate", x, h, s))
        h = c.op("mul", [cell.act(hh, s), o])
        outs[t] = h
    return outs, h, s


@OPS.op("uniDirectionalLSTM")
def uni_lstm(c, layer):
    p = layer.uniDirectionalLSTM
    cell = _Cell(c, layer, int(p.inputVectorSize), int(p.outputVectorSize))
    acts = _activations(c, p.activations, 3, "LSTM")
    outs, h, s = _lstm(c, cell, acts, p.params, p.weightParams, cell.state(layer, 1), cell.state(layer, 2),
                       p.reverseInput)
    last = outs[0] if p.reverseInput else outs[-1]
    seq_out = cell.sequence(outs, True) if p.params.sequenceOutput else cell.final(last)
    return [seq_out, cell.final(h), cell.final(s)][:len(layer.output)]


@OPS.op("biDirectionalLSTM")
def bi_lstm(c, layer):
    p = layer.biDirectionalLSTM
    cell = _Cell(c, layer, int(p.inputVectorSize), int(p.outputVectorSize))
    c.check(len(p.weightParams) == 2, f"needs 2 weightParams (forward, backward), has {len(p.weightParams)}")
    fw = _lstm(c, cell, _activations(c, p.activationsForwardLSTM, 3, "the forward LSTM"), p.params,
               p.weightParams[0], cell.state(layer, 1), cell.state(layer, 2), False)
    bw = _lstm(c, cell, _activations(c, p.activationsBackwardLSTM, 3, "the backward LSTM"), p.params,
               p.weightParams[1], cell.state(layer, 3), cell.state(layer, 4), True)
    if p.params.sequenceOutput:
        y = c.op("concat", [[cell.sequence(fw[0], True), cell.sequence(bw[0], True)]], axis=2)
    else:
        y = c.op("concat", [[cell.final(fw[0][-1]), cell.final(bw[0][0])]], axis=2)
    outs = [y, cell.final(fw[1]), cell.final(fw[2]), cell.final(bw[1]), cell.final(bw[2])]
    return outs[:len(layer.output)]
