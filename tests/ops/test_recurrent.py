"""gru / gruCell / lstm / lstmCell vs onnxruntime and torch.

Where ONNX and WebNN agree, onnxruntime's GRU/LSTM is the oracle (ONNX layouts "zrn"/"iofg";
linear_before_reset = resetAfter). Two documented differences are bridged on the oracle side:
- with returnSequence, the WebNN sequence is ordered by iteration (spec decomposition), ONNX's by
  time: a backward direction's slice of the ONNX sequence is flipped in time;
- WebNN's output-gate peephole reads the incoming cell state, ONNX's the new one: ONNX is used
  with a zero output-gate peephole only. Full peepholes use the numpy transcription of the spec's
  formulas below, which is first checked against onnxruntime where the two agree.
torch (float64) is the oracle for the other gate layouts: torch's GRU is "rzn" with the reset
gate applied after the matmul, its LSTM is "ifgo".
"""
import numpy as np
import pytest
from onnx import helper

from helpers import assert_accumulated, graph, op, run_graph, run_onnx

ONNX_ACT = {"sigmoid": "Sigmoid", "tanh": "Tanh", "relu": "Relu"}
ONNX_LAYOUT = {"gru": "zrn", "lstm": "iofg"}
TORCH_LAYOUT = {"gru": "rzn", "lstm": "ifgo"}


def _rand(rng, *shape):
    return (rng.standard_normal(shape) * 0.5).astype(np.float32)


def _reorder(t, src, dst):
    """Gate blocks of the last axis of `t` from order `src` (e.g. "rzn") to order `dst`."""
    if t is None or src == dst:
        return t
    parts = np.split(t, len(src), axis=-1)
    return np.concatenate([parts[src.index(g)] for g in dst], axis=-1)


def _reorder_rows(w, src, dst):
    """Weights [.., gates * h, K]: gate blocks of axis -2."""
    return None if w is None else np.swapaxes(_reorder(np.swapaxes(w, -1, -2), src, dst), -1, -2)


def _by_iteration(seq, direction):
    """An ONNX/torch sequence [steps, nd, batch, h] (by time) reordered by WebNN iteration."""
    seq = seq.copy()
    for d in range(seq.shape[1]):
        if d == 1 or direction == "backward":
            seq[:, d] = seq[::-1, d]
    return seq


# ---------------------------------------------------------------- a recurrent case and its WebNN graph


class Case:
    """Random operands of one gru/lstm network (`cell=True`: the matching gruCell/lstmCell)."""

    def __init__(self, rng, kind, steps=3, batch=2, size=3, hs=4, direction="forward", seq=False, bias=True,
                 rbias=True, init=False, reset_after=True, layout=None, acts=None, peephole=None, cell=False,
                 dtype=np.float32):
        self.kind, self.steps, self.batch, self.size, self.hs = kind, steps, batch, size, hs
        self.direction, self.seq, self.reset_after, self.acts, self.cell = direction, seq, reset_after, acts, cell
        self.layout = layout or ONNX_LAYOUT[kind]
        self.nd = 2 if direction == "both" else 1
        gates = 3 if kind == "gru" else 4
        nd, g = self.nd, gates * hs
        self.x = _rand(rng, steps, batch, size).astype(dtype)
        self.w, self.rw = _rand(rng, nd, g, size).astype(dtype), _rand(rng, nd, g, hs).astype(dtype)
        self.b = _rand(rng, nd, g).astype(dtype) if bias else None
        self.rb = _rand(rng, nd, g).astype(dtype) if rbias else None
        self.h0 = _rand(rng, nd, batch, hs).astype(dtype) if init else None
        self.c0 = _rand(rng, nd, batch, hs).astype(dtype) if init and kind == "lstm" else None
        self.p = None
        if peephole:  # packed i, o, f; "if" leaves the output gate's peephole zero (where ONNX agrees)
            self.p = _rand(rng, nd, 3 * hs).astype(dtype)
            if peephole == "if":
                self.p[:, hs:2 * hs] = 0

    def outputs(self):
        if self.cell:
            return ["h"] if self.kind == "gru" else ["h", "c"]
        return ["h"] + (["c"] if self.kind == "lstm" else []) + (["s"] if self.seq else [])

    def run(self, target="llvm-cpu"):
        consts = {k: v for k, v in [("w", self.w), ("rw", self.rw), ("b", self.b), ("rb", self.rb),
                                    ("p", self.p)] if v is not None}
        options = {"layout": self.layout}
        options.update({o: k for o, k in [("bias", "b"), ("recurrentBias", "rb"), ("peepholeWeight", "p")]
                        if k in consts})
        if self.acts:
            options["activations"] = list(self.acts)
        if self.kind == "gru":
            options["resetAfter"] = self.reset_after
        if self.cell:
            consts = {k: v[0] for k, v in consts.items()}  # one direction, no leading axis
            feeds = {"x": self.x[0], "h0": self.h0[0]}
            states = [("hiddenState", "h0")]
            if self.kind == "lstm":
                feeds["c0"] = self.c0[0]
                states.append(("cellState", "c0"))
            method = self.kind + "Cell"
            args = [("input", "x"), ("weight", "w"), ("recurrentWeight", "rw"), *states, ("hiddenSize", self.hs)]
        else:
            feeds = {"x": self.x}
            for name, arr, key in [("initialHiddenState", self.h0, "h0"), ("initialCellState", self.c0, "c0")]:
                if arr is not None:
                    consts[key] = arr
                    options[name] = key
            options.update(returnSequence=self.seq, direction=self.direction)
            method = self.kind
            args = [("input", "x"), ("weight", "w"), ("recurrentWeight", "rw"), ("steps", self.steps),
                    ("hiddenSize", self.hs)]
        outs = self.outputs()
        doc = graph(feeds, [op(method, *args, outputs=outs, **options)], outs, consts)
        got = run_graph(doc, feeds, target=target)
        return [got[k] for k in outs]

    def check(self, got, expected):
        # error compounds over the steps: each step accumulates inputSize + hiddenSize products
        n = self.steps * (self.size + self.hs)
        for g, e in zip(got, expected):
            assert g.dtype == self.x.dtype
            if g.dtype == np.float16:  # computed in float32, rounded once
                np.testing.assert_allclose(g.astype(np.float32), e, atol=4e-3, rtol=4e-3)
            else:
                assert_accumulated(g, np.asarray(e, np.float32), n, ulp_per_term=4)

    def cell_view(self, outs):
        """Network oracle results -> the cell's results (one step, one direction)."""
        return [o[0] for o in outs[:len(self.outputs())]]


