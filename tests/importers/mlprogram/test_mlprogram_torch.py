"""Torch modules converted with ct.convert (torch.jit.trace) to .mlpackage, compiled with Estuary
(`estuary compile` for the realistic models) and compared with the same module on torch CPU.

torch 2.13 with coremltools 9: nn.TransformerEncoderLayer does not convert (coremltools' `int`
op fails on a shape tensor), so the encoder here is written out (attention, layer norm, GELU MLP)
with shapes as Python constants.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import estuary

torch = pytest.importorskip("torch")
F = torch.nn.functional


def convert(module, example, folder, name, precision="fp32", target="iOS17", input_name="x"):
    import coremltools as ct

    module.eval()
    traced = torch.jit.trace(module, example)
    dtype = np.int32 if example.dtype == torch.int64 else np.float32
    ml = ct.convert(traced, inputs=[ct.TensorType(name=input_name, shape=example.shape, dtype=dtype)],
                    convert_to="mlprogram", minimum_deployment_target=getattr(ct.target, target),
                    compute_precision=ct.precision.FLOAT32 if precision == "fp32" else ct.precision.FLOAT16)
    path = os.path.join(str(folder), f"{name}.mlpackage")
    ml.save(path)
    return path


def only(outputs):
    assert len(outputs) == 1
    return next(iter(outputs.values()))


class Block(torch.nn.Module):
    def __init__(self, c, stride):
        super().__init__()
        o = c * stride
        self.c1, self.b1 = torch.nn.Conv2d(c, o, 3, stride, 1, bias=False), torch.nn.BatchNorm2d(o)
        self.c2, self.b2 = torch.nn.Conv2d(o, o, 3, 1, 1, bias=False), torch.nn.BatchNorm2d(o)
        self.short = (torch.nn.Sequential(torch.nn.Conv2d(c, o, 1, stride, bias=False), torch.nn.BatchNorm2d(o))
                      if stride > 1 else torch.nn.Identity())

    def forward(self, x):
        return torch.relu(self.b2(self.c2(torch.relu(self.b1(self.c1(x))))) + self.short(x))


class TinyResNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, 2, 1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                                        torch.nn.MaxPool2d(3, 2, 1))
        self.blocks = torch.nn.Sequential(Block(8, 1), Block(8, 2))
        self.fc = torch.nn.Linear(16, 10)

    def forward(self, x):
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.blocks(self.stem(x)), 1), 1))


def randomize_bn(module):
    for m in module.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)
            m.weight.data.uniform_(0.5, 1.5)
    return module


D, T, H = 32, 7, 4


class Attention(torch.nn.Module):
    def __init__(self, sdpa):
        super().__init__()
        self.sdpa = sdpa
        self.qkv, self.out = torch.nn.Linear(D, 3 * D), torch.nn.Linear(D, D)

    def forward(self, x):
        qkv = self.qkv(x).reshape(-1, T, 3, H, D // H).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        if self.sdpa:
            y = F.scaled_dot_product_attention(q, k, v)
        else:
            y = torch.softmax(q @ k.transpose(-1, -2) / (D // H) ** 0.5, dim=-1) @ v
        return self.out(y.transpose(1, 2).reshape(-1, T, D))


class EncoderLayer(torch.nn.Module):
    def __init__(self, sdpa):
        super().__init__()
        self.attn, self.n1, self.n2 = Attention(sdpa), torch.nn.LayerNorm(D), torch.nn.LayerNorm(D)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(D, 2 * D), torch.nn.GELU(), torch.nn.Linear(2 * D, D))

    def forward(self, x):
        x = self.n1(x + self.attn(x))
        return self.n2(x + self.mlp(x))


class TinyEncoder(torch.nn.Module):
    def __init__(self, sdpa):
        super().__init__()
        self.emb = torch.nn.Embedding(50, D)
        self.pos = torch.nn.Parameter(torch.randn(1, T, D) * 0.1)
        self.layers = torch.nn.Sequential(EncoderLayer(sdpa), EncoderLayer(sdpa))
        self.head = torch.nn.Linear(D, 5)

    def forward(self, ids):
        return self.head(self.layers(self.emb(ids) + self.pos).mean(1))


class TinyDecoder(torch.nn.Module):
    """GPT-style: token and position embeddings, causal self-attention, tanh-GELU MLP, LM head."""

    def __init__(self):
        super().__init__()
        self.emb, self.pos = torch.nn.Embedding(40, D), torch.nn.Embedding(T, D)
        self.qkv, self.out = torch.nn.Linear(D, 3 * D), torch.nn.Linear(D, D)
        self.ln1, self.ln2 = torch.nn.LayerNorm(D), torch.nn.LayerNorm(D)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(D, 4 * D), torch.nn.GELU(approximate="tanh"),
                                       torch.nn.Linear(4 * D, D))
        self.head = torch.nn.Linear(D, 40, bias=False)
        self.register_buffer("mask", torch.tril(torch.ones(T, T)).bool())

    def forward(self, ids):
        x = self.emb(ids) + self.pos(torch.arange(T))
        qkv = self.qkv(self.ln1(x)).reshape(-1, T, 3, H, D // H).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        a = ((q @ k.transpose(-1, -2)) * (D // H) ** -0.5).masked_fill(~self.mask, float("-inf")).softmax(-1)
        x = x + self.out((a @ v).transpose(1, 2).reshape(-1, T, D))
        return self.head(x + self.mlp(self.ln2(x)))


class TinyMobileNet(torch.nn.Module):
    """MobileNetV2/V3-style: inverted residual with depthwise conv, ReLU6, hardswish, squeeze-excite."""

    def __init__(self):
        super().__init__()
        bn = torch.nn.BatchNorm2d
        self.stem = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, 2, 1, bias=False), bn(8), torch.nn.ReLU6())
        self.block = torch.nn.Sequential(
            torch.nn.Conv2d(8, 24, 1, bias=False), bn(24), torch.nn.ReLU6(),
            torch.nn.Conv2d(24, 24, 3, 2, 1, groups=24, bias=False), bn(24), torch.nn.Hardswish(),
            torch.nn.Conv2d(24, 12, 1, bias=False), bn(12))
        self.se = torch.nn.Sequential(torch.nn.AdaptiveAvgPool2d(1), torch.nn.Conv2d(12, 4, 1), torch.nn.ReLU(),
                                      torch.nn.Conv2d(4, 12, 1), torch.nn.Hardsigmoid())
        self.fc = torch.nn.Linear(12, 7)

    def forward(self, x):
        y = self.block(self.stem(x))
        return self.fc(F.adaptive_avg_pool2d(y * self.se(y), 1).flatten(1))


@pytest.mark.parametrize("precision", ["fp32", "fp16"])
@pytest.mark.parametrize("kind", ["decoder", "mobilenet"])
def test_decoder_and_mobilenet(tmp_path, kind, precision):
    torch.manual_seed(6)
    if kind == "decoder":
        model, x = TinyDecoder(), torch.randint(0, 40, (2, T))
        feed = {"x": x.numpy().astype(np.int32)}
    else:
        model, x = randomize_bn(TinyMobileNet()), torch.randn(1, 3, 32, 32)
        feed = {"x": x.numpy()}
    package = convert(model.eval(), x, tmp_path, kind, precision=precision)
    got = only(estuary.load(estuary.compile(package)).run(feed))
    tol = 1e-4 if precision == "fp32" else 1e-2
    np.testing.assert_allclose(got, model(x).detach().numpy(), rtol=tol, atol=tol)


def cli_compile(package, folder):
    out = os.path.join(str(folder), "model.vmfb")
    subprocess.run([sys.executable, "-m", "estuary", "compile", "-q", package, "-o", out], check=True)
    return estuary.load(out)


def test_tiny_resnet_cli(tmp_path):
    torch.manual_seed(0)
    model = randomize_bn(TinyResNet())
    x = torch.randn(1, 3, 32, 32)
    package = convert(model, x, tmp_path, "resnet")
    got = only(cli_compile(package, tmp_path).run({"x": x.numpy()}))
    want = model(x).detach().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("sdpa", [False, True], ids=["matmul-softmax", "sdpa-ios18"])
def test_tiny_encoder_cli(tmp_path, sdpa):
    torch.manual_seed(1)
    model = TinyEncoder(sdpa)
    ids = torch.randint(0, 50, (2, T))
    package = convert(model, ids, tmp_path, "encoder", target="iOS18" if sdpa else "iOS17", input_name="ids")
    got = only(cli_compile(package, tmp_path).run({"ids": ids.numpy().astype(np.int32)}))
    want = model(ids).detach().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_float16_precision(tmp_path):
    """ct.convert's default FLOAT16 precision: fp16 weights and casts; Estuary computes in float32,
    so the error against torch float32 is the weights' fp16 rounding."""
    torch.manual_seed(2)
    model = randomize_bn(TinyResNet())
    x = torch.randn(1, 3, 32, 32)
    package = convert(model, x, tmp_path, "resnet16", precision="fp16")
    got = only(estuary.load(estuary.compile(package)).run({"x": x.numpy()}))
    want = model(x).detach().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2)


