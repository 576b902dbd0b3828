"""Torch models with flexible input shapes for the ML Program dynamic-shape tests, converted with
coremltools (seeded random weights; the torch modules are the oracles):

- a BERT-style encoder (transformers BertModel from a small BertConfig) whose `input_ids` and
  `attention_mask` are each a RangeDim(1, 512): two symbols the importer unifies;
- a Llama-style decoder (transformers LlamaConfig and modules) with its attention written out as
  Apple's stateful Llama example for coremltools does: float16 key/value caches registered as
  buffers (ct.StateType) and written in place at `begin = end - query length`, a RangeDim query
  length and a causal mask whose last axis is another RangeDim (`end`), iOS18;
- a small CNN on images of any height and width (RangeDim on H and W).
"""
import os

import numpy as np
import torch

F = torch.nn.functional
MAX_CONTEXT = 64  # the decoder's cache length


def ct():
    import coremltools

    return coremltools


def _save(ml, folder, name):
    path = os.path.join(str(folder), f"{name}.mlpackage")
    ml.save(path)
    return path


def _register_new_ones():
    """coremltools 9 has no converter for `Tensor.new_ones`, which transformers 5's mask helpers
    call (`q_idx.new_ones((), dtype=torch.bool)`); a fill (or a constant for a scalar) does it."""
    from coremltools.converters.mil import Builder as mb
    from coremltools.converters.mil.frontend.torch.ops import _get_inputs
    from coremltools.converters.mil.frontend.torch.torch_op_registry import register_torch_op

    def new_ones(context, node):
        shape = _get_inputs(context, node)[1]
        if isinstance(shape, list):
            shape = mb.concat(values=shape, axis=0)
        if shape.val is not None and len(shape.val) == 0:
            context.add(mb.const(val=np.bool_(True), name=node.name))
        else:
            context.add(mb.fill(shape=shape, value=1.0, name=node.name))

    register_torch_op(new_ones, override=True)


class Bert(torch.nn.Module):
    """BertModel's last hidden state and pooled output for (input_ids, attention_mask)."""

    def __init__(self):
        super().__init__()
        from transformers import BertConfig, BertModel

        torch.manual_seed(0)
        config = BertConfig(vocab_size=100, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                            intermediate_size=128, max_position_embeddings=512)
        self.bert = BertModel(config).eval()

    def forward(self, input_ids, attention_mask):
        out = self.bert(input_ids=input_ids, attention_mask=attention_mask)
        return out.last_hidden_state, out.pooler_output


def bert_package(folder):
    """(the .mlpackage, the torch module): lengths as RangeDim(1, 512), traced at length 16."""
    c = ct()
    _register_new_ones()
    model = Bert().eval()
    example = (torch.randint(0, 100, (1, 16)), torch.ones(1, 16, dtype=torch.int32))
    length = c.RangeDim(1, 512, default=16)
    ml = c.convert(torch.jit.trace(model, example), convert_to="mlprogram", minimum_deployment_target=c.target.iOS17,
                   compute_precision=c.precision.FLOAT32,
                   inputs=[c.TensorType(name="input_ids", shape=(1, length), dtype=np.int32),
                           c.TensorType(name="attention_mask", shape=(1, length), dtype=np.int32)],
                   outputs=[c.TensorType(name="hidden"), c.TensorType(name="pooled")])
    return _save(ml, folder, "bert"), model