# ---------------------------------------------------------------- oracles


def onnxruntime_oracle(case):
    """[hidden, (cell), (sequence)] in WebNN's conventions, from onnxruntime's GRU/LSTM."""
    kind, nd, hs = case.kind, case.nd, case.hs
    assert case.p is None or not case.p[:, hs:2 * hs].any(), "ONNX's output-gate peephole reads the new cell state"
    onnx_order = ONNX_LAYOUT[kind]
    x = case.x.astype(np.float32)
    f32 = lambda a: None if a is None else a.astype(np.float32)  # noqa: E731
    inits = {"W": _reorder_rows(f32(case.w), case.layout, onnx_order),
             "R": _reorder_rows(f32(case.rw), case.layout, onnx_order)}
    if case.b is not None or case.rb is not None:
        zeros = np.zeros_like(f32(case.w)[:, :, 0])
        b = zeros if case.b is None else f32(case.b)
        rb = zeros if case.rb is None else f32(case.rb)
        inits["B"] = np.concatenate([_reorder(b, case.layout, onnx_order), _reorder(rb, case.layout, onnx_order)],
                                    axis=1)
    names = ["X", "W", "R", "B" if "B" in inits else "", ""]
    for key, arr in [("initial_h", case.h0), ("initial_c", case.c0), ("P", case.p)]:
        if arr is not None:
            inits[key] = f32(arr)
    names.append("initial_h" if case.h0 is not None else "")
    if kind == "lstm":
        names += ["initial_c" if case.c0 is not None else "", "P" if case.p is not None else ""]
    while names[-1] == "":
        names.pop()
    attrs = {"hidden_size": hs, "direction": {"both": "bidirectional", "backward": "reverse"}.get(case.direction,
                                                                                                 "forward")}
    if case.acts:
        attrs["activations"] = [ONNX_ACT[a] for a in case.acts] * nd
    if kind == "gru":
        attrs["linear_before_reset"] = int(case.reset_after)
    outs = ["Y", "Y_h"] + (["Y_c"] if kind == "lstm" else [])
    node = helper.make_node(kind.upper(), names, outs, **attrs)
    res = run_onnx([node], {"X": x}, [(o, np.float32, None) for o in outs], initializers=inits)
    ours = [res["Y_h"]] + ([res["Y_c"]] if kind == "lstm" else [])
    return ours + ([_by_iteration(res["Y"], case.direction)] if case.seq else [])