class Mixed(torch.nn.Module):
    """Ops the torch frontend lowers to several MIL ops: upsampling, depthwise/transposed/1-D convs,
    average pooling, group norm, hardswish, clamp, cumsum, flip, chunk, where, pixel shuffle."""

    def __init__(self):
        super().__init__()
        self.dw = torch.nn.Conv2d(4, 4, 3, padding=1, groups=4)
        self.up = torch.nn.ConvTranspose2d(4, 2, 2, stride=2)
        self.c1 = torch.nn.Conv1d(4, 3, 3, padding=1)
        self.gn = torch.nn.GroupNorm(2, 4)

    def forward(self, x):
        a = F.hardswish(self.gn(self.dw(x)))
        b = self.up(F.avg_pool2d(a, 2))
        c = F.interpolate(x, scale_factor=2, mode="nearest")
        d = torch.clamp(torch.cumsum(x, dim=3), -1, 1).flip(2)
        e, f = torch.chunk(x, 2, dim=1)
        g = torch.where(e > 0, e, f * 2)
        h = self.c1(x.mean(2))
        s = F.pixel_shuffle(x, 2)
        return torch.cat([b.flatten(), c.flatten(), d.flatten(), g.flatten(), h.flatten(), s.flatten()])


def test_mixed_torch_ops(tmp_path):
    torch.manual_seed(3)
    model = Mixed()
    x = torch.randn(1, 4, 6, 6)
    package = convert(model, x, tmp_path, "mixed")
    got = only(estuary.load(estuary.compile(package)).run({"x": x.numpy()}))
    np.testing.assert_allclose(got, model(x).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_classifier(tmp_path):
    """ct.ClassifierConfig adds MIL classify: the label comes back as the label, the probabilities
    as a vector in label order."""
    import coremltools as ct

    torch.manual_seed(5)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Softmax(dim=1)).eval()
    x = torch.randn(1, 4)
    ml = ct.convert(torch.jit.trace(model, x), inputs=[ct.TensorType(name="x", shape=x.shape)],
                    convert_to="mlprogram", classifier_config=ct.ClassifierConfig(["cat", "dog", "bird"]),
                    compute_precision=ct.precision.FLOAT32)
    path = str(tmp_path / "classifier.mlpackage")
    ml.save(path)
    got = estuary.load(estuary.compile(path)).run({"x": x.numpy()})
    want = model(x).detach().numpy()[0]
    np.testing.assert_allclose(got["classLabel_probs"], want, rtol=1e-5, atol=1e-6)
    assert list(got["classLabel"]) == [["cat", "dog", "bird"][int(np.argmax(want))]]


