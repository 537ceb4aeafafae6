"""Helpers shared by the test files."""


def marker_line(path: str, marker: str) -> int:
    """The line number (1-based) of the unique line of ``path`` ending in ``# <marker>``."""
    with open(path) as f:
        hits = [i for i, text in enumerate(f, 1) if text.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def run_stablehlo_pass(text: str, pass_fn) -> str:
    """``pass_fn`` run on the StableHLO module ``text``, verified after; the module's text."""
    from fxla.dialects.mlir import fxla_context, ir
    with fxla_context():
        module = ir.Module.parse(text)
        pass_fn(module)
        module.operation.verify()
        return str(module)


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


def tiny_gpt2(head: bool = True, layers: int = 1):
    """A seeded tiny Hugging Face GPT-2 (vocabulary 64, width 32, 2 heads, 32 positions; ``head``: the LM-head
    model) in eval mode and ids ``[1, 8]`` for it; skips the test when transformers is not installed."""
    import pytest
    import torch
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=layers, n_embd=32, n_head=2, vocab_size=64, n_positions=32,
                                     bos_token_id=0, eos_token_id=0)
    model = (transformers.GPT2LMHeadModel if head else transformers.GPT2Model)(config).eval()
    return model, torch.randint(0, 64, (1, 8))


def relu_static_only(monkeypatch) -> None:
    """Make torch.relu's lowering rule refuse symbolic sizes (``ValueError("relu: a ? size for the test")``), to
    test what fxla does with a rule that cannot take them."""
    import torch
    from fxla.lowering import RULES          # (complete: the rules are imported)
    relu = RULES[torch.relu]

    def static_only(ctx, x, *args, **kwargs):
        if not all(type(n) is int for n in ctx.sig(x).shape):      # (a symbolic size)
            raise ValueError("relu: a ? size for the test")
        return relu(ctx, x, *args, **kwargs)
    monkeypatch.setitem(RULES, torch.relu, static_only)
