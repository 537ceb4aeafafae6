"""The benchmark's real-size torch models, built offline with random weights (seeded).

* ``resnet18()``: torchvision's ResNet-18 (basic blocks, widths 64-512, 1000 classes), written out here (from
  before torchvision was installed; kept so that earlier runs compare); same module names as torchvision, so
  ``state_dict`` keys match, and the same output as ``torchvision.models.resnet18`` given that state.
* ``torchvision_model(name)``: a builder of ``torchvision.models.get_model(name)`` (``mobilenet_v2``,
  ``efficientnet_b0``, ``convnext_tiny``, ``regnet_y_400mf``, ``shufflenet_v2_x1_0``, ...), imported through
  ``utils/torchvision_cpu.py`` (the index's torchvision is a CUDA build); torchvision's own initialisation, seeded.
* ``gpt2_small()``: ``transformers.GPT2Model(GPT2Config())`` (12 layers, 768 hidden, 12 heads), called with
  ``use_cache=False`` and returning ``last_hidden_state`` (a tensor).
* ``bert_base()``: ``transformers.BertModel(BertConfig(), add_pooling_layer=False)`` (12 layers, 768 hidden,
  12 heads), returning ``last_hidden_state``.

All are in eval mode, float32.
"""
from __future__ import annotations

import inspect
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "utils"))
from torchvision_cpu import import_torchvision  # noqa: E402


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class ResNet18(nn.Module):
    WIDTHS = (64, 128, 256, 512)

    def __init__(self, num_classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        cin = 64
        for i, w in enumerate(self.WIDTHS):
            stride = 1 if i == 0 else 2
            setattr(self, f"layer{i + 1}", nn.Sequential(BasicBlock(cin, w, stride), BasicBlock(w, w)))
            cin = w
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512, num_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def _randomize_bn(model):
    """Non-trivial running statistics and affine parameters (fresh BatchNorms are the identity in eval)."""
    g = torch.Generator().manual_seed(1)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            n = m.num_features
            m.running_mean.copy_(torch.randn(n, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(n, generator=g) * 0.5 + 0.75)
            m.weight.data.copy_(torch.rand(n, generator=g) * 0.5 + 0.75)
            m.bias.data.copy_(torch.randn(n, generator=g) * 0.1)
    return model


def resnet18():
    torch.manual_seed(0)
    with torch.no_grad():
        return _randomize_bn(ResNet18()).eval()


def torchvision_model(name: str):
    """A builder of torchvision's ``name`` model: random weights (seed 0), random BatchNorm statistics, eval mode."""
    def build():
        models = import_torchvision().models
        torch.manual_seed(0)
        with torch.no_grad():
            return _randomize_bn(models.get_model(name, weights=None)).eval()
    build.__name__ = name
    return build


class _LastHidden(nn.Module):
    """``forward(input_ids) -> last_hidden_state``: a plain signature and a tensor result."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        self.kwargs = {"use_cache": False} if "use_cache" in inspect.signature(model.forward).parameters else {}

    def forward(self, input_ids):
        return self.model(input_ids=input_ids, **self.kwargs).last_hidden_state


def _transformers():
    import transformers
    transformers.logging.set_verbosity_error()
    return transformers


def gpt2_small():
    t = _transformers()
    torch.manual_seed(0)
    return _LastHidden(t.GPT2Model(t.GPT2Config())).eval()


def bert_base():
    t = _transformers()
    torch.manual_seed(0)
    return _LastHidden(t.BertModel(t.BertConfig(), add_pooling_layer=False)).eval()
