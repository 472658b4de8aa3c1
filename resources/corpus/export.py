#!/usr/bin/python3
"""Exports the corpus of real architectures: models written by others (torchvision's, torchaudio's
and torch.nn's own constructors, and copies of Meta's Llama and Karpathy's nanoGPT model files in
llama.py and nanogpt.py), traced with a loss (one is scripted) and saved with a plain
``torch.jit.save``, as a user of HAP Studio would save them. The files carry no ``hap/inputs.json``: the input shapes go on
the command line (``hap plan --input ...``), and ``corpus.json`` records them.

Usage:
  export.py --out DIR [--model NAME ...] [--subset ci] [--quiet]
  export.py --list

Writes ``DIR/<name>.pt`` for each model and ``DIR/corpus.json``:

  {"format": "hap-corpus", "version": 1,
   "models": [{"name": ..., "file": "<name>.pt", "source": "torchvision.models.resnet18(...)",
               "inputs": ["x=8x3x32x32:float32", "y=8:int64:0..10"], "ci": true,
               "family": "resnet", "saved": "traced", "parameters": N}, ...],
   "families": [every family of the corpus, whichever models were exported]}

``inputs`` are ``hap --input`` arguments (half-open ranges for integer inputs). Every model is
built with torch.manual_seed(0), put in training mode (dropout, batch-norm statistics and
stochastic depth active) and traced at its batch with check_trace=False (``saved: scripted``: by
torch.jit.script instead). ``ci`` marks the small subset that the default test run checks
(tests/corpus), at least one model of every ``family``; the rest is one command away
(scripts/corpus.sh).
"""

import argparse
import json
import os
import sys
import time

import contextlib
import io

import numpy
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchaudio
import torchvision
from torchvision import models as tvm
from torchvision.models import convnext, resnet, swin_transformer, vision_transformer, densenet
from torchvision.models import segmentation as tvseg
from torchvision.models import video as tvvideo

import llama
import llama_hf
import nanogpt

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


# --- torchaudio models: torchaudio's own definitions, reduced through their constructors'
# arguments; the wrappers feed them and take the loss their authors train them with.

AUDIO_BATCH = 4


class CtcLoss(nn.Module):
    """CTC training of an acoustic model that emits per-frame log-probabilities (Wav2Letter,
    DeepSpeech, wav2vec 2.0 fine-tuning): every frame of every utterance is valid and every target
    sequence is `targets.shape[1]` long (class 0 is the blank)."""

    def __init__(self, model, time_major_out):
        super().__init__()
        self.model = model
        self.time_major_out = time_major_out  # the model's output is (batch, class, time)

    def forward(self, x, targets):
        log_probs = self.model(x)
        if isinstance(log_probs, tuple):  # Wav2Vec2Model returns (emissions, lengths)
            log_probs = F.log_softmax(log_probs[0], dim=-1)
        if self.time_major_out:
            log_probs = log_probs.permute(2, 0, 1)  # (batch, class, time) -> (time, batch, class)
        else:
            log_probs = log_probs.transpose(0, 1)  # (batch, time, class) -> (time, batch, class)
        frames, batch = log_probs.shape[0], log_probs.shape[1]
        input_lengths = torch.full((batch,), frames, dtype=torch.long)
        target_lengths = torch.full((batch,), targets.shape[1], dtype=torch.long)
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths)


class FrameClassify(nn.Module):
    """A sequence encoder (Conformer, Emformer) that takes (features, lengths) and returns
    (output, lengths), with a linear head of our own and per-frame cross-entropy."""

    def __init__(self, encoder, d, classes=CLASSES):
        super().__init__()
        self.encoder = encoder
        self.head = nn.Linear(d, classes)

    def forward(self, x, lengths, labels):
        h, _ = self.encoder(x, lengths)
        return F.cross_entropy(self.head(h).flatten(0, 1), labels.flatten())


