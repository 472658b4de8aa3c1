"""HAP Studio model zoo: single-device training programs for the planner.

Contract shared by every model here:

* ``forward(*inputs)`` returns the training loss as a 0-dim float tensor.
* The module traces cleanly with ``torch.jit.trace`` in training mode (dropout
  active) and the traced graph is batch-size agnostic: the batch dimension is
  never baked into a constant (reshapes use ``-1`` for it, or ``x.size(0)``),
  while sequence lengths, image sizes and widths are constructor constants.
* Only common aten ops are used (linear, matmul, einsum, conv2d, relu/gelu,
  layer_norm, softmax, dropout, embedding, cross_entropy / log_softmax +
  nll_loss, view-like ops, pooling, topk, one_hot, cumsum, comparisons,
  sum/mean), and attention is written out by hand so the graph shows plain ops.
* Every size is a constructor argument; ``PRESETS`` names the "tiny" (for
  tests) and "default" (the paper's sizes) configurations.
* ``input_spec(batch)`` describes the forward arguments in the format of the
  ``hap/inputs.json`` spec (see export.py): name, shape, dtype and, for integer
  inputs, the half-open range [low, high) of valid values.
"""

import inspect
import math

import torch
import torch.nn.functional as F
from torch import nn


class ConfigError(ValueError):
    """An invalid model configuration (unknown argument, inconsistent sizes)."""


def _int_input(name, shape, high):
    return {"name": name, "shape": list(shape), "dtype": "int64",
            "low": 0, "high": high}


def _float_input(name, shape):
    return {"name": name, "shape": list(shape), "dtype": "float32"}


class SelfAttention(nn.Module):
    """Multi-head self-attention over [B, S, E] with separate q/k/v projections.

    ``mask``, when given, is an additive [S, S] tensor (0 or -inf) applied to
    the attention scores before the softmax.
    """

    def __init__(self, embed, heads, seq_len, dropout):
        super().__init__()
        if embed % heads:
            raise ConfigError(f"embed {embed} is not a multiple of heads {heads}")
        self.heads = heads
        self.head_dim = embed // heads
        self.embed = embed
        self.seq_len = seq_len
        self.scale = 1.0 / math.sqrt(self.head_dim)
        self.q = nn.Linear(embed, embed)
        self.k = nn.Linear(embed, embed)
        self.v = nn.Linear(embed, embed)
        self.out = nn.Linear(embed, embed)
        self.dropout = nn.Dropout(dropout)

    def _split_heads(self, t):
        # [B, S, E] -> [B, h, S, d]
        return t.view(-1, self.seq_len, self.heads, self.head_dim).transpose(1, 2)

    def forward(self, x, mask=None):
        q = self._split_heads(self.q(x))
        k = self._split_heads(self.k(x))
        v = self._split_heads(self.v(x))
        scores = torch.matmul(q, k.transpose(-2, -1)) * self.scale
        if mask is not None:
            scores = scores + mask
        probs = self.dropout(torch.softmax(scores, dim=-1))
        context = torch.matmul(probs, v).transpose(1, 2)
        return self.out(context.reshape(-1, self.seq_len, self.embed))