def torch_oracle(case):
    """The same from torch.nn.GRU/LSTM in float64 (layouts "rzn"/"ifgo", resetAfter, no peephole)."""
    torch = pytest.importorskip("torch")
    assert case.layout == TORCH_LAYOUT[case.kind] and case.p is None and not case.acts
    assert case.kind == "lstm" or case.reset_after
    assert case.direction != "backward" and (case.b is None) == (case.rb is None)
    module = {"gru": torch.nn.GRU, "lstm": torch.nn.LSTM}[case.kind](
        case.size, case.hs, bias=case.b is not None, bidirectional=case.nd == 2).double()
    t = lambda a: torch.from_numpy(a.astype(np.float64))  # noqa: E731
    with torch.no_grad():
        for d in range(case.nd):
            suffix = "_reverse" if d else ""
            getattr(module, "weight_ih_l0" + suffix).copy_(t(case.w[d]))
            getattr(module, "weight_hh_l0" + suffix).copy_(t(case.rw[d]))
            if case.b is not None:
                getattr(module, "bias_ih_l0" + suffix).copy_(t(case.b[d]))
                getattr(module, "bias_hh_l0" + suffix).copy_(t(case.rb[d]))
        zeros = np.zeros((case.nd, case.batch, case.hs))
        h0 = t(zeros if case.h0 is None else case.h0)
        if case.kind == "gru":
            y, h = module(t(case.x), h0)
            states = [h]
        else:
            y, (h, c) = module(t(case.x), (h0, t(zeros if case.c0 is None else case.c0)))
            states = [h, c]
    seq = y.numpy().reshape(case.steps, case.batch, case.nd, case.hs).transpose(0, 2, 1, 3)
    return [s.numpy() for s in states] + ([_by_iteration(seq, case.direction)] if case.seq else [])


# A direct transcription of the spec's lstm()/lstmCell() decompositions (float64), for full peepholes.


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


NP_ACT = {"sigmoid": _sigmoid, "tanh": np.tanh, "relu": lambda v: np.maximum(v, 0)}


def spec_lstm_cell(x, w, rw, h, c, b, rb, p, hs, layout, acts):
    rows = lambda t, k: t[layout.index(k) * hs:(layout.index(k) + 1) * hs]  # noqa: E731
    pp = lambda k: 0 if p is None else p["iof".index(k) * hs:("iof".index(k) + 1) * hs]  # noqa: E731
    vec = lambda t, k: 0 if t is None else rows(t, k)  # noqa: E731
    fa, ga, ha = (NP_ACT[a] for a in acts)
    gate = lambda k: (vec(b, k) + vec(rb, k)) + (x @ rows(w, k).T + h @ rows(rw, k).T)  # noqa: E731
    i = fa(c * pp("i") + gate("i"))
    f = fa(c * pp("f") + gate("f"))
    g = ga(gate("g"))
    o = fa(c * pp("o") + gate("o"))  # the incoming cell state c, as the spec's decomposition
    ct = f * c + i * g
    return o * ha(ct), ct


def spec_lstm(case):
    d64 = lambda a: None if a is None else a.astype(np.float64)  # noqa: E731
    x, hs, acts = d64(case.x), case.hs, case.acts or ("sigmoid", "tanh", "tanh")
    zeros = np.zeros((case.nd, case.batch, hs))
    h = list(zeros if case.h0 is None else d64(case.h0))
    c = list(zeros if case.c0 is None else d64(case.c0))
    per = lambda t, d: None if t is None else d64(t[d])  # noqa: E731
    seq = []
    for step in range(case.steps):
        for d in range(case.nd):
            t = case.steps - step - 1 if (d == 1 or case.direction == "backward") else step
            h[d], c[d] = spec_lstm_cell(x[t], d64(case.w[d]), d64(case.rw[d]), h[d], c[d], per(case.b, d),
                                        per(case.rb, d), per(case.p, d), hs, case.layout, acts)
        seq.append(np.stack(h))
    return [np.stack(h), np.stack(c)] + ([np.stack(seq)] if case.seq else [])


def test_spec_transcription_matches_onnxruntime(rng):
    """The numpy LSTM agrees with onnxruntime wherever the two specs agree (no compilation)."""
    for kw in [{"direction": "both", "peephole": "if", "init": True}, {"direction": "backward", "layout": "ifgo"},
               {"acts": ("sigmoid", "relu", "tanh"), "rbias": False}]:
        case = Case(rng, "lstm", seq=True, **kw)
        for a, b in zip(spec_lstm(case), onnxruntime_oracle(case)):
            np.testing.assert_allclose(a, b, atol=1e-5)


