"""The zoo's models: real architectures built by their own library code (torchvision, Hugging Face
transformers) with seeded random weights; nothing is downloaded.

`build(name)` returns the module in eval mode and its example inputs. Every model returns one
tensor (`SingleOutput` unwraps dicts, tuples and ModelOutputs). Weights whose library init is a
constant (zero heads and biases, norm scales of one, ConvNeXt's layer scale of 1e-6) and
BatchNorm's running statistics (zero mean, unit variance) are redrawn: with them a wrong axis or a
dropped branch would still match (`_redraw_constant_inits`).

This module imports torch only inside the builders, so the zoo's driver (run.py) can read the
model list without loading torch.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from . import compat

if TYPE_CHECKING:
    import torch

SEED = 0
SEQUENCE = 16  # tokens of the text models' example input
VOCAB = 1000


@dataclass(frozen=True)
class Spec:
    """One zoo model: how to build it, its example input, a note for the table."""

    name: str
    library: str  # "torchvision" or "transformers"
    build: Callable[[], tuple["torch.nn.Module", dict[str, "torch.Tensor"]]]
    note: str = ""
    small: bool = False  # in the test suite's quick subset (tests/zoo)
    zoo: bool = True  # in the full zoo (docs/zoo.md)


@dataclass
class Built:
    module: "torch.nn.Module"
    inputs: dict[str, "torch.Tensor"] = field(default_factory=dict)

    def reference(self) -> Any:
        """torch's output on the example inputs (a numpy array): the expected values."""
        import torch

        with torch.no_grad():
            return self.module(*self.inputs.values()).numpy()


def _generator(offset: int) -> "torch.Generator":
    import torch

    return torch.Generator().manual_seed(SEED + offset)


def _image(size: int) -> dict[str, "torch.Tensor"]:
    import torch

    return {"image": torch.randn(1, 3, size, size, generator=_generator(2))}


def _tokens() -> dict[str, "torch.Tensor"]:
    import torch

    return {"input_ids": torch.randint(0, VOCAB, (1, SEQUENCE), generator=_generator(3))}


# ---------------------------------------------------------------- torchvision


def _torchvision(constructor: str, size: int = 224, key: str | None = None, fastpath: bool = True,
                 **kwargs: Any) -> Callable[[], tuple["torch.nn.Module", dict[str, "torch.Tensor"]]]:
    """A builder for `torchvision.models.<constructor>(weights=None, **kwargs)` on a size² image;
    `key` picks the output of a model returning a dict (segmentation: "out"); `fastpath=False`
    turns torch's fused multi-head-attention path off (the tracers then see plain ops)."""

    def build() -> tuple["torch.nn.Module", dict[str, "torch.Tensor"]]:
        import torch

        torchvision = compat.torchvision()
        if not fastpath:
            torch.backends.mha.set_fastpath_enabled(False)
        factory: Any = torchvision.models
        for part in constructor.split("."):
            factory = getattr(factory, part)
        module = factory(weights=None, **kwargs)
        return (SingleOutput(module, key) if key else module), _image(size)

    return build


TORCHVISION = [
    Spec("resnet50", "torchvision", _torchvision("resnet50")),
    Spec("mobilenet_v3_large", "torchvision", _torchvision("mobilenet_v3_large")),
    Spec("efficientnet_b0", "torchvision", _torchvision("efficientnet_b0")),
    Spec("efficientnet_v2_s", "torchvision", _torchvision("efficientnet_v2_s")),
    Spec("convnext_tiny", "torchvision", _torchvision("convnext_tiny")),
    Spec("regnet_y_400mf", "torchvision", _torchvision("regnet_y_400mf")),
    Spec("shufflenet_v2_x1_0", "torchvision", _torchvision("shufflenet_v2_x1_0")),
    Spec("squeezenet1_1", "torchvision", _torchvision("squeezenet1_1")),
    Spec("densenet121", "torchvision", _torchvision("densenet121")),
    Spec("googlenet", "torchvision", _torchvision("googlenet", init_weights=True, aux_logits=False)),
    Spec("inception_v3", "torchvision", _torchvision("inception_v3", 299, init_weights=True, aux_logits=False),
         "299² input"),
    Spec("mnasnet1_0", "torchvision", _torchvision("mnasnet1_0")),
    Spec("vit_b_16", "torchvision", _torchvision("vit_b_16", fastpath=False),
         "built with torch.backends.mha.set_fastpath_enabled(False): coremltools has no converter for the "
         "fused `_native_multi_head_attention` that eval mode traces otherwise"),
    Spec("swin_t", "torchvision", _torchvision("swin_t")),
    Spec("maxvit_t", "torchvision", _torchvision("maxvit_t")),
    Spec("deeplabv3_resnet50", "torchvision",
         _torchvision("segmentation.deeplabv3_resnet50", key="out", weights_backbone=None, aux_loss=False),
         "output `out` (21 classes at 224²)"),
    Spec("lraspp_mobilenet_v3_large", "torchvision",
         _torchvision("segmentation.lraspp_mobilenet_v3_large", key="out", weights_backbone=None),
         "output `out` (21 classes at 224²)"),
    # the test suite's quick subset: small networks on 64² images
    Spec("resnet18_64", "torchvision", _torchvision("resnet18", 64), "64² input", small=True, zoo=False),
    Spec("mobilenet_v3_small_64", "torchvision", _torchvision("mobilenet_v3_small", 64), "64² input", small=True,
         zoo=False),
    Spec("shufflenet_v2_x0_5_64", "torchvision", _torchvision("shufflenet_v2_x0_5", 64), "64² input", small=True,
         zoo=False),
]


