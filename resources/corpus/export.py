#!/usr/bin/python3
"""Exports the corpus of real architectures: models written by others (torchvision's and
torch.nn's own constructors), traced with a loss and saved with a plain ``torch.jit.save``, as a
user of HAP Studio would save them. The files carry no ``hap/inputs.json``: the input shapes go on
the command line (``hap plan --input ...``), and ``corpus.json`` records them.

Usage:
  export.py --out DIR [--model NAME ...] [--subset ci] [--quiet]
  export.py --list

Writes ``DIR/<name>.pt`` for each model and ``DIR/corpus.json``:

  {"format": "hap-corpus", "version": 1,
   "models": [{"name": ..., "file": "<name>.pt", "source": "torchvision.models.resnet18(...)",
               "inputs": ["x=8x3x32x32:float32", "y=8:int64:0..10"], "ci": true,
               "parameters": N}, ...]}

``inputs`` are ``hap --input`` arguments (half-open ranges for integer inputs). Every model is
built with torch.manual_seed(0), put in training mode (dropout, batch-norm statistics and
stochastic depth active) and traced at its batch with check_trace=False. ``ci`` marks the small
subset that the default test run checks (tests/corpus); the rest is one command away
(scripts/corpus.sh).
"""

import argparse
import json
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torchvision import models as tvm
from torchvision.models import convnext, resnet, swin_transformer, vision_transformer, densenet

BATCH = 8
CLASSES = 10


class Classify(nn.Module):
    """An image classifier with its training loss: forward(x, y) = cross_entropy(model(x), y)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x, y):
        return F.cross_entropy(self.model(x), y)


def image(size=32):
    return [f"x={BATCH}x3x{size}x{size}:float32", f"y={BATCH}:int64:0..{CLASSES}"]


# --- torch.nn models: the layers are torch.nn's own; the wrappers only feed them and take a loss.

class EncoderClassifier(nn.Module):
    """Token classification with nn.TransformerEncoder (pre-norm layers, a padding mask)."""

    def __init__(self, vocab=64, d=32, heads=4, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        layer = nn.TransformerEncoderLayer(d, heads, dim_feedforward=64, dropout=0.1,
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d, vocab)

    def forward(self, tokens, targets):
        padding = tokens == 0
        h = self.encoder(self.embed(tokens), src_key_padding_mask=padding)
        return F.cross_entropy(self.head(h).flatten(0, 1), targets.flatten())


class Seq2Seq(nn.Module):
    """nn.Transformer encoder-decoder with a causal target mask and the source's padding mask (a
    target padding mask beside the causal one would leave a first position padded with nothing
    to attend to: NaN in any program)."""

    def __init__(self, vocab=64, d=32, heads=4, length=12):
        super().__init__()
        self.src_embed = nn.Embedding(vocab, d)
        self.tgt_embed = nn.Embedding(vocab, d)
        self.transformer = nn.Transformer(d, heads, num_encoder_layers=2, num_decoder_layers=2,
                                          dim_feedforward=64, dropout=0.1, batch_first=True)
        self.head = nn.Linear(d, vocab)
        self.register_buffer("causal", nn.Transformer.generate_square_subsequent_mask(length))

    def forward(self, src, tgt, labels):
        h = self.transformer(self.src_embed(src), self.tgt_embed(tgt), tgt_mask=self.causal,
                             src_key_padding_mask=src == 0, memory_key_padding_mask=src == 0)
        return F.cross_entropy(self.head(h).flatten(0, 1), labels.flatten(), ignore_index=0)


class AttentionBlock(nn.Module):
    """A block of our own around nn.MultiheadAttention: pre-norm attention and a GELU MLP."""

    def __init__(self, d=32, heads=4):
        super().__init__()
        self.norm1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, dropout=0.1, batch_first=True)
        self.norm2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Dropout(0.1), nn.Linear(4 * d, d))

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class AttentionRegressor(nn.Module):
    def __init__(self, d=32):
        super().__init__()
        self.blocks = nn.Sequential(AttentionBlock(d), AttentionBlock(d))
        self.out = nn.Linear(d, 1)

    def forward(self, x, target):
        return F.mse_loss(self.out(self.blocks(x)).squeeze(-1), target)


class LstmClassifier(nn.Module):
    """nn.LSTM over embedded tokens, classified from the last step."""

    def __init__(self, vocab=64, d=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.lstm = nn.LSTM(d, d, num_layers=2, batch_first=True)
        self.head = nn.Linear(d, CLASSES)

    def forward(self, tokens, y):
        h, _ = self.lstm(self.embed(tokens))
        return F.cross_entropy(self.head(h[:, -1]), y)


class SignalNet(nn.Module):
    """torch.nn's 1-d layers: Conv1d, GroupNorm, InstanceNorm1d, PReLU, SiLU, pooling."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv1d(4, 16, 5, padding=2), nn.GroupNorm(4, 16), nn.PReLU(),
            nn.Conv1d(16, 32, 3, stride=2, padding=1), nn.InstanceNorm1d(32, affine=True), nn.SiLU(),
            nn.MaxPool1d(2), nn.Conv1d(32, 32, 3, padding=1, groups=4), nn.BatchNorm1d(32), nn.ReLU(),
            nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Dropout(0.2), nn.Linear(32, CLASSES))

    def forward(self, x, y):
        return F.cross_entropy(self.features(x), y)