def test_nn_references(rng):
    """The nn ops' numpy references (constant folding) agree with the oracles (no compilation)."""
    from estuary.dialects import core

    c = Case(rng, "gru", direction="both", seq=True, init=True, reset_after=False, acts=("sigmoid", "relu"))
    got = core.get("gru").reference(c.x, c.w, c.rw, c.b, c.rb, c.h0, steps=c.steps, hidden_size=c.hs,
                                    reset_after=False, return_sequence=True, direction="both", layout="zrn",
                                    activations=list(c.acts))
    for a, b in zip(got, onnxruntime_oracle(c)):
        np.testing.assert_allclose(a, b, atol=1e-5)
    c = Case(rng, "lstm", direction="backward", seq=True, init=True, peephole="iof", layout="ifgo")
    got = core.get("lstm").reference(c.x, c.w, c.rw, c.b, c.rb, c.p, c.h0, c.c0, steps=c.steps, hidden_size=c.hs,
                                     return_sequence=True, direction="backward", layout="ifgo", activations=None)
    for a, b in zip(got, spec_lstm(c)):
        np.testing.assert_allclose(a, b, atol=1e-5)
    c = Case(rng, "gru", steps=1, init=True, cell=True, layout="rzn")
    got = core.get("gru_cell").reference(c.x[0], c.w[0], c.rw[0], c.h0[0], c.b[0], c.rb[0], hidden_size=c.hs,
                                         reset_after=True, layout="rzn", activations=None)
    np.testing.assert_allclose(got, onnxruntime_oracle(c)[0][0], atol=1e-5)
    c = Case(rng, "lstm", steps=1, init=True, cell=True, peephole="iof")
    got = core.get("lstm_cell").reference(c.x[0], c.w[0], c.rw[0], c.h0[0], c.c0[0], c.b[0], c.rb[0], c.p[0],
                                          hidden_size=c.hs, layout="iofg", activations=None)
    for a, b in zip(got, spec_lstm(c)):
        np.testing.assert_allclose(a, b[0], atol=1e-5)


# ---------------------------------------------------------------- gru / gruCell


@pytest.mark.parametrize("kw", [
    {"seq": True},
    {"bias": False, "rbias": False},
    {"reset_after": False, "init": True},
    {"reset_after": False, "bias": False, "seq": True},  # recurrentBias alone, outside the reset product
    {"direction": "backward", "seq": True},
    {"direction": "both", "seq": True, "init": True, "reset_after": False},
    {"direction": "both", "layout": "rzn", "rbias": False},
    {"acts": ("sigmoid", "relu"), "init": True},
    {"steps": 1, "seq": True, "batch": 1},
    # batch 1 takes the per-gate product (one linalg.generic per step) instead of a matmul
    {"batch": 1, "seq": True},
    {"batch": 1, "reset_after": False, "init": True},
    {"batch": 1, "direction": "both", "layout": "rzn", "rbias": False, "init": True},
    {"batch": 1, "direction": "both", "reset_after": False, "bias": False, "seq": True},
    {"batch": 1, "steps": 5, "hs": 20, "size": 7, "acts": ("sigmoid", "relu")},
])
def test_gru(kw, rng):
    case = Case(rng, "gru", **kw)
    case.check(case.run(), onnxruntime_oracle(case))


@pytest.mark.parametrize("kw", [{}, {"direction": "both", "seq": True, "init": True, "steps": 4, "hs": 8}])
def test_gru_torch_layout(kw, rng):
    case = Case(rng, "gru", layout="rzn", **kw)
    case.check(case.run(), torch_oracle(case))


@pytest.mark.parametrize("oracle,kw", [
    ("onnxruntime", {"reset_after": False, "rbias": False}),
    ("onnxruntime", {"acts": ("relu", "tanh"), "bias": False}),
    ("torch", {"layout": "rzn"}),
    ("onnxruntime", {"batch": 1}),
    ("torch", {"layout": "rzn", "batch": 1, "reset_after": True}),
])
def test_gru_cell(oracle, kw, rng):
    case = Case(rng, "gru", steps=1, init=True, cell=True, **kw)
    expected = onnxruntime_oracle(case) if oracle == "onnxruntime" else torch_oracle(case)
    case.check(case.run(), case.cell_view(expected))


# ---------------------------------------------------------------- lstm / lstmCell