@pytest.mark.parametrize("padding,align,mode", [("zeros", False, "bilinear"), ("border", True, "bilinear"),
                                                ("reflection", False, "bilinear"), ("zeros", True, "nearest")])
def test_grid_sample(tmp_path, padding, align, mode):
    """F.grid_sample converts to MIL resample with run-time coordinates (some outside the image)."""
    import coremltools as ct

    class Sample(torch.nn.Module):
        def forward(self, x, grid):
            return F.grid_sample(x, grid, mode=mode, padding_mode=padding, align_corners=align)

    torch.manual_seed(7)
    x, grid = torch.randn(2, 3, 5, 6), torch.rand(2, 4, 7, 2) * 2.4 - 1.2
    ml = ct.convert(torch.jit.trace(Sample().eval(), (x, grid)), convert_to="mlprogram",
                    inputs=[ct.TensorType(name="x", shape=x.shape), ct.TensorType(name="grid", shape=grid.shape)],
                    minimum_deployment_target=ct.target.iOS17, compute_precision=ct.precision.FLOAT32)
    path = str(tmp_path / "sample.mlpackage")
    ml.save(path)
    got = only(estuary.load(estuary.compile(path)).run({"x": x.numpy(), "grid": grid.numpy()}))
    np.testing.assert_allclose(got, Sample()(x, grid).numpy(), rtol=1e-5, atol=1e-5)


