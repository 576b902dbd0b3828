"""gru / gruCell / lstm / lstmCell.

Oracle: a direct numpy transcription of the WebNN spec's formulas written here (float64),
cross-checked against onnxruntime's GRU/LSTM where ONNX semantics coincide (forward, no peephole).
"""
import numpy as np
import pytest
from onnx import helper

from helpers import assert_accumulated, graph, op, run_graph, run_onnx

SIG = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
ACT = {"sigmoid": SIG, "tanh": np.tanh, "relu": lambda v: np.maximum(v, 0)}


def gru_cell_ref(x, w, rw, h, b, rb, hs, reset_after=True, layout="zrn", acts=("sigmoid", "tanh")):
    g = {"zrn": dict(z=0, r=1, n=2), "rzn": dict(r=0, z=1, n=2)}[layout]
    sl = lambda t, k: t[g[k] * hs:(g[k] + 1) * hs]  # noqa: E731
    b = np.zeros(3 * hs) if b is None else b
    rb = np.zeros(3 * hs) if rb is None else rb
    f, gg = ACT[acts[0]], ACT[acts[1]]
    z = f(x @ sl(w, "z").T + h @ sl(rw, "z").T + sl(b, "z") + sl(rb, "z"))
    r = f(x @ sl(w, "r").T + h @ sl(rw, "r").T + sl(b, "r") + sl(rb, "r"))
    if reset_after:
        n = gg(x @ sl(w, "n").T + sl(b, "n") + r * (h @ sl(rw, "n").T + sl(rb, "n")))
    else:
        n = gg(x @ sl(w, "n").T + sl(b, "n") + sl(rb, "n") + (r * h) @ sl(rw, "n").T)
    return z * h + (1 - z) * n


def lstm_cell_ref(x, w, rw, h, c, b, rb, p, hs, layout="iofg", acts=("sigmoid", "tanh", "tanh")):
    g = {"iofg": dict(i=0, o=1, f=2, g=3), "ifgo": dict(i=0, f=1, g=2, o=3)}[layout]
    sl = lambda t, k, table=g: t[table[k] * hs:(table[k] + 1) * hs]  # noqa: E731
    b = np.zeros(4 * hs) if b is None else b
    rb = np.zeros(4 * hs) if rb is None else rb
    pp = dict(i=0, o=1, f=2)
    peep = lambda k: 0 if p is None else c * sl(p, k, pp)  # noqa: E731  (incoming cell state)
    pre = lambda k: x @ sl(w, k).T + h @ sl(rw, k).T + sl(b, k) + sl(rb, k)  # noqa: E731
    fa, ga, ha = (ACT[a] for a in acts)
    i, f, o = fa(pre("i") + peep("i")), fa(pre("f") + peep("f")), fa(pre("o") + peep("o"))
    ct = f * c + i * ga(pre("g"))
    return o * ha(ct), ct


def network_ref(cell, x, w, rw, b, rb, init, direction, return_sequence, n_states, **kw):
    steps, batch, _ = x.shape
    nd = 2 if direction == "both" else 1
    states = [[init[s][k] for s in range(n_states)] for k in range(nd)]
    seq = []
    for step in range(steps):
        for k in range(nd):
            t = steps - step - 1 if (k == 1 or direction == "backward") else step
            out = cell(x[t], w[k], rw[k], *states[k], None if b is None else b[k], None if rb is None else rb[k], **kw)
            states[k] = list(out) if isinstance(out, tuple) else [out]
        seq.append(np.stack([states[k][0] for k in range(nd)]))
    res = [np.stack([states[k][s] for k in range(nd)]) for s in range(n_states)]
    return res + ([np.stack(seq)] if return_sequence else [])


def _rand(rng, *shape):
    return (rng.standard_normal(shape) * 0.5).astype(np.float32)