class Separate(nn.Module):
    """Source separation (ConvTasNet): mean squared error of the separated sources."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, mixture, sources):
        return F.mse_loss(self.model(mixture), sources)


def without_weight_norm(model, wav2vec2):
    """torchaudio's own preparation of wav2vec 2.0 for TorchScript: its positional convolution's
    __prepare_scriptable__ removes weight_norm (whose forward pre-hook torch.jit cannot take)."""
    wav2vec2.encoder.transformer.pos_conv_embed.__prepare_scriptable__()
    return model


def wav2vec2_small(**kw):
    return dict(extractor_mode="group_norm", extractor_conv_layer_config=[(16, 10, 5), (16, 3, 2), (16, 2, 2)],
                extractor_conv_bias=False, encoder_embed_dim=32, encoder_projection_dropout=0.1,
                encoder_pos_conv_kernel=8, encoder_pos_conv_groups=4, encoder_num_layers=2, encoder_num_heads=4,
                encoder_attention_dropout=0.1, encoder_ff_interm_features=64, encoder_ff_interm_dropout=0.0,
                encoder_dropout=0.1, encoder_layer_norm_first=False, encoder_layer_drop=0.0, **kw)


WAV2VEC2_SOURCE = ("extractor_mode='group_norm', extractor_conv_layer_config=[(16, 10, 5), (16, 3, 2), (16, 2, 2)], "
                   "encoder_embed_dim=32, encoder_pos_conv_kernel=8, encoder_pos_conv_groups=4, encoder_num_layers=2, "
                   "encoder_num_heads=4, encoder_ff_interm_features=64")


def wav2vec2_ctc(**kw):
    wav2vec2 = torchaudio.models.wav2vec2_model(**{**wav2vec2_small(), **kw}, aux_num_out=CLASSES)
    return without_weight_norm(CtcLoss(wav2vec2, time_major_out=False), wav2vec2)


# HuBERT fine-tuned with CTC as torchaudio's hubert_large builds it: a layer-norm feature extractor
# with convolution biases and a pre-norm encoder (HuBERT's pre-training model cannot be traced on
# LibTorch 1.13: its mask generator's torch.full(..., False) fails the tracer's alias analysis).
HUBERT = dict(extractor_mode="layer_norm", extractor_conv_bias=True, encoder_layer_norm_first=True)


def mvit(v2):
    """torchvision's MViT at 32x32, 8 frames, with three blocks of 16-32 channels: the v1 form
    (mvit_v1_b's flags) or the v2 form (mvit_v2_s's: pooled residual, relative positions)."""
    config = tvvideo.mvit.MSBlockConfig
    blocks = [config(1, 16, 16, [3, 3, 3], [3, 3, 3], [1, 1, 1], [1, 4, 4]),
              config(2, 16, 32, [3, 3, 3], [3, 3, 3], [1, 2, 2], [1, 2, 2]),
              config(2, 32, 32, [3, 3, 3], [3, 3, 3], [1, 1, 1], [1, 2, 2])]
    return Classify(tvvideo.MViT(spatial_size=(32, 32), temporal_size=8, block_setting=blocks, residual_pool=v2,
                                 residual_with_cls_embed=not v2, rel_pos_embed=v2, proj_after_attn=v2, dropout=0.1,
                                 stochastic_depth_prob=0.1, num_classes=CLASSES))


MVIT_SOURCE = ("torchvision.models.video.MViT(spatial_size=(32, 32), temporal_size=8, block_setting=[MSBlockConfig("
               "1, 16, 16, ...), MSBlockConfig(2, 16, 32, ...), MSBlockConfig(2, 32, 32, ...)], ")


# --- torchvision's video and segmentation families.

VIDEO_BATCH = 4


def video(frames=8, size=32, batch=VIDEO_BATCH):
    return [f"x={batch}x3x{frames}x{size}x{size}:float32", f"y={batch}:int64:0..{CLASSES}"]


class Segment(nn.Module):
    """Semantic segmentation (torchvision's FCN, DeepLabV3, LR-ASPP): per-pixel cross-entropy on the
    model's 'out' output."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x, y):
        return F.cross_entropy(self.model(x)["out"], y)


SEG_BATCH = 4


def segmentation(size=32):
    return [f"x={SEG_BATCH}x3x{size}x{size}:float32", f"y={SEG_BATCH}x{size}x{size}:int64:0..{CLASSES}"]


# --- decoder-only language models as their authors write them (llama.py, nanogpt.py: copies of
# Meta's Llama reference model.py and Karpathy's nanoGPT model.py).

LM_VOCAB = 64
LM_LENGTH = 16


class LlamaLM(nn.Module):
    """Next-token cross-entropy on Llama's logits (the loss of Meta's training code)."""

    def __init__(self, args):
        super().__init__()
        self.model = llama.Transformer(args)

    def forward(self, tokens, targets):
        logits = self.model(tokens, 0)
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


class NanoGptLM(nn.Module):
    """nanoGPT's own loss: GPT.forward(idx, targets) returns (logits, loss)."""

    def __init__(self, config):
        super().__init__()
        self.model = nanogpt.GPT(config)

    def forward(self, tokens, targets):
        return self.model(tokens, targets)[1]


class LlamaHfLM(nn.Module):
    """Hugging Face's own loss: LlamaForCausalLM(input_ids, labels=...) returns (loss, logits), the
    cross-entropy of the logits shifted by one token."""

    def __init__(self, config):
        super().__init__()
        self.model = llama_hf.LlamaForCausalLM(config)

    def forward(self, tokens, targets):
        return self.model(tokens, labels=targets)[0]


def lm_inputs():
    return [f"tokens={BATCH}x{LM_LENGTH}:int64:0..{LM_VOCAB}", f"targets={BATCH}x{LM_LENGTH}:int64:0..{LM_VOCAB}"]


class Model:
    """A corpus entry: its constructor as source text, a factory that calls the libraries' own
    constructors, its `--input` arguments, whether the CI subset checks it, its family (the CI subset
    keeps at least one model of each), whether it is saved scripted (torch.jit.script) rather
    than traced, and a known failure that HAP Studio has not fixed yet (tests/corpus expects the check
    to fail, and fails once it passes)."""

    def __init__(self, source, factory, inputs, ci, family, script=False, known=None):
        self.source, self.factory, self.inputs, self.ci = source, factory, inputs, ci
        self.family, self.script, self.known = family, script, known


# name -> Model. Where the stock size would make a slow test, the same class is built smaller
# through its own arguments, and `source` says so.
MODELS = {
    "resnet18": Model("torchvision.models.resnet18(num_classes=10)",
                      lambda: Classify(tvm.resnet18(num_classes=CLASSES)), image(), True, "resnet"),
    "resnet50": Model("torchvision.models.resnet50(num_classes=10)",
                      lambda: Classify(tvm.resnet50(num_classes=CLASSES)), image(), False, "resnet"),
    "resnext": Model("torchvision.models.resnet.ResNet(Bottleneck, [1, 1, 1, 1], groups=8, width_per_group=4)",
                     lambda: Classify(resnet.ResNet(resnet.Bottleneck, [1, 1, 1, 1], num_classes=CLASSES, groups=8,
                                                    width_per_group=4)), image(), False, "resnet"),
    "wide_resnet": Model("torchvision.models.resnet.ResNet(Bottleneck, [1, 1, 1, 1], width_per_group=128)",
                         lambda: Classify(resnet.ResNet(resnet.Bottleneck, [1, 1, 1, 1], num_classes=CLASSES,
                                                        width_per_group=128)), image(), False, "resnet"),
    "mobilenet_v2": Model("torchvision.models.mobilenet_v2(num_classes=10)",
                          lambda: Classify(tvm.mobilenet_v2(num_classes=CLASSES)), image(), True, "mobile"),
    "mobilenet_v3_small": Model("torchvision.models.mobilenet_v3_small(num_classes=10)",
                                lambda: Classify(tvm.mobilenet_v3_small(num_classes=CLASSES)), image(), False, "mobile"),
    "mobilenet_v3_large": Model("torchvision.models.mobilenet_v3_large(num_classes=10)",
                                lambda: Classify(tvm.mobilenet_v3_large(num_classes=CLASSES)), image(), False, "mobile"),
    "efficientnet_b0": Model("torchvision.models.efficientnet_b0(num_classes=10)",
                             lambda: Classify(tvm.efficientnet_b0(num_classes=CLASSES)), image(), False, "mobile"),
    "convnext": Model("torchvision.models.convnext.ConvNeXt([CNBlockConfig(16, 32, 1), CNBlockConfig(32, 64, 1), "
                      "CNBlockConfig(64, None, 1)], stochastic_depth_prob=0.2)",
                      lambda: Classify(convnext.ConvNeXt([convnext.CNBlockConfig(16, 32, 1),
                                                          convnext.CNBlockConfig(32, 64, 1),
                                                          convnext.CNBlockConfig(64, None, 1)],
                                                         stochastic_depth_prob=0.2, num_classes=CLASSES)),
                      image(), True, "convnet"),
    "swin": Model("torchvision.models.swin_transformer.SwinTransformer(patch_size=[4, 4], embed_dim=16, "
                  "depths=[2, 2], num_heads=[2, 4], window_size=[4, 4], stochastic_depth_prob=0.2)",
                  lambda: Classify(swin_transformer.SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2],
                                                                    num_heads=[2, 4], window_size=[4, 4],
                                                                    stochastic_depth_prob=0.2,
                                                                    num_classes=CLASSES)), image(), True, "transformer-vision"),
    "vit": Model("torchvision.models.vision_transformer.VisionTransformer(image_size=32, patch_size=8, num_layers=2, "
                 "num_heads=4, hidden_dim=32, mlp_dim=64, dropout=0.1)",
                 lambda: Classify(vision_transformer.VisionTransformer(image_size=32, patch_size=8, num_layers=2,
                                                                       num_heads=4, hidden_dim=32, mlp_dim=64,
                                                                       dropout=0.1, num_classes=CLASSES)),
                 image(), True, "transformer-vision"),
    "densenet121": Model("torchvision.models.densenet121(num_classes=10)",
                         lambda: Classify(tvm.densenet121(num_classes=CLASSES)), image(), False, "convnet"),
    "densenet_small": Model("torchvision.models.densenet.DenseNet(growth_rate=8, block_config=(2, 2), "
                            "num_init_features=16)",
                            lambda: Classify(densenet.DenseNet(growth_rate=8, block_config=(2, 2), num_init_features=16,
                                                               num_classes=CLASSES)), image(), True, "convnet"),
    "googlenet": Model("torchvision.models.googlenet(num_classes=10, aux_logits=False, init_weights=True)",
                       lambda: Classify(tvm.googlenet(num_classes=CLASSES, aux_logits=False, init_weights=True)),
                       image(), False, "convnet"),
    "shufflenet_v2": Model("torchvision.models.shufflenet_v2_x0_5(num_classes=10)",
                           lambda: Classify(tvm.shufflenet_v2_x0_5(num_classes=CLASSES)), image(), False, "mobile"),
    "squeezenet1_1": Model("torchvision.models.squeezenet1_1(num_classes=10)",
                           lambda: Classify(tvm.squeezenet1_1(num_classes=CLASSES)), image(64), False, "mobile"),
    "regnet_y_400mf": Model("torchvision.models.regnet_y_400mf(num_classes=10)",
                            lambda: Classify(tvm.regnet_y_400mf(num_classes=CLASSES)), image(), False, "convnet"),
    "mnasnet0_5": Model("torchvision.models.mnasnet0_5(num_classes=10)",
                        lambda: Classify(tvm.mnasnet0_5(num_classes=CLASSES)), image(), False, "mobile"),
    "alexnet": Model("torchvision.models.alexnet(num_classes=10)",
                     lambda: Classify(tvm.alexnet(num_classes=CLASSES)), image(64), False, "convnet"),
    "vgg11": Model("torchvision.models.vgg11(num_classes=10)",
                   lambda: Classify(tvm.vgg11(num_classes=CLASSES)), image(), False, "convnet"),
    "transformer_encoder": Model("torch.nn.TransformerEncoder(TransformerEncoderLayer(32, 4, 64, norm_first=True), 2)",
                                 lambda: EncoderClassifier(),
                                 [f"tokens={BATCH}x12:int64:0..64", f"targets={BATCH}x12:int64:0..64"], True, "text"),
    "transformer": Model("torch.nn.Transformer(32, 4, 2, 2, 64) with a causal mask and padding masks",
                         lambda: Seq2Seq(),
                         [f"src={BATCH}x12:int64:0..64", f"tgt={BATCH}x12:int64:0..64",
                          f"labels={BATCH}x12:int64:0..64"], False, "text"),
    "multihead_attention": Model("torch.nn.MultiheadAttention(32, 4) in a pre-norm block of our own",
                                 lambda: AttentionRegressor(),
                                 [f"x={BATCH}x12x32:float32", f"target={BATCH}x12:float32"], True, "text"),
    "lstm": Model("torch.nn.LSTM(32, 32, num_layers=2) over torch.nn.Embedding",
                  lambda: LstmClassifier(), [f"tokens={BATCH}x12:int64:0..64", f"y={BATCH}:int64:0..{CLASSES}"], True, "recurrent"),
    "conv1d": Model("torch.nn Conv1d, GroupNorm, InstanceNorm1d, BatchNorm1d, PReLU, SiLU, pooling",
                    lambda: SignalNet(), [f"x={BATCH}x4x64:float32", f"y={BATCH}:int64:0..{CLASSES}"], True, "signal"),
    # torchaudio
    "wav2vec2": Model(f"torchaudio.models.wav2vec2_model({WAV2VEC2_SOURCE}, aux_num_out=10) with CTC",
                      wav2vec2_ctc,
                      [f"x={AUDIO_BATCH}x400:float32", f"targets={AUDIO_BATCH}x6:int64:1..{CLASSES}"],
                      False, "audio"),
    "hubert": Model("torchaudio.models.wav2vec2_model as hubert_large builds it (extractor_mode='layer_norm', "
                    f"extractor_conv_bias=True, encoder_layer_norm_first=True), {WAV2VEC2_SOURCE}, aux_num_out=10) "
                    "with CTC",
                    lambda: wav2vec2_ctc(**HUBERT),
                    [f"x={AUDIO_BATCH}x400:float32", f"targets={AUDIO_BATCH}x6:int64:1..{CLASSES}"],
                    False, "audio"),
    "conformer": Model("torchaudio.models.Conformer(input_dim=32, num_heads=4, ffn_dim=64, num_layers=2, "
                       "depthwise_conv_kernel_size=7, dropout=0.1)",
                       lambda: FrameClassify(torchaudio.models.Conformer(32, 4, 64, 2, 7, dropout=0.1), 32),
                       [f"x={AUDIO_BATCH}x16x32:float32", f"lengths={AUDIO_BATCH}:int64:16..17",
                        f"labels={AUDIO_BATCH}x16:int64:0..{CLASSES}"], True, "audio"),
    "emformer": Model("torchaudio.models.Emformer(input_dim=32, num_heads=4, ffn_dim=64, num_layers=2, "
                      "segment_length=4, dropout=0.1, left_context_length=4, right_context_length=2, "
                      "max_memory_size=2)",
                      lambda: FrameClassify(torchaudio.models.Emformer(
                          32, 4, 64, 2, 4, dropout=0.1, left_context_length=4, right_context_length=2,
                          max_memory_size=2), 32),
                      [f"x={AUDIO_BATCH}x18x32:float32", f"lengths={AUDIO_BATCH}:int64:16..17",
                       f"labels={AUDIO_BATCH}x16:int64:0..{CLASSES}"], False, "audio"),
    "conv_tasnet": Model("torchaudio.models.ConvTasNet(num_sources=2, enc_kernel_size=16, enc_num_feats=32, "
                         "msk_kernel_size=3, msk_num_feats=16, msk_num_hidden_feats=32, msk_num_layers=2, "
                         "msk_num_stacks=2)",
                         lambda: Separate(torchaudio.models.ConvTasNet(2, 16, 32, 3, 16, 32, 2, 2)),
                         [f"mixture={AUDIO_BATCH}x1x256:float32", f"sources={AUDIO_BATCH}x2x256:float32"],
                         False, "audio"),
    "wav2letter": Model("torchaudio.models.Wav2Letter(num_classes=10, input_type='mfcc', num_features=13) with CTC",
                        lambda: CtcLoss(torchaudio.models.Wav2Letter(CLASSES, "mfcc", 13), time_major_out=True),
                        [f"x={AUDIO_BATCH}x13x32:float32", f"targets={AUDIO_BATCH}x6:int64:1..{CLASSES}"],
                        False, "audio"),
    "deepspeech": Model("torchaudio.models.DeepSpeech(n_feature=13, n_hidden=32, n_class=10, dropout=0.1) with CTC",
                        lambda: CtcLoss(torchaudio.models.DeepSpeech(13, 32, CLASSES, 0.1), time_major_out=False),
                        [f"x={AUDIO_BATCH}x1x16x13:float32", f"targets={AUDIO_BATCH}x6:int64:1..{CLASSES}"],
                        False, "audio"),
    # torchvision video
    "r3d_18": Model("torchvision.models.video.r3d_18(num_classes=10)",
                    lambda: Classify(tvvideo.r3d_18(num_classes=CLASSES)), video(), False, "video"),
    "mc3_18": Model("torchvision.models.video.mc3_18(num_classes=10)",
                    lambda: Classify(tvvideo.mc3_18(num_classes=CLASSES)), video(), False, "video"),
    "r2plus1d_18": Model("torchvision.models.video.r2plus1d_18(num_classes=10)",
                         lambda: Classify(tvvideo.r2plus1d_18(num_classes=CLASSES)), video(), False, "video"),
    "video_resnet_small": Model("torchvision.models.video.VideoResNet(BasicBlock, [Conv3DSimple] * 4, [1, 1, 1, 1], "
                                "BasicStem)",
                                lambda: Classify(tvvideo.VideoResNet(tvvideo.resnet.BasicBlock,
                                                                     [tvvideo.resnet.Conv3DSimple] * 4, [1, 1, 1, 1],
                                                                     tvvideo.resnet.BasicStem, num_classes=CLASSES)),
                                video(), False, "video"),
    # S3D's last pooling is (2, 7, 7): its smallest input is 16 frames of 224x224 (a batch of 2)
    "s3d": Model("torchvision.models.video.s3d(num_classes=10)",
                 lambda: Classify(tvvideo.s3d(num_classes=CLASSES)), video(16, 224, batch=2), False, "video"),
    "mvit_v1": Model(MVIT_SOURCE + "mvit_v1_b's flags)", lambda: mvit(False), video(), True, "video"),
    "mvit_v2": Model(MVIT_SOURCE + "mvit_v2_s's flags: residual_pool, rel_pos_embed, proj_after_attn)",
                     lambda: mvit(True), video(), False, "video"),
    # torchvision segmentation
    "fcn_resnet50": Model("torchvision.models.segmentation.fcn_resnet50(weights=None, weights_backbone=None, "
                          "num_classes=10)",
                          lambda: Segment(tvseg.fcn_resnet50(weights=None, weights_backbone=None,
                                                             num_classes=CLASSES)), segmentation(), False,
                          "segmentation"),
    "deeplabv3_mobilenet_v3_large": Model(
        "torchvision.models.segmentation.deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None, "
        "num_classes=10)",
        lambda: Segment(tvseg.deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None, num_classes=CLASSES)),
        segmentation(), False, "segmentation"),
    "lraspp_mobilenet_v3_large": Model(
        "torchvision.models.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None, "
        "num_classes=10)",
        lambda: Segment(tvseg.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None, num_classes=CLASSES)),
        segmentation(), True, "segmentation"),
    # decoder-only language models (resources/corpus/llama.py and nanogpt.py)
    "llama": Model("llama.Transformer(ModelArgs(dim=32, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=64, "
                   "multiple_of=16, max_seq_len=16)): Meta's reference model.py, non-parallel",
                   lambda: LlamaLM(llama.ModelArgs(dim=32, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=LM_VOCAB,
                                                   multiple_of=16, max_seq_len=LM_LENGTH)),
                   lm_inputs(), False, "decoder-lm",
                   known="the importer refuses the complex dtype of its rotary embeddings (aten::view_as_complex)"),
    "llama_hf": Model("llama_hf.LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, "
                      "num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=16, "
                      "tie_word_embeddings=True)): Hugging Face transformers' modeling_llama.py, eager attention",
                      lambda: LlamaHfLM(llama_hf.LlamaConfig(vocab_size=LM_VOCAB, hidden_size=32, intermediate_size=64,
                                                             num_hidden_layers=2, num_attention_heads=4,
                                                             num_key_value_heads=2, max_position_embeddings=LM_LENGTH,
                                                             tie_word_embeddings=True)),
                      lm_inputs(), False, "decoder-lm"),
    "nanogpt": Model("nanogpt.GPT(GPTConfig(block_size=16, vocab_size=64, n_layer=2, n_head=4, n_embd=32, "
                     "dropout=0.1)): Karpathy's nanoGPT model.py, tied embeddings",
                     lambda: NanoGptLM(nanogpt.GPTConfig(block_size=LM_LENGTH, vocab_size=LM_VOCAB, n_layer=2,
                                                         n_head=4, n_embd=32, dropout=0.1)),
                     lm_inputs(), True, "decoder-lm"),
    # a scripted model (torch.jit.script of the whole model and its loss) rather than a trace
    "scripted_resnet": Model("torch.jit.script(torchvision.models.resnet.ResNet(BasicBlock, [1, 1, 1, 1]))",
                             lambda: Classify(resnet.ResNet(resnet.BasicBlock, [1, 1, 1, 1], num_classes=CLASSES)),
                             image(), True, "scripted", script=True),
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
    m = MODELS[name]
    torch.manual_seed(0)
    with contextlib.redirect_stdout(io.StringIO()) if quiet else contextlib.nullcontext():
        model = m.factory()  # nanoGPT prints its parameter count and a warning about attention
    model.train()
    args = tuple(example(a) for a in m.inputs)
    start = time.time()
    saved = torch.jit.script(model) if m.script else torch.jit.trace(model, args, check_trace=False)
    path = os.path.join(out, f"{name}.pt")
    tmp = path + ".tmp"
    torch.jit.save(saved, tmp)
    os.replace(tmp, path)
    # Tied parameters (nanoGPT's embedding and output layer) count once, as model.parameters() has them.
    parameters = sum(p.numel() for p in model.parameters())
    if not quiet:
        print(f"{name:28s} {parameters / 1e6:7.2f}M parameters  {time.time() - start:5.1f} s  {path}")
    return {"name": name, "file": f"{name}.pt", "source": m.source, "inputs": m.inputs, "ci": m.ci,
            "family": m.family, "saved": "scripted" if m.script else "traced", "parameters": parameters,
            **({"known_failure": m.known} if m.known else {})}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", help="output folder")
    parser.add_argument("--model", action="append", default=[], help="export only this model (repeatable)")
    parser.add_argument("--subset", choices=["ci"], help="export only the CI subset")
    parser.add_argument("--list", action="store_true", help="list the models")
    parser.add_argument("--quiet", action="store_true")
    a = parser.parse_args()
    if a.list:
        for name, m in MODELS.items():
            print(f"{name:28s} {m.family:18s} {'ci ' if m.ci else '   '} {m.source}")
        return
    if not a.out:
        parser.error("--out is required")
    unknown = [m for m in a.model if m not in MODELS]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; see --list")
    names = a.model or [n for n, m in MODELS.items() if a.subset != "ci" or m.ci]
    os.makedirs(a.out, exist_ok=True)
    torch.set_num_threads(1)
    entries = [export(n, a.out, a.quiet) for n in names]
    manifest = {"format": "hap-corpus", "version": 1, "torch": torch.__version__,
                "torchvision": torchvision.__version__, "torchaudio": torchaudio.__version__,
                "families": sorted({m.family for m in MODELS.values()}), "models": entries}
    with open(os.path.join(a.out, "corpus.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    sys.exit(main())
