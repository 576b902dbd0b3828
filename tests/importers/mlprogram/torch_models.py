"""Realistic torch models for the ML Program tests, written out here (torchvision is not imported:
it may fail against the newest torch): ResNet-50, MobileNetV2, a BERT-style encoder with an
attention mask and a GPT-style decoder with a causal mask. Random weights; batch-norm statistics
are randomized so that folding them is exercised."""
import torch

F = torch.nn.functional


def conv_bn(cin, cout, k, stride=1, groups=1, act=torch.nn.ReLU):
    layers = [torch.nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), torch.nn.BatchNorm2d(cout)]
    return torch.nn.Sequential(*layers, act()) if act else torch.nn.Sequential(*layers)


class Bottleneck(torch.nn.Module):
    def __init__(self, cin, width, stride):
        super().__init__()
        cout = width * 4
        self.body = torch.nn.Sequential(conv_bn(cin, width, 1), conv_bn(width, width, 3, stride),
                                        conv_bn(width, cout, 1, act=None))
        self.short = conv_bn(cin, cout, 1, stride, act=None) if stride > 1 or cin != cout else torch.nn.Identity()

    def forward(self, x):
        return torch.relu(self.body(x) + self.short(x))


class ResNet50(torch.nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        layers, cin = [conv_bn(3, 64, 7, 2), torch.nn.MaxPool2d(3, 2, 1)], 64
        for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            for i in range(blocks):
                layers.append(Bottleneck(cin, width, stride if i == 0 else 1))
                cin = width * 4
        self.features = torch.nn.Sequential(*layers)
        self.fc = torch.nn.Linear(cin, classes)

    def forward(self, x):
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


class InvertedResidual(torch.nn.Module):
    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hidden = cin * expand
        layers = [conv_bn(cin, hidden, 1, act=torch.nn.ReLU6)] if expand != 1 else []
        layers += [conv_bn(hidden, hidden, 3, stride, groups=hidden, act=torch.nn.ReLU6),
                   conv_bn(hidden, cout, 1, act=None)]
        self.body = torch.nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


class MobileNetV2(torch.nn.Module):
    SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                (6, 320, 1, 1))

    def __init__(self, classes=1000):
        super().__init__()
        layers, cin = [conv_bn(3, 32, 3, 2, act=torch.nn.ReLU6)], 32
        for expand, cout, repeats, stride in self.SETTINGS:
            for i in range(repeats):
                layers.append(InvertedResidual(cin, cout, stride if i == 0 else 1, expand))
                cin = cout
        layers.append(conv_bn(cin, 1280, 1, act=torch.nn.ReLU6))
        self.features = torch.nn.Sequential(*layers)
        self.classifier = torch.nn.Sequential(torch.nn.Dropout(0.2), torch.nn.Linear(1280, classes))

    def forward(self, x):
        return self.classifier(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


class SelfAttention(torch.nn.Module):
    """Multi-head attention with an additive mask [B, 1, T|1, T]; shapes are Python constants."""

    def __init__(self, hidden, heads, seq):
        super().__init__()
        self.hidden, self.heads, self.seq = hidden, heads, seq
        self.q, self.k, self.v = (torch.nn.Linear(hidden, hidden) for _ in range(3))
        self.out = torch.nn.Linear(hidden, hidden)

    def split(self, x):
        return x.reshape(-1, self.seq, self.heads, self.hidden // self.heads).transpose(1, 2)

    def forward(self, x, mask):
        q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
        scores = q @ k.transpose(-1, -2) * (self.hidden // self.heads) ** -0.5 + mask
        y = torch.softmax(scores, dim=-1) @ v
        return self.out(y.transpose(1, 2).reshape(-1, self.seq, self.hidden))


class BertLayer(torch.nn.Module):
    def __init__(self, hidden, heads, seq):
        super().__init__()
        self.attn = SelfAttention(hidden, heads, seq)
        self.ln1, self.ln2 = torch.nn.LayerNorm(hidden), torch.nn.LayerNorm(hidden)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(hidden, 4 * hidden), torch.nn.GELU(),
                                       torch.nn.Linear(4 * hidden, hidden))

    def forward(self, x, mask):
        x = self.ln1(x + self.attn(x, mask))
        return self.ln2(x + self.mlp(x))


class BertEncoder(torch.nn.Module):
    """BERT-style: word, position and token-type embeddings, post-norm layers, a padding mask
    (1 = token, 0 = padding) turned into an additive -10000 mask, and a tanh pooler."""

    def __init__(self, vocab=1000, hidden=256, heads=4, layers=2, seq=64):
        super().__init__()
        self.words, self.positions = torch.nn.Embedding(vocab, hidden), torch.nn.Embedding(seq, hidden)
        self.types = torch.nn.Embedding(2, hidden)
        self.ln = torch.nn.LayerNorm(hidden)
        self.layers = torch.nn.ModuleList(BertLayer(hidden, heads, seq) for _ in range(layers))
        self.pooler = torch.nn.Linear(hidden, hidden)
        self.register_buffer("position_ids", torch.arange(seq))

    def forward(self, ids, attention_mask):
        x = self.ln(self.words(ids) + self.positions(self.position_ids) + self.types(torch.zeros_like(ids)))
        mask = (1.0 - attention_mask[:, None, None, :].float()) * -10000.0
        for layer in self.layers:
            x = layer(x, mask)
        return x, torch.tanh(self.pooler(x[:, 0]))


class GptBlock(torch.nn.Module):
    def __init__(self, hidden, heads, seq):
        super().__init__()
        self.attn = SelfAttention(hidden, heads, seq)
        self.ln1, self.ln2 = torch.nn.LayerNorm(hidden), torch.nn.LayerNorm(hidden)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(hidden, 4 * hidden), torch.nn.GELU(approximate="tanh"),
                                       torch.nn.Linear(4 * hidden, hidden))

    def forward(self, x, mask):
        x = x + self.attn(self.ln1(x), mask)
        return x + self.mlp(self.ln2(x))


class GptDecoder(torch.nn.Module):
    """GPT-style: pre-norm blocks, a causal mask, a final layer norm and an LM head tied to the
    token embedding; logits for every position."""

    def __init__(self, vocab=512, hidden=128, heads=4, layers=2, seq=32):
        super().__init__()
        self.tokens, self.positions = torch.nn.Embedding(vocab, hidden), torch.nn.Embedding(seq, hidden)
        self.blocks = torch.nn.ModuleList(GptBlock(hidden, heads, seq) for _ in range(layers))
        self.ln = torch.nn.LayerNorm(hidden)
        causal = torch.full((seq, seq), float("-inf")).triu(1)
        self.register_buffer("mask", causal[None, None])
        self.register_buffer("position_ids", torch.arange(seq))

    def forward(self, ids):
        x = self.tokens(ids) + self.positions(self.position_ids)
        for block in self.blocks:
            x = block(x, self.mask)
        return self.ln(x) @ self.tokens.weight.T


def randomize_bn(module):
    """Non-trivial batch-norm statistics and affine parameters (fresh ones are the identity)."""
    for m in module.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.2, 0.2)
            m.running_var.uniform_(0.5, 1.5)
            m.weight.data.uniform_(0.5, 1.0)
            m.bias.data.uniform_(-0.1, 0.1)
    return module