# name -> (constructor source text, factory, inputs, in the CI subset). The factories call the
# libraries' own constructors; where the stock size would make a slow test, the same class is
# built smaller through its own arguments, and `source` says so.
MODELS = {
    "resnet18": ("torchvision.models.resnet18(num_classes=10)",
                 lambda: Classify(tvm.resnet18(num_classes=CLASSES)), image(), True),
    "resnet50": ("torchvision.models.resnet50(num_classes=10)",
                 lambda: Classify(tvm.resnet50(num_classes=CLASSES)), image(), False),
    "resnext": ("torchvision.models.resnet.ResNet(Bottleneck, [1, 1, 1, 1], groups=8, width_per_group=4)",
                lambda: Classify(resnet.ResNet(resnet.Bottleneck, [1, 1, 1, 1], num_classes=CLASSES, groups=8,
                                               width_per_group=4)), image(), False),
    "wide_resnet": ("torchvision.models.resnet.ResNet(Bottleneck, [1, 1, 1, 1], width_per_group=128)",
                    lambda: Classify(resnet.ResNet(resnet.Bottleneck, [1, 1, 1, 1], num_classes=CLASSES,
                                                   width_per_group=128)), image(), False),
    "mobilenet_v2": ("torchvision.models.mobilenet_v2(num_classes=10)",
                     lambda: Classify(tvm.mobilenet_v2(num_classes=CLASSES)), image(), True),
    "mobilenet_v3_small": ("torchvision.models.mobilenet_v3_small(num_classes=10)",
                           lambda: Classify(tvm.mobilenet_v3_small(num_classes=CLASSES)), image(), False),
    "mobilenet_v3_large": ("torchvision.models.mobilenet_v3_large(num_classes=10)",
                           lambda: Classify(tvm.mobilenet_v3_large(num_classes=CLASSES)), image(), False),
    "efficientnet_b0": ("torchvision.models.efficientnet_b0(num_classes=10)",
                        lambda: Classify(tvm.efficientnet_b0(num_classes=CLASSES)), image(), False),
    "convnext": ("torchvision.models.convnext.ConvNeXt([CNBlockConfig(16, 32, 1), CNBlockConfig(32, 64, 1), "
                 "CNBlockConfig(64, None, 1)], stochastic_depth_prob=0.2)",
                 lambda: Classify(convnext.ConvNeXt([convnext.CNBlockConfig(16, 32, 1),
                                                     convnext.CNBlockConfig(32, 64, 1),
                                                     convnext.CNBlockConfig(64, None, 1)],
                                                    stochastic_depth_prob=0.2, num_classes=CLASSES)),
                 image(), True),
    "swin": ("torchvision.models.swin_transformer.SwinTransformer(patch_size=[4, 4], embed_dim=16, "
             "depths=[2, 2], num_heads=[2, 4], window_size=[4, 4], stochastic_depth_prob=0.2)",
             lambda: Classify(swin_transformer.SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2],
                                                               num_heads=[2, 4], window_size=[4, 4],
                                                               stochastic_depth_prob=0.2,
                                                               num_classes=CLASSES)), image(), True),
    "vit": ("torchvision.models.vision_transformer.VisionTransformer(image_size=32, patch_size=8, num_layers=2, "
            "num_heads=4, hidden_dim=32, mlp_dim=64, dropout=0.1)",
            lambda: Classify(vision_transformer.VisionTransformer(image_size=32, patch_size=8, num_layers=2,
                                                                  num_heads=4, hidden_dim=32, mlp_dim=64,
                                                                  dropout=0.1, num_classes=CLASSES)),
            image(), True),
    "densenet121": ("torchvision.models.densenet121(num_classes=10)",
                    lambda: Classify(tvm.densenet121(num_classes=CLASSES)), image(), False),
    "densenet_small": ("torchvision.models.densenet.DenseNet(growth_rate=8, block_config=(2, 2), "
                       "num_init_features=16)",
                       lambda: Classify(densenet.DenseNet(growth_rate=8, block_config=(2, 2), num_init_features=16,
                                                          num_classes=CLASSES)), image(), True),
    "googlenet": ("torchvision.models.googlenet(num_classes=10, aux_logits=False, init_weights=True)",
                  lambda: Classify(tvm.googlenet(num_classes=CLASSES, aux_logits=False, init_weights=True)),
                  image(), False),
    "shufflenet_v2": ("torchvision.models.shufflenet_v2_x0_5(num_classes=10)",
                      lambda: Classify(tvm.shufflenet_v2_x0_5(num_classes=CLASSES)), image(), False),
    "squeezenet1_1": ("torchvision.models.squeezenet1_1(num_classes=10)",
                      lambda: Classify(tvm.squeezenet1_1(num_classes=CLASSES)), image(64), False),
    "regnet_y_400mf": ("torchvision.models.regnet_y_400mf(num_classes=10)",
                       lambda: Classify(tvm.regnet_y_400mf(num_classes=CLASSES)), image(), False),
    "mnasnet0_5": ("torchvision.models.mnasnet0_5(num_classes=10)",
                   lambda: Classify(tvm.mnasnet0_5(num_classes=CLASSES)), image(), False),
    "alexnet": ("torchvision.models.alexnet(num_classes=10)",
                lambda: Classify(tvm.alexnet(num_classes=CLASSES)), image(64), False),
    "vgg11": ("torchvision.models.vgg11(num_classes=10)",
              lambda: Classify(tvm.vgg11(num_classes=CLASSES)), image(), False),
    "transformer_encoder": ("torch.nn.TransformerEncoder(TransformerEncoderLayer(32, 4, 64, norm_first=True), 2)",
                            lambda: EncoderClassifier(),
                            [f"tokens={BATCH}x12:int64:0..64", f"targets={BATCH}x12:int64:0..64"], True),
    "transformer": ("torch.nn.Transformer(32, 4, 2, 2, 64) with a causal mask and padding masks",
                    lambda: Seq2Seq(),
                    [f"src={BATCH}x12:int64:0..64", f"tgt={BATCH}x12:int64:0..64",
                     f"labels={BATCH}x12:int64:0..64"], False),
    "multihead_attention": ("torch.nn.MultiheadAttention(32, 4) in a pre-norm block of our own",
                            lambda: AttentionRegressor(),
                            [f"x={BATCH}x12x32:float32", f"target={BATCH}x12:float32"], True),
    "lstm": ("torch.nn.LSTM(32, 32, num_layers=2) over torch.nn.Embedding",
             lambda: LstmClassifier(), [f"tokens={BATCH}x12:int64:0..64", f"y={BATCH}:int64:0..{CLASSES}"], False),
    "conv1d": ("torch.nn Conv1d, GroupNorm, InstanceNorm1d, BatchNorm1d, PReLU, SiLU, pooling",
               lambda: SignalNet(), [f"x={BATCH}x4x64:float32", f"y={BATCH}:int64:0..{CLASSES}"], False),
}