class FeedForward(nn.Module):
    """Dense position-wise feed-forward: Linear - GELU - Linear."""

    def __init__(self, embed, hidden):
        super().__init__()
        self.fc1 = nn.Linear(embed, hidden)
        self.fc2 = nn.Linear(hidden, embed)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class Top2MoE(nn.Module):
    """GShard-style top-2 mixture-of-experts feed-forward over [B, S, E].

    Capacity is per sample: each expert takes at most ``capacity`` tokens of
    one sequence, ``capacity = ceil(capacity_factor * S / n_experts)``. First
    choices are placed before second choices; tokens beyond capacity are
    dropped (their contribution is zero). No gate renormalisation, no
    auxiliary loss. Experts are two bias-free matrices applied with einsum.
    """

    def __init__(self, embed, hidden, n_experts, seq_len, capacity_factor):
        super().__init__()
        self.n_experts = n_experts
        self.capacity = int(math.ceil(capacity_factor * seq_len / n_experts))
        self.gate = nn.Parameter(torch.empty(embed, n_experts))
        self.w1 = nn.Parameter(torch.empty(n_experts, embed, hidden))
        self.w2 = nn.Parameter(torch.empty(n_experts, hidden, embed))
        nn.init.normal_(self.gate, std=embed ** -0.5)
        nn.init.normal_(self.w1, std=embed ** -0.5)
        nn.init.normal_(self.w2, std=hidden ** -0.5)

    def _gating(self, x):
        """Returns (dispatch, combine), both [B, S, n_experts, capacity]."""
        probs = torch.softmax(torch.matmul(x, self.gate), dim=-1)   # [B,S,e]
        gates, experts = torch.topk(probs, 2, dim=-1)                # [B,S,2]
        mask1 = F.one_hot(experts[:, :, 0], self.n_experts)          # [B,S,e]
        mask2 = F.one_hot(experts[:, :, 1], self.n_experts)
        # Slot of each token in its expert's buffer: running count along the
        # sequence; second choices queue behind all first choices.
        pos1 = torch.cumsum(mask1, dim=1) - 1
        pos2 = torch.cumsum(mask2, dim=1) - 1 + mask1.sum(dim=1, keepdim=True)
        slot1 = (pos1 * mask1).sum(dim=-1)                           # [B,S]
        slot2 = (pos2 * mask2).sum(dim=-1)
        keep1 = (slot1 < self.capacity).to(x.dtype)
        keep2 = (slot2 < self.capacity).to(x.dtype)
        gate1 = gates[:, :, 0] * keep1
        gate2 = gates[:, :, 1] * keep2
        onehot_slot1 = F.one_hot(slot1.clamp(max=self.capacity - 1), self.capacity)
        onehot_slot2 = F.one_hot(slot2.clamp(max=self.capacity - 1), self.capacity)
        combine = (
            gate1.unsqueeze(-1).unsqueeze(-1)
            * mask1.to(x.dtype).unsqueeze(-1)
            * onehot_slot1.to(x.dtype).unsqueeze(2)
            + gate2.unsqueeze(-1).unsqueeze(-1)
            * mask2.to(x.dtype).unsqueeze(-1)
            * onehot_slot2.to(x.dtype).unsqueeze(2))
        dispatch = (combine > 0).to(x.dtype)
        return dispatch, combine

    def forward(self, x):
        dispatch, combine = self._gating(x)
        expert_in = torch.einsum("bsd,bsec->becd", x, dispatch)
        hidden = torch.relu(torch.einsum("edh,becd->bech", self.w1, expert_in))
        expert_out = torch.einsum("ehd,bech->becd", self.w2, hidden)
        return torch.einsum("becd,bsec->bsd", expert_out, combine)


class PostNormEncoderLayer(nn.Module):
    """BERT encoder layer: x = LN(x + attn(x)); x = LN(x + drop(ffn(x)))."""

    def __init__(self, embed, heads, seq_len, dropout, ffn):
        super().__init__()
        self.attn = SelfAttention(embed, heads, seq_len, dropout)
        self.norm1 = nn.LayerNorm(embed)
        self.ffn = ffn
        self.norm2 = nn.LayerNorm(embed)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def forward(self, x, mask):
        x = self.norm1(x + self.dropout1(self.attn(x, mask)))
        return self.norm2(x + self.dropout2(self.ffn(x)))


class PreNormEncoderLayer(nn.Module):
    """ViT encoder layer: x = x + attn(LN(x)); x = x + drop(ffn(LN(x)))."""

    def __init__(self, embed, heads, seq_len, dropout, hidden):
        super().__init__()
        self.norm1 = nn.LayerNorm(embed)
        self.attn = SelfAttention(embed, heads, seq_len, dropout)
        self.norm2 = nn.LayerNorm(embed)
        self.ffn = FeedForward(embed, hidden)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def forward(self, x):
        x = x + self.dropout1(self.attn(self.norm1(x)))
        return x + self.dropout2(self.ffn(self.norm2(x)))


class MLP(nn.Module):
    """Classifier: ``layers`` x (Linear + ReLU), then Linear to ``classes``.

    Loss: log_softmax + nll_loss (mean). Inputs: x float32 [B, features],
    y int64 [B] in [0, classes).
    """

    def __init__(self, features=1024, hidden=4096, layers=4, classes=10):
        super().__init__()
        widths = [features] + [hidden] * layers
        self.hidden = nn.ModuleList(
            nn.Linear(a, b) for a, b in zip(widths[:-1], widths[1:]))
        self.head = nn.Linear(widths[-1], classes)
        self.features = features
        self.classes = classes

    def forward(self, x, y):
        for layer in self.hidden:
            x = torch.relu(layer(x))
        return F.nll_loss(F.log_softmax(self.head(x), dim=-1), y)

    def input_spec(self, batch):
        return [_float_input("x", [batch, self.features]),
                _int_input("y", [batch], self.classes)]


