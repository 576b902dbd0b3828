"""NNEF as torch-to-nnef 0.24 writes it (docs/nnef.md, "NNEF as exporters write it"): small torch
modules with seeded random weights exported for the Khronos and the tract targets, imported,
compiled and run by Estuary; the oracle is torch on CPU, and tract (PyPI bindings) runs the tract
exports as a second runtime."""
import numpy as np
import pytest

import estuary

from .exporters import export, relative_error, torch_outputs, tract_outputs, transformers

torch = pytest.importorskip("torch")
pytest.importorskip("torch_to_nnef")
nn, F = torch.nn, torch.nn.functional
RTOL = 1e-4  # fp32, relative to the largest output


class TinyCNN(nn.Module):
    """conv (bias) + BatchNorm + relu6, depth-wise conv + BatchNorm + hardswish, 1x1 conv + silu,
    gelu (erf) + hardsigmoid, max pooling, global average pooling, linear, softmax."""

    def __init__(self):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.c2, self.b2 = nn.Conv2d(8, 8, 3, padding=1, groups=8), nn.BatchNorm2d(8)
        self.c3, self.fc = nn.Conv2d(8, 16, 1), nn.Linear(16, 5)
        for bn in (self.b1, self.b2):  # statistics and affine parameters away from the identity
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)
            bn.weight.data.uniform_(0.5, 1.5)
            bn.bias.data.uniform_(-0.5, 0.5)

    def forward(self, x):
        x = F.relu6(self.b1(self.c1(x)))
        x = F.hardswish(self.b2(self.c2(x)))
        x = F.silu(self.c3(x))
        x = F.gelu(x) + F.hardsigmoid(x)
        x = F.adaptive_avg_pool2d(F.max_pool2d(x, 2), 1).flatten(1)
        return torch.softmax(self.fc(x), -1)


def _seeded(build):
    torch.manual_seed(0)
    return build().eval()


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("t2n")


@pytest.fixture(scope="module")
def cnn(folder):
    model = _seeded(TinyCNN)
    x = torch.randn(1, 3, 16, 16, generator=torch.Generator().manual_seed(1))
    paths = {t: export(model, (x,), folder / "cnn", t, ["x"], ["y"]) for t in ("khronos", "tract")}
    return model, x, paths


def _estuary(path, feeds, **kw):
    return estuary.load(estuary.compile(path, **kw)).run(feeds)


@pytest.mark.parametrize("target", ["khronos", "tract"])
def test_cnn_matches_torch(cnn, target):
    model, x, paths = cnn
    got = _estuary(paths[target], {"x": x.numpy()})["y"]
    assert relative_error(got, torch_outputs(model, (x,))[0]) < RTOL


def test_cnn_khronos_export_uses_the_lenient_constructs(cnn):
    """The Khronos export holds what the Khronos parser refuses and Estuary reads as tract does."""
    text = open(f"{cnn[2]['khronos']}/graph.nnef").read()
    assert "variable<scalar>(label = 'var_1e_05', shape = [])" in text  # epsilon as a rank-0 variable
    assert "epsilon = var_1e_05" in text
    assert "erf(x * 0.7071067811865475)" in text and ", 0.0);" in text  # the erf gelu, one extra argument
    assert "fragment silu" in text  # redefines the standard library's silu
    assert "axes = [0, 1, 2]);" in text  # BatchNorm parameters [1, 1, 1, C]
    import nnef

    with pytest.raises(nnef.Error):
        nnef.parse_string(text)


def test_cnn_tract_export_runs_in_tract_too(cnn):
    model, x, paths = cnn
    assert relative_error(tract_outputs(paths["tract"], [x.numpy()])[0], torch_outputs(model, (x,))[0]) < RTOL


@pytest.fixture(scope="module")
def encoder(folder):
    model = _seeded(lambda: nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True))
    x = torch.randn(1, 6, 32, generator=torch.Generator().manual_seed(2))
    return model, x, export(model, (x,), folder / "encoder", "tract", ["x"], ["y"])


def test_transformer_encoder_layer_matches_torch_and_tract(encoder):
    model, x, path = encoder
    want = torch_outputs(model, (x,))[0]
    assert relative_error(_estuary(path, {"x": x.numpy()})["y"], want) < RTOL
    assert relative_error(tract_outputs(path, [x.numpy()])[0], want) < RTOL


def tiny_llama():
    tf = transformers()
    config = tf.LlamaConfig(vocab_size=97, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                            attn_implementation="sdpa")
    torch.manual_seed(0)
    model = tf.LlamaForCausalLM(config).eval()
    for layer in model.model.layers:  # RMSNorm weights away from 1
        for norm in (layer.input_layernorm, layer.post_attention_layernorm):
            norm.weight.data.uniform_(0.5, 1.5)
    return model


class Prefill(nn.Module):
    """Logits for `ids` [1, S] with the causal mask and the positions given explicitly (an additive
    float mask from position comparisons, as torch-to-nnef's LLM exporter builds it): transformers
    then skips its packed-sequence detection, which torch-to-nnef 0.24 cannot export."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids):
        n = ids.shape[1]
        pos = torch.arange(n).unsqueeze(0)
        future = (torch.arange(n).reshape(1, n) > torch.arange(n).reshape(n, 1)).to(torch.float32)
        mask = (future * torch.finfo(torch.float32).min)[None, None]
        return self.model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=False).logits


def test_tiny_llama_static_matches_torch(folder):
    """LlamaForCausalLM (2 layers, hidden 32, grouped-query attention) for a fixed length: gather,
    range, casts, rotary embeddings, RMSNorm, tract_transformers_sdpa with a float mask."""
    model = Prefill(tiny_llama())
    ids = torch.randint(0, 97, (1, 8), generator=torch.Generator().manual_seed(3))
    path = export(model, (ids,), folder / "llama", "tract", ["input_ids"], ["logits"])
    text = open(f"{path}/graph.nnef").read()
    assert "tract_transformers_sdpa" in text and "tract_core_gather(" in text
    want = torch_outputs(model, (ids,))[0]
    got = _estuary(path, {"input_ids": ids.numpy().astype(np.int32)})["logits"]
    assert relative_error(got, want) < RTOL
    assert relative_error(tract_outputs(path, [ids.numpy()])[0], want) < RTOL