class StatefulLlama(torch.nn.Module):
    """A Llama decoder whose attention reads and writes float16 key/value caches (buffers that
    coremltools turns into states): the new tokens' keys and values are written at
    [end - query length, end), attention reads the cache up to `end` (the causal mask's length)."""

    def __init__(self, kv_heads=2, max_context=MAX_CONTEXT):
        super().__init__()
        from transformers import LlamaConfig, LlamaForCausalLM

        torch.manual_seed(0)
        config = LlamaConfig(vocab_size=100, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=kv_heads, max_position_embeddings=max_context)
        self.llama = LlamaForCausalLM(config).eval()
        self.heads, self.kv_heads = config.num_attention_heads, config.num_key_value_heads
        self.head_dim = config.hidden_size // config.num_attention_heads
        shape = (config.num_hidden_layers, 1, self.kv_heads, max_context, self.head_dim)
        self.register_buffer("keyCache", torch.zeros(shape, dtype=torch.float16))
        self.register_buffer("valueCache", torch.zeros(shape, dtype=torch.float16))

    def forward(self, input_ids, causal_mask):
        from transformers.models.llama.modeling_llama import apply_rotary_pos_emb, repeat_kv

        new, end = input_ids.shape[-1], causal_mask.shape[-1]
        begin = end - new
        m = self.llama.model
        x = m.embed_tokens(input_ids)
        cos, sin = m.rotary_emb(x, torch.arange(begin, end).unsqueeze(0))
        for i, layer in enumerate(m.layers):
            a = layer.self_attn
            h = layer.input_layernorm(x)
            q = a.q_proj(h).view(1, new, self.heads, self.head_dim).transpose(1, 2)
            k = a.k_proj(h).view(1, new, self.kv_heads, self.head_dim).transpose(1, 2)
            v = a.v_proj(h).view(1, new, self.kv_heads, self.head_dim).transpose(1, 2)
            q, k = apply_rotary_pos_emb(q, k, cos, sin)
            self.keyCache[i, :, :, begin:end] = k.half()
            self.valueCache[i, :, :, begin:end] = v.half()
            keys = repeat_kv(self.keyCache[i, :, :, :end].float(), self.heads // self.kv_heads)
            values = repeat_kv(self.valueCache[i, :, :, :end].float(), self.heads // self.kv_heads)
            w = torch.matmul(q, keys.transpose(2, 3)) * a.scaling + causal_mask
            o = torch.matmul(torch.softmax(w, -1), values).transpose(1, 2).reshape(1, new, -1)
            x = x + a.o_proj(o)
            x = x + layer.mlp(layer.post_attention_layernorm(x))
        return self.llama.lm_head(m.norm(x))


def llama_package(folder, precision, kv_heads=2):
    """(the .mlpackage, the torch module) for iOS18 in `precision` ("fp32" or "fp16"), with
    `kv_heads` key/value heads for the 4 query heads (2: grouped-query attention, repeat_kv)."""
    c = ct()
    model = StatefulLlama(kv_heads).eval()
    example = (torch.zeros(1, 2, dtype=torch.int32), torch.zeros(1, 1, 2, 5))
    traced = torch.jit.trace(model, example)
    model.keyCache.zero_(), model.valueCache.zero_()  # tracing ran the model once
    new, end = c.RangeDim(1, MAX_CONTEXT, default=1), c.RangeDim(1, MAX_CONTEXT, default=1)
    cache = c.TensorType(shape=model.keyCache.shape, dtype=np.float16)
    ml = c.convert(traced, convert_to="mlprogram", minimum_deployment_target=c.target.iOS18,
                   compute_precision=c.precision.FLOAT32 if precision == "fp32" else c.precision.FLOAT16,
                   inputs=[c.TensorType(name="inputIds", shape=(1, new), dtype=np.int32),
                           c.TensorType(name="causalMask", shape=(1, 1, new, end), dtype=np.float32)],
                   outputs=[c.TensorType(name="logits")],
                   states=[c.StateType(wrapped_type=cache, name="keyCache"),
                           c.StateType(wrapped_type=cache, name="valueCache")])
    return _save(ml, folder, f"llama_{precision}_{kv_heads}"), model


def causal_mask(new, end):
    """[1, 1, new, end]: query i (at position end - new + i) sees positions up to its own."""
    mask = np.full((1, 1, new, end), -np.inf, np.float32)
    for i in range(new):
        mask[0, 0, i, :end - new + i + 1] = 0
    return mask


class CNN(torch.nn.Module):
    """Convolutions (one strided), batch norm, max pooling, a nearest 2x upsampling and a pooled
    classifier: every spatial size is an expression of the input's H and W."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.c1, self.bn = torch.nn.Conv2d(3, 8, 3, 1, 1), torch.nn.BatchNorm2d(8)
        self.c2, self.c3 = torch.nn.Conv2d(8, 16, 3, 2, 1), torch.nn.Conv2d(16, 8, 1)
        self.fc = torch.nn.Linear(8, 5)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-1, 1)
            self.bn.running_var.uniform_(0.5, 2)

    def forward(self, x):
        a = F.relu(self.bn(self.c1(x)))
        b = F.max_pool2d(F.relu(self.c2(a)), 2)
        y = F.interpolate(self.c3(b), scale_factor=2.0, mode="nearest")
        return y, self.fc(y.mean((2, 3)) + a.mean((2, 3)))


def cnn_package(folder, lo=8, hi=128):
    """(the .mlpackage, the torch module): H and W each a RangeDim(lo, hi)."""
    c = ct()
    model = CNN().eval()
    h, w = c.RangeDim(lo, hi, default=32), c.RangeDim(lo, hi, default=32)
    ml = c.convert(torch.jit.trace(model, torch.randn(1, 3, 32, 32)), convert_to="mlprogram",
                   minimum_deployment_target=c.target.iOS17, compute_precision=c.precision.FLOAT32,
                   inputs=[c.TensorType(name="x", shape=(1, 3, h, w))],
                   outputs=[c.TensorType(name="y"), c.TensorType(name="logits")])
    return _save(ml, folder, "cnn"), model
