"""The zoo's entry type and the helpers every model file shares.

An :class:`Entry` names one model and knows how to build it: ``entry.build()`` returns a :class:`Case` -- the
model in eval mode with seeded random weights (no download: every model is built from its library's config
class or constructor) and the arguments it is called with, positional and keyword, exactly as its users call it.
Building twice gives the same weights and inputs, so every route of ``utils/zoo/run.py`` compiles a fresh copy
and compares it with eager on the same inputs.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Tuple

import torch
import torch.nn as nn

#: the families of the zoo; tests/test_zoo_fast.py runs one model of each
FAMILIES = ("hf-encoder", "hf-decoder", "hf-seq2seq", "hf-vision", "hf-audio", "torchvision", "timm", "core")


@dataclass
class Case:
    """A built model and the call: ``model(*args, **kwargs)`` is the eager reference."""
    model: nn.Module
    args: Tuple[Any, ...] = ()
    kwargs: Dict[str, Any] = field(default_factory=dict)

    def positional(self) -> Tuple[Any, ...]:
        """The same call with every keyword argument made positional (for ``fxla.export``, which takes a tuple):
        the forward's parameters up to the last one given, the ones not given at their defaults."""
        if not self.kwargs:
            return tuple(self.args)
        sig = inspect.signature(self.model.forward)
        bound = sig.bind(*self.args, **self.kwargs)
        names = list(sig.parameters)
        last = max(names.index(n) for n in bound.arguments)
        out = []
        for name in names[:last + 1]:
            p = sig.parameters[name]
            if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                raise TypeError(f"{type(self.model).__name__}.forward: {name} cannot be passed positionally")
            out.append(bound.arguments[name] if name in bound.arguments else p.default)
        return tuple(out)


@dataclass(frozen=True)
class Entry:
    """One zoo model.  ``factory()`` returns a :class:`Case`; :meth:`build` seeds torch first, puts the model
    in eval mode and gives BatchNorm layers non-trivial statistics (fresh ones are the identity in eval)."""
    name: str
    family: str
    factory: Callable[[], Case]
    notes: str = ""

    def __post_init__(self):
        if self.family not in FAMILIES:
            raise ValueError(f"zoo entry {self.name}: unknown family {self.family!r} (one of {FAMILIES})")

    def build(self) -> Case:
        setup()
        torch.manual_seed(0)
        case = self.factory()
        case.model.eval()
        randomize_norm_stats(case.model)
        return case


def setup() -> None:
    """Import torchvision the way the CPU torch here can (its index build is a CUDA one: utils/torchvision_cpu.py);
    transformers' and timm's model modules import it."""
    from ..torchvision_cpu import import_torchvision
    try:
        import_torchvision()
    except ImportError:
        pass                           # the torchvision and timm entries then fail to build, and say so


def randomize_norm_stats(model: nn.Module, seed: int = 1) -> None:
    """Running statistics and affine parameters of every BatchNorm away from the identity (seeded)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.running_mean is not None:
                n = m.num_features
                m.running_mean.copy_(torch.randn(n, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(n, generator=g) * 0.5 + 0.75)
                if m.affine:
                    m.weight.copy_(torch.rand(n, generator=g) * 0.5 + 0.75)
                    m.bias.copy_(torch.randn(n, generator=g) * 0.1)


def generator(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def images(batch: int = 2, size: int = 32, channels: int = 3, seed: int = 0) -> torch.Tensor:
    return torch.randn(batch, channels, size, size, generator=generator(seed))


def padded_ids(vocab: int, pad_id: int, batch: int = 2, length: int = 8, pad: int = 3, left: bool = False,
               seed: int = 0, low: int = 2) -> Tuple[torch.Tensor, torch.Tensor]:
    """``(input_ids, attention_mask)`` of a padded batch: the last row has ``pad`` padding tokens (``pad_id``,
    mask 0) on the right, or on the left for decoder-only models (as for generation); other rows are full."""
    ids = torch.randint(low, vocab, (batch, length), generator=generator(seed))
    mask = torch.ones(batch, length, dtype=torch.long)
    cols = slice(0, pad) if left else slice(length - pad, length)
    ids[-1, cols] = pad_id
    mask[-1, cols] = 0
    return ids, mask


def lm_labels(ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Causal-LM labels: the input ids, -100 (ignored by the loss) at padding."""
    return ids.masked_fill(mask == 0, -100)


def mlm_labels(ids: torch.Tensor, mask: torch.Tensor, seed: int = 1) -> torch.Tensor:
    """Masked-LM labels: about a third of the real tokens kept as targets, the rest -100."""
    keep = (torch.rand(ids.shape, generator=generator(seed)) < 0.35) & (mask == 1)
    keep[0, 0] = True
    return ids.masked_fill(~keep, -100)


def class_labels(batch: int, classes: int, seed: int = 2) -> torch.Tensor:
    return torch.randint(0, classes, (batch,), generator=generator(seed))
