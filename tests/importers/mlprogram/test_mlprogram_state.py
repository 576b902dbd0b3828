"""iOS18 stateful models (ct.StateType): a state is an input and an output of the same name; fed
back run after run, a torch module with a sliding-window key/value cache gives torch's outputs
over several steps."""
import numpy as np
import pytest

import estuary
from tests.importers.mlprogram.util import accumulator_package, check_running_sum

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


def test_runtime_position_slices(tmp_path):
    """slice_update, slice_by_index and slice_by_size at a run-time begin (static window sizes):
    numpy slicing at the begin, negative begins counted from the end, then clamped so the window
    fits (docs/mlprogram.md)."""
    import coremltools as ct
    from coremltools.converters.mil import Builder as mb
    from coremltools.converters.mil.mil import types

    from .util import save

    @mb.program(input_specs=[mb.TensorSpec(shape=(4, 6)), mb.TensorSpec(shape=(2, 3)),
                             mb.TensorSpec(shape=(2,), dtype=types.int32)], opset_version=ct.target.iOS18)
    def prog(x, u, b):
        end = mb.add(x=b, y=np.array([2, 3], np.int32))
        return (mb.slice_update(x=x, update=u, begin=b, end=end, name="upd"),
                mb.slice_update(x=x, update=u, begin=b, end=mb.add(x=b, y=np.array([2, 6], np.int32)),
                                stride=[1, 2], name="upd_strided"),
                mb.slice_by_size(x=x, begin=b, size=[2, 3], name="by_size"),
                mb.slice_by_index(x=x, begin=b, end=end, begin_mask=[False, True], end_mask=[False, True],
                                  squeeze_mask=[True, False], name="row"))  # x[b[0]]: a static [6]

    model = estuary.load(estuary.compile(save(prog, tmp_path, target=ct.target.iOS18)))
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 6)).astype(np.float32)
    u = rng.standard_normal((2, 3)).astype(np.float32)
    for b in ([0, 0], [2, 3], [1, 2], [-2, -3], [3, 5], [-9, 40]):
        r, c = [max(0, min(v + d if v < 0 else v, d - n)) for v, d, n in zip(b, (4, 6), (2, 3))]
        want = x.copy()
        want[r:r + 2, c:c + 3] = u
        out = model.run({"x": x, "u": u, "b": np.array(b, np.int32)})
        np.testing.assert_array_equal(out["upd"], want)
        c2 = max(0, min(b[1] + 6 if b[1] < 0 else b[1], 6 - 5))  # columns c2, c2 + 2, c2 + 4
        want = x.copy()
        want[r:r + 2, c2:c2 + 5:2] = u
        np.testing.assert_array_equal(out["upd_strided"], want)
        np.testing.assert_array_equal(out["by_size"], x[r:r + 2, c:c + 3])
        np.testing.assert_array_equal(out["row"], x[max(0, min(b[0] + 4 if b[0] < 0 else b[0], 3))])


V, E, H, L, NL = 32, 16, 2, 8, 2  # GPT-style decoder: vocabulary, width, heads, max length, layers
DH = E // H


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(E), torch.nn.LayerNorm(E)
        self.qkv, self.o = torch.nn.Linear(E, 3 * E), torch.nn.Linear(E, E)
        self.ff = torch.nn.Sequential(torch.nn.Linear(E, 2 * E), torch.nn.GELU(), torch.nn.Linear(2 * E, E))


class Decoder(torch.nn.Module):
    """One token per call at position `pos` (an input): each layer writes its key and value into
    fp16 caches (states) at `pos` and attends causally over the fixed length L."""

    def __init__(self):
        super().__init__()
        self.emb, self.pemb = torch.nn.Embedding(V, E), torch.nn.Embedding(L, E)
        self.blocks = torch.nn.ModuleList(Block() for _ in range(NL))
        self.head = torch.nn.Linear(E, V)
        for i in range(NL):
            self.register_buffer(f"k{i}", torch.zeros(1, H, L, DH, dtype=torch.float16))
            self.register_buffer(f"v{i}", torch.zeros(1, H, L, DH, dtype=torch.float16))

    def forward(self, tok, pos):
        x = self.emb(tok) + self.pemb(pos)
        bias = torch.where(torch.arange(L) <= pos, 0.0, -1e4)  # the causal mask from the position
        for i, blk in enumerate(self.blocks):
            q, k, v = blk.qkv(blk.ln1(x)).reshape(1, 1, 3, H, DH).permute(2, 0, 3, 1, 4)
            kc, vc = getattr(self, f"k{i}"), getattr(self, f"v{i}")
            kc[:, :, pos:pos + 1] = k.half()  # slice_update at a run-time begin
            vc[:, :, pos:pos + 1] = v.half()
            a = torch.softmax(q @ kc.float().transpose(-1, -2) / DH ** 0.5 + bias, -1) @ vc.float()
            x = x + blk.o(a.transpose(1, 2).reshape(1, 1, E))
            x = x + blk.ff(blk.ln2(x))
        return self.head(x)

    def reset(self):
        for b in self.buffers():
            b.zero_()


@pytest.fixture(scope="module")
def decoder(tmp_path_factory):
    """(the torch decoder, its .mlpackage, the compiled Artifact), shared by the tests below."""
    model, path = decoder_package(tmp_path_factory.mktemp("decoder"))
    return model, path, estuary.compile(path)


