"""The model zoo of tests/test_model_zoo.py: hand-built nets and small offline HF ``transformers``
models, each with what is expected of fxla's default tracer, its ``concrete_shapes`` mode and
``torch.fx.symbolic_trace`` -- the table in docs/tracing.md is checked against ``ZOO``."""
from dataclasses import dataclass
from typing import Callable, Optional

import torch

from . import hf, misc, vision


@dataclass
class Entry:
    name: str
    factory: Callable  # () -> (model, inputs): inputs a tuple (positional) or a dict (keyword)
    hf: bool = False
    # None: traces (and matches eager); else a substring of the error that stops it
    fxla_default: Optional[str] = None
    fxla_concrete: Optional[str] = None
    torch_fx: Optional[str] = None
    notes: str = ""

    def build(self):
        torch.manual_seed(0)
        model, inputs = self.factory()
        return model.eval(), inputs


def _hand(make, *shapes):
    def factory():
        return make(), tuple(torch.randn(*s) for s in shapes)
    return factory


def _dlrm():
    return misc.DLRM(), (torch.randn(2, 4), torch.randint(0, 20, (2, 3, 2)))


def _tinygpt():
    return misc.TinyGPT(), (torch.randint(0, 100, (2, 8)),)


_IF = "cannot use the truth value"
_ITER = "cannot iterate over"
_FX_IF = "symbolically traced variables cannot be used as inputs to control flow"
_MASK = "masking_utils: `if batch_size != position_ids.shape[0]`"


def _hf(name, default, fx, notes):
    return Entry(name, hf.HF_MODELS[name], hf=True, fxla_default=default, torch_fx=fx, notes=notes)


ZOO = [
    Entry("resnet18", _hand(vision.resnet18, (2, 3, 32, 32)), notes="basic blocks, in-place ReLU"),
    Entry("resnet50", _hand(vision.resnet50, (2, 3, 32, 32)), notes="bottlenecks, `out += identity`"),
    Entry("mobilenet_v2", _hand(vision.MobileNetV2, (2, 3, 32, 32)), notes="depthwise convs, ReLU6, inverted residuals"),
    Entry("vit", _hand(vision.ViT, (2, 3, 16, 16)), notes="`B, N, C = x.shape` stays symbolic (size nodes)"),
    Entry("vit_resizing", _hand(lambda: vision.ResizingViT(image=16), (2, 3, 24, 24)),
          fxla_default=_IF, torch_fx=_FX_IF,
          notes="`if n != pos.shape[1] - 1:` and `int(math.sqrt(n))` on shapes: needs concrete shapes"),
    Entry("unet", _hand(vision.UNet, (2, 3, 20, 20)), notes="transposed convs, pad by size differences, skip concat"),
    Entry("dlrm", _dlrm, notes="EmbeddingBag per table, bmm interaction, buffer indices"),
    Entry("tcn", _hand(misc.TCN, (2, 12, 4)), notes="dilated causal Conv1d, `[:, :, :-pad]` chomp"),
    Entry("tiny_gpt", _tinygpt, fxla_default="cannot convert to float", torch_fx="ones() takes 1 positional argument",
          notes="`math.sqrt(c // heads)` of a symbolic int (fxla); `torch.ones(t, t)` with Proxy sizes (torch.fx)"),
    _hf("gpt2", _IF, _FX_IF, _MASK),
    _hf("bert", _ITER, "slice indices must be integers",
        "`(*input_shape, -1, head_size)` unpacks a symbolic shape (fxla); slicing with a Proxy (torch.fx)"),
    _hf("roberta", _ITER, "Proxy object cannot be iterated", "`(*input_shape, -1, head_size)` unpacks a symbolic shape"),
    _hf("distilbert", _ITER, "slice indices must be integers",
        "`(*input_shape, -1, head_size)` (fxla); slicing with a Proxy (torch.fx)"),
    _hf("t5", _IF, _FX_IF, "T5LayerNorm: `if self.weight.dtype in [torch.float16, torch.bfloat16]`; "
        "encoder-decoder with decoder_input_ids"),
    _hf("llama", _IF, _FX_IF, _MASK + "; GQA (1 KV head), RoPE"),
    _hf("mistral", _IF, _FX_IF, _MASK),
    _hf("qwen2", _IF, _FX_IF, _MASK),
    _hf("vit_hf", _IF, _FX_IF, "ViTModel: `if pixel_values.dtype != expected_dtype`"),
]

BY_NAME = {e.name: e for e in ZOO}