def gru_case(rng, steps=3, batch=2, size=4, hs=5, direction="forward", seq=False, bias=True, reset_after=True,
             layout="zrn", init=False, target="llvm-cpu"):
    nd = 2 if direction == "both" else 1
    x = _rand(rng, steps, batch, size)
    consts = {"w": _rand(rng, nd, 3 * hs, size), "rw": _rand(rng, nd, 3 * hs, hs)}
    options = {"resetAfter": reset_after, "returnSequence": seq, "direction": direction, "layout": layout}
    if bias:
        consts.update(b=_rand(rng, nd, 3 * hs), rb=_rand(rng, nd, 3 * hs))
        options.update(bias="b", recurrentBias="rb")
    if init:
        consts["h0"] = _rand(rng, nd, batch, hs)
        options["initialHiddenState"] = "h0"
    outs = ["h"] + (["s"] if seq else [])
    doc = graph({"x": x}, [op("gru", ("input", "x"), ("weight", "w"), ("recurrentWeight", "rw"), ("steps", steps),
                              ("hiddenSize", hs), outputs=outs, **options)], outs, consts)
    got = run_graph(doc, {"x": x}, target=target)
    h0 = consts.get("h0", np.zeros((nd, batch, hs)))
    f64 = {k: v.astype(np.float64) for k, v in consts.items()}
    ref = network_ref(lambda *a, **k: gru_cell_ref(*a, **k), x.astype(np.float64), f64["w"], f64["rw"],
                      f64.get("b"), f64.get("rb"), [h0.astype(np.float64)], direction, seq, 1, hs=hs,
                      reset_after=reset_after, layout=layout)
    for name, r in zip(outs, ref):
        assert_accumulated(got[name], r.astype(np.float32), size + hs, ulp_per_term=8)
    return x, consts, got


def test_gru_reference_matches_onnxruntime(rng):
    """The numpy oracle agrees with onnxruntime's GRU (linear_before_reset = resetAfter)."""
    x, consts, got = gru_case(rng, seq=True)
    bias = np.concatenate([consts["b"], consts["rb"]], axis=1)
    ort = run_onnx([helper.make_node("GRU", ["x", "w", "rw", "b"], ["y", "yh"], hidden_size=5, linear_before_reset=1)],
                   {"x": x}, [("y", np.float32, None), ("yh", np.float32, None)],
                   initializers={"w": consts["w"], "rw": consts["rw"], "b": bias})
    assert_accumulated(got["h"], ort["yh"], 9, ulp_per_term=8)
    assert_accumulated(got["s"], ort["y"], 9, ulp_per_term=8)


@pytest.mark.parametrize("kw", [{}, {"bias": False}, {"reset_after": False}, {"direction": "backward", "seq": True},
                                {"direction": "both", "seq": True, "init": True}, {"layout": "rzn"},
                                {"steps": 1, "seq": True}])
def test_gru(kw, rng):
    gru_case(rng, **kw)


def lstm_case(rng, steps=3, batch=2, size=4, hs=3, direction="forward", seq=False, bias=True, peephole=False,
              layout="iofg", init=False, target="llvm-cpu", acts=None):
    nd = 2 if direction == "both" else 1
    x = _rand(rng, steps, batch, size)
    consts = {"w": _rand(rng, nd, 4 * hs, size), "rw": _rand(rng, nd, 4 * hs, hs)}
    options = {"returnSequence": seq, "direction": direction, "layout": layout}
    if acts:
        options["activations"] = list(acts)
    if bias:
        consts.update(b=_rand(rng, nd, 4 * hs), rb=_rand(rng, nd, 4 * hs))
        options.update(bias="b", recurrentBias="rb")
    if peephole:
        consts["p"] = _rand(rng, nd, 3 * hs)
        options["peepholeWeight"] = "p"
    if init:
        consts.update(h0=_rand(rng, nd, batch, hs), c0=_rand(rng, nd, batch, hs))
        options.update(initialHiddenState="h0", initialCellState="c0")
    outs = ["h", "c"] + (["s"] if seq else [])
    doc = graph({"x": x}, [op("lstm", ("input", "x"), ("weight", "w"), ("recurrentWeight", "rw"), ("steps", steps),
                              ("hiddenSize", hs), outputs=outs, **options)], outs, consts)
    got = run_graph(doc, {"x": x}, target=target)
    f64 = {k: v.astype(np.float64) for k, v in consts.items()}
    zeros = np.zeros((nd, batch, hs))
    peep = f64.get("p")

    def cell(xt, w, rw, h, c, b, rb, hs, layout, acts):
        k = cell.k
        return lstm_cell_ref(xt, w, rw, h, c, b, rb, None if peep is None else peep[k], hs, layout, acts)

    # the direction index is needed for the per-direction peephole: run each direction separately
    refs = []
    for k in range(nd):
        cell.k = k
        sub = network_ref(cell, x.astype(np.float64), f64["w"][k:k + 1], f64["rw"][k:k + 1],
                          None if "b" not in f64 else f64["b"][k:k + 1], None if "rb" not in f64 else f64["rb"][k:k + 1],
                          [f64.get("h0", zeros)[k:k + 1], f64.get("c0", zeros)[k:k + 1]],
                          "backward" if (k == 1 or direction == "backward") else "forward", seq, 2, hs=hs,
                          layout=layout, acts=tuple(acts or ("sigmoid", "tanh", "tanh")))
        refs.append(sub)
    ref = [np.concatenate([r[i] for r in refs], axis=-3) for i in range(len(outs))]
    for name, r in zip(outs, ref):
        assert_accumulated(got[name], r.astype(np.float32), size + hs, ulp_per_term=8)
    return x, consts, got