def test_affine(tmp_path):
    """MIL affine (built with the MIL builder) against torch's affine_grid + grid_sample."""
    import coremltools as ct
    from coremltools.converters.mil import Builder as mb

    theta = np.array([[0.8, -0.3, 0.1, 0.2, 1.1, -0.2], [1.0, 0.2, -0.3, -0.1, 0.9, 0.4]], np.float32)

    @mb.program(input_specs=[mb.TensorSpec(shape=(2, 3, 5, 6))])
    def prog(x):
        return mb.affine(x=x, transform_matrix=theta, output_height=4, output_width=7, sampling_mode="bilinear",
                         padding_mode="constant", padding_value=0.0, coordinates_mode="normalized_minus_one_to_one",
                         align_corners=True, name="y")

    path = str(tmp_path / "affine.mlpackage")
    ct.convert(prog, convert_to="mlprogram", minimum_deployment_target=ct.target.iOS17,
               compute_precision=ct.precision.FLOAT32).save(path)
    torch.manual_seed(8)
    x = torch.randn(2, 3, 5, 6)
    got = estuary.load(estuary.compile(path)).run({"x": x.numpy()})["y"]
    grid = F.affine_grid(torch.tensor(theta.reshape(2, 2, 3)), (2, 3, 4, 7), align_corners=True)
    want = F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=True)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-5)


def test_image_input(tmp_path):
    """ct.ImageType: the image is fed as float32 [C, H, W] (0..255, the model's channel order); the
    scale and bias coremltools writes into the program apply."""
    import coremltools as ct

    torch.manual_seed(10)
    model = torch.nn.Conv2d(3, 2, 1).eval()
    x = torch.rand(1, 3, 4, 5) * 255
    bias = [-0.5, -0.4, -0.3]
    ml = ct.convert(torch.jit.trace(model, x), convert_to="mlprogram", compute_precision=ct.precision.FLOAT32,
                    inputs=[ct.ImageType(name="img", shape=x.shape, scale=1 / 255.0, bias=bias,
                                         color_layout=ct.colorlayout.BGR)])
    path = str(tmp_path / "image.mlpackage")
    ml.save(path)
    got = only(estuary.load(estuary.compile(path)).run({"img": x[0].numpy()}))
    want = model(x / 255.0 + torch.tensor(bias).reshape(1, 3, 1, 1)).detach().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