class BertLM(nn.Module):
    """BERT-Base-style causal language model (post-norm encoder stack).

    Token + learned position embeddings, embedding LayerNorm and dropout;
    ``layers`` encoder layers with a causal additive mask; untied LM head;
    cross-entropy over all positions. With ``moe_experts`` > 0, every second
    layer (1, 3, 5, ...) uses a top-2 MoE feed-forward instead of the dense
    one (see BertMoE). Inputs: x, y int64 [B, seq_len] in [0, vocab).
    """

    def __init__(self, vocab=10240, seq_len=128, embed=768, heads=12,
                 layers=12, hidden=3072, dropout=0.1, moe_experts=0,
                 moe_hidden=2048, capacity_factor=2.0):
        super().__init__()
        self.vocab = vocab
        self.seq_len = seq_len
        self.tokens = nn.Embedding(vocab, embed)
        self.positions = nn.Embedding(seq_len, embed)
        self.norm = nn.LayerNorm(embed)
        self.dropout = nn.Dropout(dropout)
        blocks = []
        for i in range(layers):
            if moe_experts and i % 2 == 1:
                ffn = Top2MoE(embed, moe_hidden, moe_experts, seq_len,
                              capacity_factor)
            else:
                ffn = FeedForward(embed, hidden)
            blocks.append(PostNormEncoderLayer(embed, heads, seq_len,
                                               dropout, ffn))
        self.layers = nn.ModuleList(blocks)
        self.head = nn.Linear(embed, vocab)
        causal = torch.full((seq_len, seq_len), float("-inf")).triu(1)
        self.register_buffer("causal_mask", causal)

    def forward(self, x, y):
        pos = torch.arange(self.seq_len)  # traced as a constant [S]
        h = self.dropout(self.norm(self.tokens(x) + self.positions(pos)))
        for layer in self.layers:
            h = layer(h, self.causal_mask)
        logits = self.head(h)
        return F.cross_entropy(logits.reshape(-1, self.vocab), y.reshape(-1))

    def input_spec(self, batch):
        shape = [batch, self.seq_len]
        return [_int_input("x", shape, self.vocab),
                _int_input("y", shape, self.vocab)]


class Bert(BertLM):
    """Dense BERT-Base (all layers have the dense FFN)."""

    def __init__(self, vocab=10240, seq_len=128, embed=768, heads=12,
                 layers=12, hidden=3072, dropout=0.1):
        super().__init__(vocab, seq_len, embed, heads, layers, hidden, dropout)


class BertMoE(BertLM):
    """BERT with top-2 MoE feed-forwards in layers 1, 3, 5, ...

    The paper scales experts with the cluster: n_experts =
    experts_per_device * devices. Parameter count =
    base + n_experts * (layers // 2) * (2 * embed * moe_hidden + embed),
    where the last ``embed`` is the expert's column of the gate.
    """

    def __init__(self, vocab=16384, seq_len=128, embed=768, heads=12,
                 layers=12, hidden=3072, moe_hidden=2048, devices=8,
                 experts_per_device=2, capacity_factor=2.0, dropout=0.1):
        super().__init__(vocab, seq_len, embed, heads, layers, hidden,
                         dropout, moe_experts=experts_per_device * devices,
                         moe_hidden=moe_hidden,
                         capacity_factor=capacity_factor)


class ViT(nn.Module):
    """Vision transformer classifier (pre-norm encoder, CLS token).

    Conv patch embedding -> [B, P, E]; learned CLS token prepended; learned
    position embedding; dropout; ``layers`` pre-norm encoder layers (no mask);
    final LayerNorm; classifier on the CLS position; cross-entropy.
    Inputs: x float32 [B, 3, image_size, image_size], y int64 [B] in
    [0, classes).
    """

    def __init__(self, image_size=32, patch=4, embed=768, heads=12, layers=8,
                 hidden=3072, classes=10, dropout=0.1):
        super().__init__()
        if image_size % patch:
            raise ConfigError(f"image_size {image_size} is not a multiple of "
                              f"patch {patch}")
        self.image_size = image_size
        self.classes = classes
        seq_len = (image_size // patch) ** 2 + 1
        self.patch_embed = nn.Conv2d(3, embed, patch, stride=patch)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed))
        self.pos_embed = nn.Parameter(torch.empty(1, seq_len, embed))
        nn.init.normal_(self.pos_embed, std=0.02)
        self.dropout = nn.Dropout(dropout)
        self.layers = nn.ModuleList(
            PreNormEncoderLayer(embed, heads, seq_len, dropout, hidden)
            for _ in range(layers))
        self.norm = nn.LayerNorm(embed)
        self.head = nn.Linear(embed, classes)

    def forward(self, x, y):
        h = self.patch_embed(x).flatten(2).transpose(1, 2)           # [B,P,E]
        cls = self.cls_token.expand(x.size(0), -1, -1)
        h = torch.cat([cls, h], dim=1) + self.pos_embed
        h = self.dropout(h)
        for layer in self.layers:
            h = layer(h)
        logits = self.head(self.norm(h)[:, 0])
        return F.cross_entropy(logits, y)

    def input_spec(self, batch):
        s = self.image_size
        return [_float_input("x", [batch, 3, s, s]),
                _int_input("y", [batch], self.classes)]