def test_lstm_reference_matches_onnxruntime(rng):
    x, consts, got = lstm_case(rng, seq=True)
    bias = np.concatenate([consts["b"], consts["rb"]], axis=1)
    ort = run_onnx([helper.make_node("LSTM", ["x", "w", "rw", "b"], ["y", "yh", "yc"], hidden_size=3)], {"x": x},
                   [("y", np.float32, None), ("yh", np.float32, None), ("yc", np.float32, None)],
                   initializers={"w": consts["w"], "rw": consts["rw"], "b": bias})
    assert_accumulated(got["h"], ort["yh"], 7, ulp_per_term=8)
    assert_accumulated(got["c"], ort["yc"], 7, ulp_per_term=8)
    assert_accumulated(got["s"], ort["y"], 7, ulp_per_term=8)


@pytest.mark.parametrize("kw", [{}, {"peephole": True, "init": True}, {"direction": "backward", "seq": True},
                                {"direction": "both", "seq": True, "peephole": True}, {"layout": "ifgo"},
                                {"bias": False, "acts": ("sigmoid", "relu", "tanh")}])
def test_lstm(kw, rng):
    lstm_case(rng, **kw)


def test_cells(rng):
    x, h, c = _rand(rng, 2, 4), _rand(rng, 2, 3), _rand(rng, 2, 3)
    gw, grw, gb = _rand(rng, 9, 4), _rand(rng, 9, 3), _rand(rng, 9)
    lw, lrw, lb, lp = _rand(rng, 12, 4), _rand(rng, 12, 3), _rand(rng, 12), _rand(rng, 9)
    doc = graph({"x": x, "h": h, "c": c},
                [op("gruCell", ("input", "x"), ("weight", "gw"), ("recurrentWeight", "grw"), ("hiddenState", "h"),
                    ("hiddenSize", 3), outputs="g", bias="gb", resetAfter=False),
                 op("lstmCell", ("input", "x"), ("weight", "lw"), ("recurrentWeight", "lrw"), ("hiddenState", "h"),
                    ("cellState", "c"), ("hiddenSize", 3), outputs=["lh", "lc"], bias="lb", peepholeWeight="lp")],
                ["g", "lh", "lc"], {"gw": gw, "grw": grw, "gb": gb, "lw": lw, "lrw": lrw, "lb": lb, "lp": lp})
    got = run_graph(doc, {"x": x, "h": h, "c": c})
    d = lambda a: a.astype(np.float64)  # noqa: E731
    assert_accumulated(got["g"], gru_cell_ref(d(x), d(gw), d(grw), d(h), d(gb), None, 3, reset_after=False)
                       .astype(np.float32), 7, ulp_per_term=8)
    lh, lc = lstm_cell_ref(d(x), d(lw), d(lrw), d(h), d(c), d(lb), None, d(lp), 3)
    assert_accumulated(got["lh"], lh.astype(np.float32), 7, ulp_per_term=8)
    assert_accumulated(got["lc"], lc.astype(np.float32), 7, ulp_per_term=8)


@pytest.mark.vulkan
def test_vulkan_gru_lstm(rng):
    gru_case(rng, seq=True, target="vulkan-spirv")
    lstm_case(rng, seq=True, peephole=True, target="vulkan-spirv")
