"""Example models used by the demo, fxla-dump examples and the end-to-end tests.

Each factory returns ``(model, example_inputs)`` with deterministic random weights.
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self, d_in=64, hidden=128, d_out=10):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, d_out)

    def forward(self, x):
        x = self.act(self.fc1(x))
        x = torch.relu(self.fc2(x)) + x
        return F.log_softmax(self.fc3(x), dim=-1)


class SmallCNN(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.fc = nn.Linear(32 * 4 * 4, classes)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = torch.relu(self.conv2(x))
        x = x.view(x.size(0), -1)
        return self.fc(x)


class EncoderBlock(nn.Module):
    """A pre-norm transformer encoder block from nn.Linear, nn.LayerNorm and softmax."""

    def __init__(self, d_model=64, heads=4, d_ff=128):
        super().__init__()
        self.heads = heads
        self.scale = 1.0 / math.sqrt(d_model // heads)
        self.norm1 = nn.LayerNorm(d_model)
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)
        self.v = nn.Linear(d_model, d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        b, s, d = x.shape
        h = self.heads
        n = self.norm1(x)
        q = self.q(n).view(b, s, h, d // h).transpose(1, 2)
        k = self.k(n).view(b, s, h, d // h).transpose(1, 2)
        v = self.v(n).view(b, s, h, d // h).permute(0, 2, 1, 3)
        att = torch.softmax(q @ k.transpose(-2, -1) * self.scale, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, d)
        x = x + self.drop(self.proj(y))
        return x + self.ff2(F.gelu(self.ff1(self.norm2(x))))


def mlp():
    torch.manual_seed(0)
    return MLP().eval(), (torch.randn(8, 64),)


def small_cnn():
    torch.manual_seed(0)
    return SmallCNN().eval(), (torch.randn(2, 3, 16, 16),)


def encoder_block():
    torch.manual_seed(0)
    return EncoderBlock().eval(), (torch.randn(2, 16, 64),)
