"""Helpers shared by the test files."""


def marker_line(path: str, marker: str) -> int:
    """The line number (1-based) of the unique line of ``path`` ending in ``# <marker>``."""
    with open(path) as f:
        hits = [i for i, text in enumerate(f, 1) if text.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def gelu_mlp():
    """The small 8 -> 16 -> 4 GELU MLP the runtime and sharding tests share."""
    import torch.nn as nn
    import torch.nn.functional as F

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(8, 16)
            self.fc2 = nn.Linear(16, 4)

        def forward(self, x):
            return self.fc2(F.gelu(self.fc1(x)))

    return MLP()
