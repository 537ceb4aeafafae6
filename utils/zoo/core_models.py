"""The zoo's PyTorch-core models: ``torch.nn``'s own layers called as their documentation shows (padding masks,
causal masks, initial states, ``need_weights``), and a nanoGPT-style language model (its ``x[:, [-1], :]``)."""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from .registry import Case, Entry, generator

D, HEADS, T = 32, 4, 8


def _seq(batch=2, length=T, dim=D, seed=0):
    return torch.randn(batch, length, dim, generator=generator(seed))


def _padding_mask(batch=2, length=T, pad=3):
    """True at padding (the key_padding_mask convention): the last row's last ``pad`` positions."""
    mask = torch.zeros(batch, length, dtype=torch.bool)
    mask[-1, length - pad:] = True
    return mask


def transformer():
    """``nn.Transformer`` with a causal target mask and padding masks on both sides."""
    model = nn.Transformer(d_model=D, nhead=HEADS, num_encoder_layers=2, num_decoder_layers=2,
                           dim_feedforward=64, dropout=0.1, batch_first=True)
    src, tgt = _seq(), _seq(length=6, seed=1)
    tgt_mask = nn.Transformer.generate_square_subsequent_mask(6)
    return Case(model, (src, tgt), dict(tgt_mask=tgt_mask, src_key_padding_mask=_padding_mask(),
                                         memory_key_padding_mask=_padding_mask()))


def transformer_encoder():
    """``nn.TransformerEncoder`` with ``src_key_padding_mask`` (its fused fast path in eval under no_grad)."""
    layer = nn.TransformerEncoderLayer(D, HEADS, dim_feedforward=64, batch_first=True)
    model = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
    return Case(model, (_seq(),), dict(src_key_padding_mask=_padding_mask()))


def transformer_encoder_norm_first():
    """Pre-norm encoder layers with GELU and a final LayerNorm, called without a mask."""
    layer = nn.TransformerEncoderLayer(D, HEADS, dim_feedforward=64, activation="gelu", batch_first=True,
                                       norm_first=True)
    model = nn.TransformerEncoder(layer, num_layers=2, norm=nn.LayerNorm(D), enable_nested_tensor=False)
    return Case(model, (_seq(),))


def transformer_decoder():
    """``nn.TransformerDecoder`` with a causal mask (``tgt_is_causal``) over an encoder memory."""
    layer = nn.TransformerDecoderLayer(D, HEADS, dim_feedforward=64, batch_first=True)
    model = nn.TransformerDecoder(layer, num_layers=2)
    mask = nn.Transformer.generate_square_subsequent_mask(T)
    return Case(model, (_seq(), _seq(length=5, seed=1)), dict(tgt_mask=mask, tgt_is_causal=True))


def multihead_attention():
    """``nn.MultiheadAttention`` (sequence-first) with ``key_padding_mask``; returns output and averaged weights."""
    model = nn.MultiheadAttention(D, HEADS)
    q = torch.randn(T, 2, D, generator=generator(0))
    return Case(model, (q, q, q), dict(key_padding_mask=_padding_mask()))


def multihead_attention_kdim():
    """Cross-attention with other key/value widths (separate projections), batch-first, per-head weights."""
    model = nn.MultiheadAttention(D, HEADS, kdim=16, vdim=24, batch_first=True)
    q, k, v = _seq(), _seq(length=5, dim=16, seed=1), _seq(length=5, dim=24, seed=2)
    return Case(model, (q, k, v), dict(need_weights=True, average_attn_weights=False))


def lstm():
    """Two-layer ``nn.LSTM`` (batch-first) called with the input only: returns ``(out, (h, c))``."""
    model = nn.LSTM(16, D, num_layers=2, batch_first=True)
    return Case(model, (_seq(dim=16),))


def lstm_state():
    """Bidirectional ``nn.LSTM`` called with an initial ``(h0, c0)``."""
    model = nn.LSTM(16, D, bidirectional=True)
    g = generator(3)
    x = torch.randn(T, 2, 16, generator=g)
    h0, c0 = torch.randn(2, 2, D, generator=g), torch.randn(2, 2, D, generator=g)
    return Case(model, (x, (h0, c0)))


