"""benchmarks/onnx_to_webnn.py on ONNX models torch.onnx.export writes with dynamic axes: the
Shape / Gather / Concat / Unsqueeze chains computing reshape targets (and a causal mask, rotary
tables cut to the sequence, the attention scale) fold into MLDynamicDimension inputs and
{"name"} / {"expression"} shape entries; one artefact runs every length, compared with
onnxruntime running the exported model itself."""
import json
import os
import sys
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import estuary

torch = pytest.importorskip("torch")
from helpers import ROOT  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import onnx_to_webnn  # noqa: E402
from onnx_shapes import Refused  # noqa: E402

nn, F = torch.nn, torch.nn.functional
D, HEADS, FF = 32, 4, 64


class BertLayer(nn.Module):
    """A BERT encoder layer: multi-head attention with an additive padding mask, post-LayerNorm, GELU."""

    def __init__(self):
        super().__init__()
        self.q, self.k, self.v, self.o = (nn.Linear(D, D) for _ in range(4))
        self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.up, self.down = nn.Linear(D, FF), nn.Linear(FF, D)

    def heads(self, t):
        b, n, _ = t.shape
        return t.view(b, n, HEADS, D // HEADS).transpose(1, 2)

    def forward(self, x, mask):
        b, n, d = x.shape
        q, k, v = self.heads(self.q(x)), self.heads(self.k(x)), self.heads(self.v(x))
        scores = q @ k.transpose(-1, -2) / (D // HEADS) ** 0.5 + (1.0 - mask[:, None, None, :]) * -10000.0
        a = torch.softmax(scores, -1) @ v
        x = self.ln1(x + self.o(a.transpose(1, 2).reshape(b, n, d)))
        return self.ln2(x + self.down(F.gelu(self.up(x))))


class RMSNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(D) + 0.5)

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


def rotate(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class LlamaLayer(nn.Module):
    """A Llama decoder layer: RMSNorm, rotary position embeddings (tables cut to the sequence),
    causal scaled_dot_product_attention, SwiGLU."""

    def __init__(self, max_len=128):
        super().__init__()
        self.q, self.k, self.v, self.o = (nn.Linear(D, D, bias=False) for _ in range(4))
        self.n1, self.n2 = RMSNorm(), RMSNorm()
        self.gate, self.up, self.down = nn.Linear(D, FF, bias=False), nn.Linear(D, FF, bias=False), nn.Linear(FF, D, bias=False)
        dh = D // HEADS
        freq = torch.outer(torch.arange(max_len).float(), 1.0 / 10000 ** (torch.arange(0, dh, 2).float() / dh))
        self.register_buffer("cos", torch.cat((freq, freq), -1).cos())
        self.register_buffer("sin", torch.cat((freq, freq), -1).sin())

    def forward(self, x):
        b, n, d = x.shape
        h = self.n1(x)
        q, k, v = (p(h).view(b, n, HEADS, d // HEADS).transpose(1, 2) for p in (self.q, self.k, self.v))
        cos, sin = self.cos[:n], self.sin[:n]
        q, k = q * cos + rotate(q) * sin, k * cos + rotate(k) * sin
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, n, d))
        h = self.n2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


def export(module, inputs, path):
    """torch.onnx.export (the TorchScript exporter) with the sequence axis dynamic ("seq")."""
    torch.manual_seed(0)
    names = list(inputs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module.eval(), tuple(inputs.values()), str(path), input_names=names, output_names=["y"],
                          dynamic_axes={**{n: {1: "seq"} for n in names}, "y": {1: "seq"}}, dynamo=False,
                          opset_version=17)
    return onnx.load(str(path))


def _feeds(names, n):
    rng = np.random.default_rng(n)
    feeds = {"x": rng.standard_normal((1, n, D)).astype(np.float32)}
    if "mask" in names:
        feeds["mask"] = np.ones((1, n), np.float32)
        feeds["mask"][0, n // 2:] = 0  # the second half is padding
    return feeds


@pytest.mark.parametrize("layer", ["bert", "llama"])
def test_transformer_layer_one_artefact_every_length(tmp_path, layer):
    torch.manual_seed(0)
    module = BertLayer() if layer == "bert" else LlamaLayer()
    example = {"x": torch.randn(1, 7, D)} | ({"mask": torch.ones(1, 7)} if layer == "bert" else {})
    model = export(module, example, tmp_path / "layer.onnx")
    path = onnx_to_webnn.convert(model, str(tmp_path / "layer.json"), max_sizes={"seq": 128})
    doc = json.loads(open(path).read())
    assert doc["inputs"]["x"]["descriptor"]["shape"] == [1, {"name": "seq", "maxSize": 128}, D]
    targets = [a["newShape"] for o in doc["operators"] if o["name"] == "reshape" for a in o["arguments"] if "newShape" in a]
    assert [1, {"name": "seq"}, HEADS, D // HEADS] in targets and [1, {"name": "seq"}, D] in targets
    if layer == "llama":  # the rotary tables cut to the sequence, the causal mask grown to [seq, seq]
        sizes = [a["sizes"] for o in doc["operators"] if o["name"] == "slice" for a in o["arguments"] if "sizes" in a]
        assert [{"name": "seq"}, D // HEADS] in sizes
        assert {"triangular", "expand", "where"} <= {o["name"] for o in doc["operators"]}
    compiled = estuary.load(estuary.compile(path))
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for n in (1, 7, 64, 128):
        feeds = _feeds(example, n)
        np.testing.assert_allclose(compiled.run(feeds)["y"], sess.run(["y"], feeds)[0], rtol=1e-4, atol=1e-4,
                                   err_msg=f"seq = {n}")


def test_refusals_say_what_is_missing(tmp_path):
    model = export(BertLayer(), {"x": torch.randn(1, 7, D), "mask": torch.ones(1, 7)}, tmp_path / "bert.onnx")
    with pytest.raises(Refused, match=r"input 'x' dimension 1 is dynamic \('seq'\); give its largest size: "
                                      r"convert\(\.\.\., max_sizes=\{'seq': N\}\)"):
        onnx_to_webnn.convert(model, str(tmp_path / "bert.json"))

    class ScaleBySequence(nn.Module):  # a size used as a number: not a shape argument
        def forward(self, x):
            return x * x.shape[1]

    model = export(ScaleBySequence(), {"x": torch.randn(1, 7, D)}, tmp_path / "scale.onnx")
    with pytest.raises(Refused, match=r"holds sizes computed from dynamic dimensions|is used as a number"):
        onnx_to_webnn.convert(model, str(tmp_path / "scale.json"), max_sizes={"seq": 128})