def example(arg):
    """A random tensor for a ``--input`` argument NAME=DIMxDIM:DTYPE[:LOW..HIGH]."""
    _, spec = arg.split("=", 1)
    parts = spec.split(":")
    shape = [int(d) for d in parts[0].split("x")]
    dtype = getattr(torch, parts[1])
    if len(parts) > 2:
        low, high = (int(v) for v in parts[2].split(".."))
        return torch.randint(low, high, shape, dtype=dtype)
    return torch.randn(shape, dtype=dtype)


def export(name, out, quiet):
    source, factory, inputs, ci = MODELS[name]
    torch.manual_seed(0)
    model = factory()
    model.train()
    args = tuple(example(a) for a in inputs)
    start = time.time()
    traced = torch.jit.trace(model, args, check_trace=False)
    path = os.path.join(out, f"{name}.pt")
    tmp = path + ".tmp"
    torch.jit.save(traced, tmp)
    os.replace(tmp, path)
    parameters = sum(p.numel() for p in model.parameters())
    if not quiet:
        print(f"{name:22s} {parameters / 1e6:7.2f}M parameters  {time.time() - start:5.1f} s  {path}")
    return {"name": name, "file": f"{name}.pt", "source": source, "inputs": inputs, "ci": ci,
            "parameters": parameters}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", help="output folder")
    parser.add_argument("--model", action="append", default=[], help="export only this model (repeatable)")
    parser.add_argument("--subset", choices=["ci"], help="export only the CI subset")
    parser.add_argument("--list", action="store_true", help="list the models")
    parser.add_argument("--quiet", action="store_true")
    a = parser.parse_args()
    if a.list:
        for name, (source, _, inputs, ci) in MODELS.items():
            print(f"{name:22s} {'ci ' if ci else '   '} {source}")
        return
    if not a.out:
        parser.error("--out is required")
    unknown = [m for m in a.model if m not in MODELS]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; see --list")
    names = a.model or [n for n, m in MODELS.items() if a.subset != "ci" or m[3]]
    os.makedirs(a.out, exist_ok=True)
    torch.set_num_threads(1)
    entries = [export(n, a.out, a.quiet) for n in names]
    manifest = {"format": "hap-corpus", "version": 1, "torch": torch.__version__,
                "torchvision": torchvision.__version__, "models": entries}
    with open(os.path.join(a.out, "corpus.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    sys.exit(main())