def gru():
    """Bidirectional two-layer ``nn.GRU`` with an initial state."""
    model = nn.GRU(16, D, num_layers=2, batch_first=True, bidirectional=True)
    g = generator(4)
    return Case(model, (torch.randn(2, T, 16, generator=g), torch.randn(4, 2, D, generator=g)))


class SpeechTagger(nn.Module):
    """Conv1d front end, GRU, per-frame classifier with log-softmax: a small speech/tagging net."""

    def __init__(self, feats=8, hidden=D, classes=10):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(feats, hidden, 3, padding=1), nn.BatchNorm1d(hidden), nn.ReLU())
        self.rnn = nn.GRU(hidden, hidden, batch_first=True)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):                           # x: (B, feats, T)
        h = self.conv(x).transpose(1, 2)
        h, _ = self.rnn(h)
        return F.log_softmax(self.head(h), dim=-1)


def speech_tagger():
    return Case(SpeechTagger(), (torch.randn(2, 8, 12, generator=generator(5)),))


class NanoGPTBlock(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.ln_1, self.ln_2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.c_attn, self.c_proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim), nn.Dropout(0.1))

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.c_attn(self.ln_1(x)).split(c, dim=2)
        q, k, v = (y.view(b, t, self.heads, c // self.heads).transpose(1, 2) for y in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c))
        return x + self.mlp(self.ln_2(x))


class NanoGPT(nn.Module):
    """Karpathy's nanoGPT at toy size: tied embeddings; with ``targets`` the loss over every position, without
    it the logits of the last position only (``x[:, [-1], :]``, a list index)."""

    def __init__(self, vocab=64, dim=D, heads=HEADS, layers=2, block=16):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, dim), nn.Embedding(block, dim)
        self.drop = nn.Dropout(0.1)
        self.h = nn.ModuleList([NanoGPTBlock(dim, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.lm_head.weight = self.wte.weight
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * layers))

    def forward(self, idx, targets=None):
        t = idx.size(1)
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.h:
            x = block(x)
        x = self.ln_f(x)
        if targets is not None:
            logits = self.lm_head(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        else:
            logits = self.lm_head(x[:, [-1], :])
            loss = None
        return logits, loss


def nanogpt():
    return Case(NanoGPT(), (torch.randint(0, 64, (2, T), generator=generator(6)),))


def nanogpt_loss():
    g = generator(7)
    idx = torch.randint(0, 64, (2, T), generator=g)
    targets = torch.randint(0, 64, (2, T), generator=g)
    targets[1, -2:] = -1
    return Case(NanoGPT(), (idx,), dict(targets=targets))


ENTRIES = [
    Entry("nn_transformer", "core", transformer, "encoder-decoder, causal tgt_mask, key padding masks"),
    Entry("nn_transformer_encoder", "core", transformer_encoder, "src_key_padding_mask; fused fast path"),
    Entry("nn_transformer_encoder_prenorm", "core", transformer_encoder_norm_first, "norm_first, GELU, final norm"),
    Entry("nn_transformer_decoder", "core", transformer_decoder, "tgt_mask with tgt_is_causal=True"),
    Entry("nn_multihead_attention", "core", multihead_attention, "sequence-first, key_padding_mask"),
    Entry("nn_multihead_attention_kdim", "core", multihead_attention_kdim, "kdim/vdim, per-head weights"),
    Entry("nn_lstm", "core", lstm, "2 layers, batch_first, no initial state"),
    Entry("nn_lstm_state", "core", lstm_state, "bidirectional, (h0, c0) given"),
    Entry("nn_gru", "core", gru, "bidirectional, 2 layers, h0 given"),
    Entry("speech_tagger", "core", speech_tagger, "Conv1d + BatchNorm1d + GRU + log_softmax"),
    Entry("nanogpt", "core", nanogpt, "tied head; logits of x[:, [-1], :] (a list index)"),
    Entry("nanogpt_loss", "core", nanogpt_loss, "targets= given: cross-entropy with ignore_index=-1"),
]
