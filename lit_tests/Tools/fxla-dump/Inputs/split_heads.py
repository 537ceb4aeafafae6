"""A model whose shapes come from a symbolic length: the view by `s // 2` (lit: dynamic-dims.mlir)."""
import torch


class SplitHeads(torch.nn.Module):
    def forward(self, x):
        b, s, d = x.shape
        return x.view(b, s // 2, 2 * d).softmax(-1)


def model():
    return SplitHeads(), (torch.randn(2, 8, 3),)