class VGG19(nn.Module):
    """VGG19 without batch norm, for small (CIFAR) images.

    Channel widths are ``width`` x [1,1,M,2,2,M,4x4,M,8x4,M,8x4,M] (M = 2x2
    max-pool); 3x3 convs with padding 1 and in-place ReLU; adaptive average
    pool to ``pool`` x ``pool``; classifier Linear-ReLU-Dropout-Linear-ReLU-
    Dropout-Linear with hidden width ``classifier``; cross-entropy.
    Inputs: x float32 [B, 3, image_size, image_size], y int64 [B] in
    [0, classes).
    """

    STAGES = [(1, 2), (2, 2), (4, 4), (8, 4), (8, 4)]  # (width factor, convs)

    def __init__(self, width=64, classifier=4096, pool=7, image_size=32,
                 classes=10, dropout=0.5):
        super().__init__()
        self.image_size = image_size
        self.classes = classes
        layers = []
        channels = 3
        for factor, convs in self.STAGES:
            for _ in range(convs):
                layers.append(nn.Conv2d(channels, width * factor, 3, padding=1))
                layers.append(nn.ReLU(inplace=True))
                channels = width * factor
            layers.append(nn.MaxPool2d(2, 2))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d((pool, pool))
        self.classifier = nn.Sequential(
            nn.Linear(channels * pool * pool, classifier),
            nn.ReLU(inplace=True),
            nn.Dropout(dropout),
            nn.Linear(classifier, classifier),
            nn.ReLU(inplace=True),
            nn.Dropout(dropout),
            nn.Linear(classifier, classes))

    def forward(self, x, y):
        h = self.avgpool(self.features(x)).flatten(1)
        return F.cross_entropy(self.classifier(h), y)

    def input_spec(self, batch):
        s = self.image_size
        return [_float_input("x", [batch, 3, s, s]),
                _int_input("y", [batch], self.classes)]


# Registry name -> model class.
MODELS = {
    "mlp": MLP,
    "bert": Bert,
    "vit": ViT,
    "vgg19": VGG19,
    "bert_moe": BertMoE,
}

# Registry name -> preset name -> {"batch": declared batch size,
# "config": constructor arguments overriding the class defaults}.
# "default" presets are the paper's sizes (see README.md for parameter counts).
PRESETS = {
    "mlp": {
        "tiny": {"batch": 4, "config": {"features": 16, "hidden": 32,
                                        "layers": 2, "classes": 4}},
        "default": {"batch": 256, "config": {}},
    },
    "bert": {
        "tiny": {"batch": 4, "config": {"vocab": 128, "seq_len": 16,
                                        "embed": 32, "heads": 2, "layers": 2,
                                        "hidden": 64}},
        "default": {"batch": 64, "config": {}},
    },
    "vit": {
        "tiny": {"batch": 4, "config": {"image_size": 16, "embed": 32,
                                        "heads": 2, "layers": 2,
                                        "hidden": 64}},
        "default": {"batch": 256, "config": {}},
    },
    "vgg19": {
        "tiny": {"batch": 4, "config": {"width": 4, "classifier": 32,
                                        "pool": 2}},
        "default": {"batch": 256, "config": {}},
    },
    "bert_moe": {
        "tiny": {"batch": 4, "config": {"vocab": 128, "seq_len": 16,
                                        "embed": 32, "heads": 2, "layers": 2,
                                        "hidden": 64, "moe_hidden": 48,
                                        "devices": 2}},
        "default": {"batch": 64, "config": {}},
    },
}


def build(name, preset, overrides=None):
    """Returns (model, config, batch) for a registry name and preset.

    ``config`` is the full constructor-argument dict (class defaults, then the
    preset, then ``overrides``); ``overrides`` may also set ``batch``.
    """
    cls = MODELS[name]
    entry = PRESETS[name][preset]
    config = {k: p.default
              for k, p in inspect.signature(cls.__init__).parameters.items()
              if k != "self"}
    config.update(entry["config"])
    batch = entry["batch"]
    for key, value in (overrides or {}).items():
        if key == "batch":
            batch = int(value)
        elif key in config:
            config[key] = value
        else:
            raise ConfigError(f"model {name!r} has no parameter {key!r} "
                              f"(known: batch, {', '.join(config)})")
    return cls(**config), config, batch
