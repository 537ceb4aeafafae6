"""Hand-built non-vision nets: a DLRM-style recommender, a TCN (dilated causal convolutions, no
LSTM) and a small causal Transformer language model whose mask is built from the input length."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def _mlp(sizes, last_act=True):
    layers = []
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        layers.append(nn.Linear(a, b))
        if last_act or i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class DLRM(nn.Module):
    """Bottom MLP on dense features, one EmbeddingBag per sparse feature, pairwise dot-product
    interaction (strictly lower triangle), top MLP, sigmoid -- the DLRM recipe at toy sizes."""

    def __init__(self, dense=4, tables=(20, 30, 40), dim=8, bag=2):
        super().__init__()
        self.bag = bag
        self.bottom = _mlp([dense, 16, dim])
        self.embeddings = nn.ModuleList([nn.EmbeddingBag(n, dim, mode="sum") for n in tables])
        feats = len(tables) + 1
        li, lj = torch.tril_indices(feats, feats, offset=-1)
        self.register_buffer("li", li)
        self.register_buffer("lj", lj)
        self.top = _mlp([dim + feats * (feats - 1) // 2, 16, 1], last_act=False)

    def forward(self, dense, sparse):
        x = self.bottom(dense)
        embs = [emb(sparse[:, i]) for i, emb in enumerate(self.embeddings)]  # sparse: (B, tables, bag)
        t = torch.stack([x] + embs, dim=1)
        z = torch.bmm(t, t.transpose(1, 2))
        inter = z[:, self.li, self.lj]
        return torch.sigmoid(self.top(torch.cat([x, inter], dim=1)))


class CausalConv(nn.Module):
    def __init__(self, cin, cout, k, dilation):
        super().__init__()
        self.pad = (k - 1) * dilation
        self.conv = nn.Conv1d(cin, cout, k, padding=self.pad, dilation=dilation)

    def forward(self, x):
        return self.conv(x)[:, :, :-self.pad]  # chomp the right padding: causal


class TCN(nn.Module):
    """Temporal convolutional network: residual blocks of dilated causal Conv1d (no recurrence)."""

    def __init__(self, cin=4, hidden=16, levels=3, k=3, classes=5):
        super().__init__()
        self.blocks = nn.ModuleList()
        self.skips = nn.ModuleList()
        c = cin
        for i in range(levels):
            self.blocks.append(nn.Sequential(CausalConv(c, hidden, k, 2 ** i), nn.ReLU(),
                                             CausalConv(hidden, hidden, k, 2 ** i), nn.ReLU()))
            self.skips.append(nn.Conv1d(c, hidden, 1) if c != hidden else nn.Identity())
            c = hidden
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):  # x: (B, T, C)
        h = x.transpose(1, 2)
        for block, skip in zip(self.blocks, self.skips):
            h = F.relu(block(h) + skip(h))
        return self.head(h.transpose(1, 2))


class CausalSelfAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv, self.out = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (y.view(b, t, self.heads, c // self.heads).transpose(1, 2) for y in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.heads)
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool, device=x.device), diagonal=1)
        att = att.masked_fill(mask, float("-inf")).softmax(dim=-1)
        return self.out((att @ v).transpose(1, 2).contiguous().view(b, t, c))


class TinyGPT(nn.Module):
    """A nanoGPT-style causal LM: token + position embeddings, pre-norm blocks, tied head."""

    def __init__(self, vocab=100, dim=32, heads=2, layers=2, context=16):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, dim), nn.Embedding(context, dim)
        self.blocks = nn.ModuleList()
        for _ in range(layers):
            self.blocks.append(nn.ModuleDict({"ln1": nn.LayerNorm(dim), "attn": CausalSelfAttention(dim, heads),
                                              "ln2": nn.LayerNorm(dim),
                                              "mlp": nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(),
                                                                   nn.Linear(4 * dim, dim))}))
        self.ln_f = nn.LayerNorm(dim)

    def forward(self, idx):
        t = idx.size(1)
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.tok(idx) + self.pos(pos)
        for blk in self.blocks:
            x = x + blk["attn"](blk["ln1"](x))
            x = x + blk["mlp"](blk["ln2"](x))
        return F.linear(self.ln_f(x), self.tok.weight)
