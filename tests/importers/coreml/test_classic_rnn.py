"""Classic Core ML recurrent layers vs float64 numpy implementations of the spec's equations.
The reference reads every matrix back from the saved spec by its gate name."""
import numpy as np
import pytest

pytest.importorskip("coremltools")
from coremltools.models import datatypes  # noqa: E402
from coremltools.models.neural_network import NeuralNetworkBuilder  # noqa: E402

from tests.importers.coreml.util import run, save  # noqa: E402

S, B, X, H = 4, 2, 3, 5


def sig(v):
    return 1 / (1 + np.exp(-v))


def hard_sig(v):
    """The usual hard sigmoid: coremltools writes the GRU's SIGMOID_HARD without parameters."""
    return np.clip(0.2 * v + 0.5, 0, 1)


def clip(v):
    return np.clip(v, -50, 50)


def m(wp, shape):
    return np.asarray(wp.floatValue, np.float64).reshape(shape)


def ref_simple(p, x, h):
    W, R, b = m(p.weightMatrix, (H, X)), m(p.recursionMatrix, (H, H)), m(p.biasVector, (H,))
    outs = {}
    for t in (range(S - 1, -1, -1) if p.reverseInput else range(S)):
        h = np.tanh(clip(x[t] @ W.T + h @ R.T + b))
        outs[t] = h
    return np.stack([outs[t] for t in range(S)]), h


def ref_gru(p, x, h):
    g = {k: (m(getattr(p, f"{k}GateWeightMatrix"), (H, X)), m(getattr(p, f"{k}GateRecursionMatrix"), (H, H)),
             m(getattr(p, f"{k}GateBiasVector"), (H,))) for k in ("update", "reset", "output")}
    outs = {}
    for t in range(S):
        z = hard_sig(clip(x[t] @ g["update"][0].T + h @ g["update"][1].T + g["update"][2]))
        r = hard_sig(clip(x[t] @ g["reset"][0].T + h @ g["reset"][1].T + g["reset"][2]))
        o = np.tanh(clip(x[t] @ g["output"][0].T + (h * r) @ g["output"][1].T + g["output"][2]))
        h = (1 - z) * o + z * h
        outs[t] = h
    return np.stack([outs[t] for t in range(S)]), h


def ref_lstm(wp, params, x, h, c, reverse, peep):
    names = ("inputGate", "forgetGate", "blockInput", "outputGate")
    W = {k: m(getattr(wp, f"{k}WeightMatrix"), (H, X)) for k in names}
    R = {k: m(getattr(wp, f"{k}RecursionMatrix"), (H, H)) for k in names}
    Bv = {k: m(getattr(wp, f"{k}BiasVector"), (H,)) for k in names}
    if params.forgetBias:
        Bv["forgetGate"] = Bv["forgetGate"] + 1
    P = {k: m(getattr(wp, f"{k}PeepholeVector"), (H,)) if peep else np.zeros(H)
         for k in ("inputGate", "forgetGate", "outputGate")}
    outs = {}
    for t in (range(S - 1, -1, -1) if reverse else range(S)):
        i = sig(clip(x[t] @ W["inputGate"].T + h @ R["inputGate"].T + P["inputGate"] * c + Bv["inputGate"]))
        f = sig(clip(x[t] @ W["forgetGate"].T + h @ R["forgetGate"].T + P["forgetGate"] * c + Bv["forgetGate"]))
        z = np.tanh(clip(x[t] @ W["blockInput"].T + h @ R["blockInput"].T + Bv["blockInput"]))
        c = c * f + i * z
        o = sig(clip(x[t] @ W["outputGate"].T + h @ R["outputGate"].T + P["outputGate"] * c + Bv["outputGate"]))
        h = np.tanh(c) * o
        outs[t] = h
    return np.stack([outs[t] for t in range(S)]), h, c