def decoder_package(tmp_path):
    import coremltools as ct

    torch.manual_seed(5)
    model = Decoder().eval()
    tok, pos = torch.tensor([[3]], dtype=torch.int32), torch.tensor([0], dtype=torch.int32)
    traced = torch.jit.trace(model, (tok, pos), check_trace=False)
    model.reset()
    states = [ct.StateType(wrapped_type=ct.TensorType(shape=(1, H, L, DH), dtype=np.float16), name=f"{c}{i}")
              for i in range(NL) for c in "kv"]
    ml = ct.convert(traced, inputs=[ct.TensorType(name="tok", shape=(1, 1), dtype=np.int32),
                                    ct.TensorType(name="pos", shape=(1,), dtype=np.int32)],
                    outputs=[ct.TensorType(name="logits")], states=states,
                    minimum_deployment_target=ct.target.iOS18, convert_to="mlprogram",
                    compute_precision=ct.precision.FLOAT32)
    path = str(tmp_path / "decoder.mlpackage")
    ml.save(path)
    return model, path


def test_decoder_states_on_device(decoder):
    """make_state(): the KV caches stay in the State between runs; two States are two independent
    sequences, interleaved, each matching its own torch module's logits and caches."""
    torch_a, _, art = decoder
    torch_b = Decoder().eval()
    torch_b.load_state_dict(torch_a.state_dict())
    model = estuary.load(art)
    assert [n for n, _, _ in model.states] == ["k0", "v0", "k1", "v1"]
    sa, sb = model.make_state(), model.make_state()
    seq_a, seq_b = [3, 7, 1, 30, 12, 5, 9], [8, 8, 2, 17, 0, 31, 4]
    for step, (ta, tb) in enumerate(zip(seq_a, seq_b)):
        for tok, m, state in ((ta, torch_a, sa), (tb, torch_b, sb)):
            feed = {"tok": np.array([[tok]], np.int32), "pos": np.array([step], np.int32)}
            with torch.no_grad():
                want = m(torch.from_numpy(feed["tok"]), torch.from_numpy(feed["pos"])).numpy()
            out = model.run(feed, state=state)
            assert list(out) == ["logits"]
            np.testing.assert_allclose(out["logits"], want, rtol=1e-3, atol=1e-3)
            for name in ("k0", "v1"):
                np.testing.assert_allclose(state.read(name).astype(np.float32),
                                           getattr(m, name).detach().float().numpy(), atol=2e-3)
    # the explicit form (states fed and returned) computes the same step
    feed = {"tok": np.array([[6]], np.int32), "pos": np.array([len(seq_a)], np.int32)}
    explicit = model.run({**feed, **{n: sa.read(n) for n in sa.names}})
    stateful = model.run(feed, state=sa)
    np.testing.assert_array_equal(explicit["logits"], stateful["logits"])
    np.testing.assert_array_equal(explicit["k1"], sa.read("k1"))
    # write() restarts a sequence
    for n in sb.names:
        sb.write(n, np.zeros((1, H, L, DH), np.float16))
    torch_b.reset()
    with torch.no_grad():
        want = torch_b(torch.tensor([[3]], dtype=torch.int32), torch.tensor([0], dtype=torch.int32)).numpy()
    np.testing.assert_allclose(model.run({"tok": np.array([[3]], np.int32), "pos": np.array([0], np.int32)},
                                         state=sb)["logits"], want, rtol=1e-3, atol=1e-3)


def test_state_errors(decoder):
    model = estuary.load(decoder[2])
    state = model.make_state()
    feed = {"tok": np.array([[1]], np.int32), "pos": np.array([0], np.int32)}
    with pytest.raises(estuary.RuntimeInputError, match="states come from state="):
        model.run({**feed, "k0": state.read("k0")}, state=state)
    with pytest.raises(estuary.RuntimeInputError, match=r"missing \['k0', 'v0', 'k1', 'v1'\].*make_state"):
        model.run(feed)
    with pytest.raises(estuary.RuntimeInputError, match="no state 'k9'"):
        state.read("k9")
    with pytest.raises(estuary.RuntimeInputError, match="state 'k0' is float16"):
        state.write("k0", np.zeros((1, H, L, DH), np.float32))
    with pytest.raises(estuary.RuntimeInputError, match="make_state"):
        model.run(feed, state={"k0": 0})


@pytest.mark.vulkan
def test_state_on_vulkan(tmp_path):
    """Off the CPU the function returns each state's new buffer, which the State keeps (no host
    copy): a running sum over three runs."""
    model = estuary.load(estuary.compile(accumulator_package(tmp_path), target="vulkan-spirv"))
    assert model.driver == "vulkan"
    check_running_sum(model)


def test_states_in_threads(tmp_path):
    """Threads running one model, each with its own State, and plain runs beside them, stay
    independent (a run that finds the model's buffers in use takes its own)."""
    import threading

    model = estuary.load(estuary.compile(accumulator_package(tmp_path)))
    x = np.ones((2, 3), np.float32)
    results, errors = {}, []

    def work(k):
        try:
            state = model.make_state()
            for _ in range(40):
                model.run({"x": k * x}, state=state)
                model.run({"x": x, "acc": np.zeros((2, 3), np.float16)})  # the explicit form, no State
            results[k] = state.read("acc")
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in (1, 2, 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for k in (1, 2, 3):
        np.testing.assert_array_equal(results[k], np.full((2, 3), 40 * k, np.float16))