# ---------------------------------------------------------------- Hugging Face transformers

# every text model: 2 layers, hidden size 64, 4 heads, a 1000-token vocabulary
_SMALL: dict[str, Any] = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                              vocab_size=VOCAB, max_position_embeddings=128)


def _bert() -> tuple["torch.nn.Module", dict[str, "torch.Tensor"]]:
    import transformers as T

    return SingleOutput(T.BertModel(T.BertConfig(**_SMALL)), "last_hidden_state"), _tokens()


def _distilbert() -> tuple["torch.nn.Module", dict[str, "torch.Tensor"]]:
    import transformers as T

    config = T.DistilBertConfig(vocab_size=VOCAB, dim=64, n_layers=2, n_heads=4, hidden_dim=128,
                                max_position_embeddings=128)
    return SingleOutput(T.DistilBertModel(config), "last_hidden_state"), _tokens()


def _gpt2() -> tuple["torch.nn.Module", dict[str, "torch.Tensor"]]:
    import transformers as T

    config = T.GPT2Config(vocab_size=VOCAB, n_positions=128, n_embd=64, n_layer=2, n_head=4, bos_token_id=0,
                          eos_token_id=0)
    return SingleOutput(T.GPT2Model(config), "last_hidden_state", ones_mask=True, use_cache=False), _tokens()


def _llama() -> tuple["torch.nn.Module", dict[str, "torch.Tensor"]]:
    import transformers as T

    config = T.LlamaConfig(**_SMALL, num_key_value_heads=2)  # grouped-query attention: 2 key/value heads
    return SingleOutput(T.LlamaForCausalLM(config), "logits", ones_mask=True, use_cache=False), _tokens()


def _qwen2() -> tuple["torch.nn.Module", dict[str, "torch.Tensor"]]:
    import transformers as T

    config = T.Qwen2Config(**_SMALL, num_key_value_heads=2)
    return SingleOutput(T.Qwen2ForCausalLM(config), "logits", ones_mask=True, use_cache=False), _tokens()


def _t5_encoder() -> tuple["torch.nn.Module", dict[str, "torch.Tensor"]]:
    import transformers as T

    config = T.T5Config(vocab_size=VOCAB, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4)
    return SingleOutput(T.T5EncoderModel(config), "last_hidden_state"), _tokens()


def _whisper_encoder() -> tuple["torch.nn.Module", dict[str, "torch.Tensor"]]:
    import torch
    import transformers as T

    config = T.WhisperConfig(vocab_size=VOCAB, num_mel_bins=80, encoder_layers=2, encoder_attention_heads=4,
                             decoder_layers=2, decoder_attention_heads=4, d_model=64, encoder_ffn_dim=128,
                             decoder_ffn_dim=128, max_source_positions=32, max_target_positions=32)
    encoder = T.WhisperModel(config).get_encoder()
    features = torch.randn(1, 80, 64, generator=_generator(4))  # 64 frames: 2 x max_source_positions
    return SingleOutput(encoder, "last_hidden_state"), {"input_features": features}


def _hf_vit() -> tuple["torch.nn.Module", dict[str, "torch.Tensor"]]:
    import transformers as T

    config = T.ViTConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                         image_size=64, patch_size=16)
    return SingleOutput(T.ViTModel(config, add_pooling_layer=False), "last_hidden_state"), _image(64)


