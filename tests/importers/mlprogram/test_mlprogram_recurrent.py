"""torch LSTM (bidirectional, with initial states), GRU and RNN converted with ct.convert, against
torch on CPU."""
import numpy as np
import pytest

import estuary

torch = pytest.importorskip("torch")

from tests.importers.mlprogram.test_mlprogram_torch import convert  # noqa: E402


class Recurrent(torch.nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.kind = kind
        cls = {"lstm": torch.nn.LSTM, "lstm_bi": torch.nn.LSTM, "gru": torch.nn.GRU, "rnn": torch.nn.RNN}[kind]
        self.net = cls(5, 6, bidirectional=kind == "lstm_bi")

    def forward(self, x):
        if self.kind == "lstm_bi":
            h0 = torch.linspace(-1, 1, 2 * 2 * 6).reshape(2, 2, 6)
            y, (h, c) = self.net(x, (h0, h0 * 0.5))
            return torch.cat([y.flatten(), h.flatten(), c.flatten()])
        y, h = self.net(x)
        if isinstance(h, tuple):
            h = h[0]
        return torch.cat([y.flatten(), h.flatten()])


@pytest.mark.parametrize("kind", ["lstm", "lstm_bi", "gru", "rnn"])
def test_recurrent(tmp_path, kind):
    torch.manual_seed(4)
    model = Recurrent(kind)
    x = torch.randn(4, 2, 5)
    package = convert(model, x, tmp_path, kind)
    got = estuary.load(estuary.compile(package)).run({"x": x.numpy()})
    got = next(iter(got.values()))
    np.testing.assert_allclose(got, model(x).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_mil_gru_ios17(tmp_path):
    """MIL gru (the torch frontend unrolls torch GRUs into while_loop): weights [r, n, z], one bias
    outside the reset product, per coremltools' op definition."""
    from coremltools.converters.mil import Builder as mb

    from .util import save

    rng = np.random.default_rng(6)
    h, i = 3, 4
    w_ih, w_hh = rng.standard_normal((3 * h, i)).astype(np.float32), rng.standard_normal((3 * h, h)).astype(np.float32)
    b = rng.standard_normal(3 * h).astype(np.float32)

    @mb.program(input_specs=[mb.TensorSpec(shape=(5, 2, i)), mb.TensorSpec(shape=(2, h))])
    def prog(x, h0):
        y, hn = mb.gru(x=x, initial_h=h0, weight_ih=w_ih, weight_hh=w_hh, bias=b, output_sequence=True,
                       direction="reverse")
        return mb.identity(x=y, name="y"), mb.identity(x=hn, name="h")

    x = rng.standard_normal((5, 2, i)).astype(np.float32)
    h0 = rng.standard_normal((2, h)).astype(np.float32)
    got = estuary.load(estuary.compile(save(prog, tmp_path))).run({"x": x, "h0": h0})
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    wr, wo, wz = np.split(w_ih.astype(np.float64), 3)
    ur, uo, uz = np.split(w_hh.astype(np.float64), 3)
    br, bo, bz = np.split(b.astype(np.float64), 3)
    state, ys = h0.astype(np.float64), [None] * 5
    for t in range(4, -1, -1):
        xt = x[t].astype(np.float64)
        r = sig(xt @ wr.T + state @ ur.T + br)
        z = sig(xt @ wz.T + state @ uz.T + bz)
        o = np.tanh(xt @ wo.T + r * (state @ uo.T) + bo)
        state = (1 - z) * o + z * state
        ys[t] = state
    np.testing.assert_allclose(got["y"], np.stack(ys), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got["h"], state, rtol=1e-5, atol=1e-5)