@pytest.mark.parametrize("kw", [
    {"seq": True},
    {"bias": False, "rbias": False, "init": True},
    {"direction": "backward", "seq": True, "rbias": False},
    {"direction": "both", "seq": True, "init": True, "peephole": "if"},
    {"layout": "ifgo", "peephole": "if", "bias": False},
    {"acts": ("sigmoid", "relu", "tanh"), "direction": "both"},
    {"batch": 1, "seq": True},  # batch 1: the per-gate product
    {"batch": 1, "direction": "both", "seq": True, "init": True, "peephole": "if"},
    {"batch": 1, "layout": "ifgo", "bias": False, "direction": "backward", "seq": True},
    {"batch": 1, "steps": 6, "hs": 40, "size": 9, "init": True},
    # batch 1, one direction, hidden a multiple of 16 / 32: the column-vector form on x86 CPUs
    # (passes/lowering/matvec.py unit_products; one block of units at 32, several at 64 and 96)
    {"batch": 1, "steps": 5, "hs": 64, "size": 8, "seq": True},
    {"batch": 1, "steps": 4, "hs": 32, "size": 5, "init": True, "layout": "ifgo", "peephole": "if"},
    {"batch": 1, "steps": 3, "hs": 96, "size": 4, "acts": ("sigmoid", "relu", "tanh"), "direction": "backward"},
])
def test_lstm(kw, rng):
    case = Case(rng, "lstm", **kw)
    case.check(case.run(), onnxruntime_oracle(case))


@pytest.mark.parametrize("kw", [
    {"init": True},
    {"direction": "backward", "seq": True, "layout": "ifgo"},
    {"direction": "both", "seq": True, "init": True, "steps": 4, "hs": 8},
    {"batch": 1, "direction": "both", "seq": True, "init": True},
    {"batch": 1, "seq": True, "init": True, "hs": 64, "size": 6},  # the column-vector form
])
def test_lstm_peephole(kw, rng):
    """Output-gate peepholes on the incoming cell state (WebNN), where ONNX differs."""
    case = Case(rng, "lstm", peephole="iof", **kw)
    case.check(case.run(), spec_lstm(case))


@pytest.mark.parametrize("kw", [{"seq": True}, {"direction": "both", "seq": True, "init": True}])
def test_lstm_torch_layout(kw, rng):
    case = Case(rng, "lstm", layout="ifgo", **kw)
    case.check(case.run(), torch_oracle(case))


@pytest.mark.parametrize("oracle,kw", [
    ("onnxruntime", {"peephole": "if"}),
    ("spec", {"peephole": "iof", "layout": "ifgo", "rbias": False}),
    ("torch", {"layout": "ifgo"}),
    ("onnxruntime", {"peephole": "if", "batch": 1}),
    ("torch", {"layout": "ifgo", "batch": 1}),
    ("onnxruntime", {"peephole": "if", "batch": 1, "hs": 32, "size": 7}),  # the column-vector form
])
def test_lstm_cell(oracle, kw, rng):
    case = Case(rng, "lstm", steps=1, init=True, cell=True, **kw)
    expected = {"onnxruntime": onnxruntime_oracle, "torch": torch_oracle, "spec": spec_lstm}[oracle](case)
    case.check(case.run(), case.cell_view(expected))


@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_float16(kind, rng):
    case = Case(rng, kind, direction="both", seq=True, init=True, dtype=np.float16)
    case.check(case.run(), onnxruntime_oracle(case))  # the oracle runs on the float16 values, in float32


# ---------------------------------------------------------------- Vulkan


@pytest.mark.vulkan
def test_vulkan_gru(rng):
    case = Case(rng, "gru", direction="both", seq=True, init=True)
    case.check(case.run(target="vulkan-spirv"), onnxruntime_oracle(case))


@pytest.mark.vulkan
def test_vulkan_lstm(rng):
    case = Case(rng, "lstm", direction="backward", seq=True, init=True, peephole="iof")
    case.check(case.run(target="vulkan-spirv"), spec_lstm(case))


def test_builder_returns_sequences():
    """gru/lstm/lstmCell return sequences of operands (a one-element list without returnSequence)."""
    from estuary import webnn

    b = webnn.MLGraphBuilder(webnn.ML().createContext())
    t = lambda name, *shape: b.input(name, {"dataType": "float32", "shape": list(shape)})  # noqa: E731
    x = t("x", 2, 1, 3)
    gru = b.gru(x, t("gw", 1, 9, 3), t("gr", 1, 9, 3), 2, 3)
    assert isinstance(gru, list) and [o.shape for o in gru] == [[1, 1, 3]]
    lstm = b.lstm(x, t("lw", 1, 16, 3), t("lr", 1, 16, 4), 2, 4, {"returnSequence": True})
    assert [o.shape for o in lstm] == [[1, 1, 4], [1, 1, 4], [2, 1, 1, 4]]
    cell = b.lstmCell(t("x1", 1, 3), t("w1", 16, 3), t("r1", 16, 4), t("h1", 1, 4), t("c1", 1, 4), 4)
    assert [o.shape for o in cell] == [[1, 4], [1, 4]]
