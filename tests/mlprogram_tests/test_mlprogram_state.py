"""iOS18 stateful models (ct.StateType): a state is an input and an output of the same name; fed
back run after run, a torch module with a sliding-window key/value cache gives torch's outputs
over several steps."""
import numpy as np
import pytest

import estuary

torch = pytest.importorskip("torch")

W, D = 4, 8  # cache window, model width


class CachedAttention(torch.nn.Module):
    """One decoding step: project the new token, shift it into fp16 key/value caches (states),
    attend over the window."""

    def __init__(self):
        super().__init__()
        self.q, self.k, self.v = (torch.nn.Linear(D, D) for _ in range(3))
        self.register_buffer("k_cache", torch.zeros(1, W, D, dtype=torch.float16))
        self.register_buffer("v_cache", torch.zeros(1, W, D, dtype=torch.float16))

    def forward(self, x):
        k = torch.cat([self.k_cache[:, 1:].float(), self.k(x)], 1)
        v = torch.cat([self.v_cache[:, 1:].float(), self.v(x)], 1)
        self.k_cache[:, 0:W] = k.half()  # converts to slice_update + write_state
        self.v_cache[:, 0:W] = v.half()
        a = torch.softmax(self.q(x) @ k.transpose(1, 2) / D ** 0.5, -1)
        return a @ v


def test_sliding_kv_cache(tmp_path):
    import coremltools as ct

    torch.manual_seed(9)
    model = CachedAttention().eval()
    x = torch.randn(1, 1, D)
    states = [ct.StateType(wrapped_type=ct.TensorType(shape=(1, W, D), dtype=np.float16), name=n)
              for n in ("k_cache", "v_cache")]
    ml = ct.convert(torch.jit.trace(model, x, check_trace=False), inputs=[ct.TensorType(name="x", shape=x.shape)],
                    states=states, minimum_deployment_target=ct.target.iOS18, convert_to="mlprogram")
    path = str(tmp_path / "cache.mlpackage")
    ml.save(path)
    compiled = estuary.load(estuary.compile(path))
    model.k_cache.zero_()
    model.v_cache.zero_()
    feed = {"k_cache": np.zeros((1, W, D), np.float16), "v_cache": np.zeros((1, W, D), np.float16)}
    outputs = [n for n, _, _ in compiled.signature["outputs"] if n not in feed]
    assert len(outputs) == 1
    for step in range(6):  # more steps than the window: the cache wraps
        x = torch.randn(1, 1, D)
        want = model(x).detach().numpy()
        dtype = np.float16 if dict((n, d) for n, _, d in compiled.signature["inputs"])["x"] == "float16" else np.float32
        out = compiled.run({"x": x.numpy().astype(dtype), **feed})
        np.testing.assert_allclose(out[outputs[0]].astype(np.float32), want, rtol=2e-2, atol=2e-2)
        np.testing.assert_allclose(out["k_cache"].astype(np.float32), model.k_cache.float().detach().numpy(), atol=2e-2)
        feed = {"k_cache": out["k_cache"], "v_cache": out["v_cache"]}