_TEXT = f"2 layers, hidden 64, 4 heads, {SEQUENCE} tokens"
TRANSFORMERS = [
    Spec("bert", "transformers", _bert, _TEXT, small=True),
    Spec("distilbert", "transformers", _distilbert, _TEXT),
    Spec("gpt2", "transformers", _gpt2, _TEXT + "; all-ones attention mask made inside forward", small=True),
    Spec("llama", "transformers", _llama, _TEXT + ", 2 key/value heads (GQA); all-ones attention mask made inside "
         "forward", small=True),
    Spec("qwen2", "transformers", _qwen2, _TEXT + ", 2 key/value heads (GQA); all-ones attention mask made inside "
         "forward"),
    Spec("t5_encoder", "transformers", _t5_encoder, _TEXT),
    Spec("whisper_encoder", "transformers", _whisper_encoder, "2 layers, d_model 64, 80 mel bins x 64 frames"),
    Spec("hf_vit", "transformers", _hf_vit, "2 layers, hidden 64, 64² image, 16² patches"),
]

MODELS: dict[str, Spec] = {s.name: s for s in TORCHVISION + TRANSFORMERS}
ZOO = [s.name for s in TORCHVISION + TRANSFORMERS if s.zoo]
SMALL = [s.name for s in TORCHVISION + TRANSFORMERS if s.small]


@functools.cache
def _single_output_class() -> type:
    import torch

    class _SingleOutput(torch.nn.Module):
        """A model returning one tensor: `key` of a dict or ModelOutput, else the first of a tuple.
        `ones_mask`: pass an all-ones attention mask made inside forward (without one, transformers
        5 probes the ids for packed sequences, which traces `aten::diff`); `kwargs` go to forward."""

        def __init__(self, module: torch.nn.Module, key: str | None = None, ones_mask: bool = False,
                     **kwargs: Any) -> None:
            super().__init__()
            self.inner, self.key, self.ones_mask, self.kwargs = module, key, ones_mask, kwargs

        def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
            kwargs = dict(self.kwargs)
            if self.ones_mask:
                kwargs["attention_mask"] = torch.ones_like(inputs[0])
            result = self.inner(*inputs, **kwargs)
            if self.key is not None and hasattr(result, "keys"):
                return result[self.key]
            return result[0] if isinstance(result, (tuple, list)) else result

    return _SingleOutput


def SingleOutput(module: "torch.nn.Module", key: str | None = None, ones_mask: bool = False,
                 **kwargs: Any) -> "torch.nn.Module":
    return _single_output_class()(module, key, ones_mask, **kwargs)


def _redraw_constant_inits(module: "torch.nn.Module") -> None:
    """Redraw what the library initialises to a constant (seeded): BatchNorm running statistics;
    parameters whose elements are all equal: zeros (biases; ViT's zero head) become small normal
    values (a matrix: scaled by its fan-in), anything else (norm scales of one, layer scales of
    1e-6) uniform in [0.5, 1.5]."""
    import torch

    g = _generator(1)
    with torch.no_grad():
        for m in module.modules():
            mean, var = getattr(m, "running_mean", None), getattr(m, "running_var", None)
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and mean is not None and var is not None:
                mean.copy_(0.1 * torch.randn(mean.shape, generator=g))
                var.copy_(0.5 + torch.rand(var.shape, generator=g))
        for _, p in module.named_parameters():
            if p.numel() < 2 or not bool((p == p.reshape(-1)[0]).all()):
                continue
            if float(p.reshape(-1)[0]) == 0:
                scale = p[0].numel() ** -0.5 if p.dim() > 1 else 0.02
                p.copy_(scale * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.5 + torch.rand(p.shape, generator=g))


def build(name: str) -> Built:
    """The model `name` (a key of MODELS) with its seeded weights, in eval mode, and its inputs."""
    import torch

    spec = MODELS[name]
    if spec.library == "transformers":
        compat.torchvision()  # transformers imports torchvision when it is installed
    torch.manual_seed(SEED)
    module, inputs = spec.build()
    _redraw_constant_inits(module)
    return Built(module.eval(), inputs)


def weights_digest(module: "torch.nn.Module") -> str:
    """A digest of the state dict: every export of a model must see the same weights."""
    import hashlib

    h = hashlib.sha256()
    for key, value in module.state_dict().items():
        h.update(key.encode())
        h.update(value.detach().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]