def test_recurrent_layers(tmp_path, rng):
    x = rng.standard_normal((S, B, X, 1, 1)).astype(np.float32)
    h0 = rng.standard_normal((1, B, H, 1, 1)).astype(np.float32) * 0.5
    c0 = rng.standard_normal((1, B, H, 1, 1)).astype(np.float32) * 0.5
    rnd = lambda *s: (rng.standard_normal(s) * 0.5).astype(np.float32)  # noqa: E731
    outs = ["rnn_y", "rnn_h", "gru_y", "gru_h", "lstm_y", "lstm_h", "lstm_c", "bi_y", "bi_hf", "bi_cf", "bi_hb",
            "bi_cb"]
    b = NeuralNetworkBuilder([("x", datatypes.Array(S, B, X, 1, 1)), ("h0", datatypes.Array(1, B, H, 1, 1)),
                              ("c0", datatypes.Array(1, B, H, 1, 1))], [(n, None) for n in outs])
    b.add_simple_rnn("rnn", rnd(H, H), rnd(H, X), rnd(H), H, X, "TANH", ["x", "h0"], ["rnn_y", "rnn_h"],
                     output_all=True, reverse_input=True)
    b.add_gru("gru", [rnd(H, H) for _ in range(3)], [rnd(H, X) for _ in range(3)], [rnd(H) for _ in range(3)], H, X,
              ["x", "h0"], ["gru_y", "gru_h"], output_all=True)  # SIGMOID_HARD with empty parameters
    b.add_unilstm("lstm", [rnd(H, H) for _ in range(4)], [rnd(H, X) for _ in range(4)], [rnd(H) for _ in range(4)],
                  H, X, ["x", "h0", "c0"], ["lstm_y", "lstm_h", "lstm_c"], peep=[rnd(H) for _ in range(3)],
                  output_all=True, forget_bias=True)
    b.add_bidirlstm("bi", [rnd(H, H) for _ in range(4)], [rnd(H, X) for _ in range(4)], [rnd(H) for _ in range(4)],
                    [rnd(H, H) for _ in range(4)], [rnd(H, X) for _ in range(4)], [rnd(H) for _ in range(4)], H, X,
                    ["x", "h0", "c0", "h0", "c0"], ["bi_y", "bi_hf", "bi_cf", "bi_hb", "bi_cb"], output_all=False)
    got = run(save(b, tmp_path), {"x": x, "h0": h0, "c0": c0})
    layers = {l.name: l for l in b.spec.neuralNetwork.layers}
    x64, h64, c64 = x[:, :, :, 0, 0].astype(np.float64), h0[0, :, :, 0, 0].astype(np.float64), \
        c0[0, :, :, 0, 0].astype(np.float64)
    expect = {}
    y, h = ref_simple(layers["rnn"].simpleRecurrent, x64, h64)
    expect.update(rnn_y=y, rnn_h=h[None])
    y, h = ref_gru(layers["gru"].gru, x64, h64)
    expect.update(gru_y=y, gru_h=h[None])
    p = layers["lstm"].uniDirectionalLSTM
    y, h, c = ref_lstm(p.weightParams, p.params, x64, h64, c64, False, True)
    expect.update(lstm_y=y, lstm_h=h[None], lstm_c=c[None])
    p = layers["bi"].biDirectionalLSTM
    yf, hf, cf = ref_lstm(p.weightParams[0], p.params, x64, h64, c64, False, False)
    yb, hb, cb = ref_lstm(p.weightParams[1], p.params, x64, h64, c64, True, False)
    expect.update(bi_y=np.concatenate([yf[-1], yb[0]], axis=-1)[None], bi_hf=hf[None], bi_cf=cf[None],
                  bi_hb=hb[None], bi_cb=cb[None])
    for name, e in expect.items():
        g = got[name]
        assert g.size == e.size, name
        np.testing.assert_allclose(g.reshape(e.shape), e, rtol=2e-5, atol=2e-6, err_msg=name)


@pytest.mark.parametrize("batch", [1, 2])
def test_gru_without_initial_state(tmp_path, rng, batch):
    """A GRU over a sequence with its initial state omitted (zeros): at batch 1 the products of the
    constant zero state failed inside IREE ("failed to move consumer into region")."""
    x = rng.standard_normal((S, batch, X, 1, 1)).astype(np.float32)
    rnd = lambda *s: (rng.standard_normal(s) * 0.5).astype(np.float32)  # noqa: E731
    b = NeuralNetworkBuilder([("x", datatypes.Array(S, batch, X, 1, 1))], [("y", None), ("h", None)])
    b.add_gru("gru", [rnd(H, H) for _ in range(3)], [rnd(H, X) for _ in range(3)], [rnd(H) for _ in range(3)], H, X,
              ["x"], ["y", "h"], output_all=True)
    got = run(save(b, tmp_path), {"x": x})
    y, h = ref_gru(b.spec.neuralNetwork.layers[0].gru, x[:, :, :, 0, 0].astype(np.float64), np.zeros((batch, H)))
    np.testing.assert_allclose(got["y"].reshape(y.shape), y, rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(got["h"].reshape(h.shape), h, rtol=2e-5, atol=2e-6)
