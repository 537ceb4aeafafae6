"""Render the supported-op table: ``python -m fxla.lowering.coverage_doc > docs/ops.md``.

The table is generated from :func:`fxla.lowering.coverage` (every key of the rule table); the list of known
unsupported ops below is maintained by hand, with the reason for each.
"""
from __future__ import annotations

import sys

from . import coverage

#: (op, why it is not lowered) — kept short; grouped by reason.
KNOWN_UNSUPPORTED = (
    ("boolean-mask indexing `x[mask]`, `torch.nonzero`, `torch.masked_select`, `torch.unique`, `torch.where(cond)`",
     "the result shape depends on the data; fxla programs have static shapes"),
    ("in-place mutation of views (`x.view(-1).add_(1)`, `x[0].mul_(2)`); `t_`/`unsqueeze_`; `out=`",
     "views are not tracked (other in-place ops, on inputs, parameters and buffers too, are functionalized and "
     "written back: docs/tracing.md, In-place operations)"),
    ("`x[i, 0] = v` (tensor indices next to ints or slices other than `:`); multi-dimensional index tensors in "
     "`x[i] = v`",
     "not lowered yet; use index_copy, torch.where or scatter (`x[mask] = v` is lowered: a value broadcast over "
     "the selection, or one value per selected position, as `masked_scatter`)"),
    ("`torch.special.*` (Bessel, i0e, erfcx)", "not lowered yet"),
    ("`torch.linalg.*`, `torch.fft.*`, complex dtypes", "no fxla ops for decompositions, FFTs or complex numbers"),
    ("`nn.MultiheadAttention` with `add_bias_kv` / `add_zero_attn`; `nn.TransformerEncoder(mask_check=False)` "
     "with a padding mask; transformer stacks whose final norm is not an `nn.LayerNorm`",
     "not lowered yet (plain nn.MultiheadAttention, the transformer layers and stacks are)"),
    ("packed sequences (`pack_padded_sequence`) into RNN/LSTM/GRU layers",
     "not lowered yet (the layers on padded batches are, projections included: each layer one loop over its "
     "steps, of any length, symbolic included)"),
    ("`nn.AdaptiveLogSoftmaxWithLoss`; `triplet_margin_with_distance_loss` with a distance function other than "
     "pairwise distances",
     "not lowered yet (the other torch.nn losses are, functions and modules; CTC's recursion one loop over "
     "the time steps, with torch's analytic gradient)"),
)

#: How fxla's numerics relate to eager PyTorch on CPU (tests/test_numerics_hardening.py checks each row).
NUMERICS = (
    ("float16 / bfloat16", "every op's result is rounded to its dtype, as torch rounds it (XLA's excess precision, "
     "which kept fused intermediates in f32, is off: `xla_allow_excess_precision=False` in every compile); "
     "elementwise math, sums and means run in f32 and round once, as torch's CPU kernels do. `x * c` and `x / c` "
     "with a Python number `c` keep `c` in f32; `x + c`, `x - c` and `alpha` round it to the dtype first"),
    ("`add` / `sub` / `rsub` with `alpha`", "both operands are promoted to the result dtype, then `alpha` (converted "
     "to that dtype; refused where torch refuses it: a bool alpha for a non-bool result, a float alpha for integers, "
     "an alpha the dtype cannot hold) scales `other`; f16/bf16 compute `input + alpha * other` in f32 and round "
     "once, as torch's vectorized loop does (its scalar loop, used for the last `numel % 32` elements, rounds "
     "`alpha * other` first and can differ by one ulp there)"),
    ("floor division of floats", "torch's `div_floor_floating` step for step, in the operands' dtype: "
     "`x // 0.0` is `x / 0.0` (inf, -inf or nan), a zero quotient keeps the sign of `x / y`"),
    ("integer division by zero", "torch raises; so does the compiled program: a divisor that is not a nonzero "
     "constant is a value check of the program (`ValueCheckError`, docs/runtime.md \"Value checks\")"),
    ("float to integer conversion out of range, NaN to integer", "implementation-defined in torch (its CPU result "
     "wraps: -1.0 to uint8 is 255); fxla saturates to the integer range (-1.0 to uint8 is 0, 300.0 is 255, +-inf "
     "the largest/smallest value) and gives 0 for NaN"),
    ("`topk` / `sort` ties", "torch's CPU order of equal values is unspecified; fxla's is stable: equal values keep "
     "their input order (lowest index first)"),
    ("integer overflow in `**`", "undefined behaviour in torch's C++ kernels; fxla gives XLA's wrapped result "
     "(the two can differ)"),
    ("the sign of a zero from `relu`, `clamp`, `maximum`, `minimum`", "XLA's max/min may return +0.0 where torch "
     "keeps -0.0 (`relu(-0.0)`); equal as numbers, different only through `1 / x`, `rsqrt`, `atan2`, `signbit`"),
    ("`x * mask` with a bool mask", "IEEE's result, as torch: `nan * False` and `inf * False` are nan, `-2.0 * "
     "False` is -0.0 (XLA's own rewrite to a select gave 0)"),
    ("float division", "`x / c` by a constant may differ from torch by one ulp (XLA may multiply by the "
     "reciprocal); `bool / bool` 0 / 0 is nan (torch's CPU kernels give nan or 0 depending on the path)"),
    ("size-0 operands", "ops whose results are empty compile to empty constants; reductions over empty dims give "
     "torch's identities (sum 0, prod 1, mean / var nan)"),
)

#: Models of the test zoo (tests/zoo) that compile through fxla and match eager PyTorch at rtol 1e-4 in float32,
#: every tensor output compared (tests/test_real_models.py runs exactly these).
REAL_MODELS = (
    ("resnet18", "hand-built ResNet-18: basic blocks, BatchNorm (eval), AdaptiveAvgPool2d"),
    ("resnet50", "hand-built ResNet-50 bottlenecks"),
    ("mobilenet_v2", "depthwise convs, ReLU6, inverted residuals, F.adaptive_avg_pool2d"),
    ("vit", "hand-built ViT: patch conv, attention, LayerNorm"),
    ("vit_resizing", "ViT resizing its position grid with F.interpolate(bilinear)"),
    ("unet", "UNet blocks: ConvTranspose2d, F.pad by size differences, skip concat"),
    ("dlrm", "EmbeddingBag(sum) tables, bmm interaction, `z[:, li, lj]`"),
    ("tcn", "dilated causal Conv1d"),
    ("tiny_gpt", "hand-built GPT: causal attention with a tril mask"),
    ("gpt2", "HF GPT2Model (Conv1D = torch.addmm)"),
    ("bert", "HF BertModel"),
    ("roberta", "HF RobertaModel (position ids via cumsum + type_as)"),
    ("distilbert", "HF DistilBertModel"),
    ("t5", "HF T5Model, encoder-decoder, relative position buckets"),
    ("llama", "HF LlamaModel: RoPE, RMSNorm, GQA (sdpa enable_gqa)"),
    ("mistral", "HF MistralModel"),
    ("qwen2", "HF Qwen2Model"),
    ("vit_hf", "HF ViTModel"),
)


def render_markdown() -> str:
    cov = coverage()
    total = sum(len(v) for v in cov.values())
    lines = ["# Supported torch operations", "",
             "Generated from `fxla.lowering.coverage()` by `python -m fxla.lowering.coverage_doc`; do not edit by "
             "hand.", "",
             f"{total} op objects have a lowering rule: {len(cov['functions'])} functions, "
             f"{len(cov['methods'])} Tensor methods, {len(cov['modules'])} nn modules.  Every one is checked "
             "numerically against eager PyTorch by `tests/test_ops*.py`.", ""]
    for kind in ("functions", "methods", "modules"):
        lines += [f"## {kind.capitalize()}", "", "| op |", "|---|"]
        lines += [f"| `{name}` |" for name in cov[kind]]
        lines.append("")
    lines += ["## Real models", "",
              "Compiled through `fxla.symbolic_trace(model, example_inputs=...)` + `fxla.compile` and checked "
              "against eager (rtol 1e-4, float32, every tensor output) by `tests/test_real_models.py`; small "
              "configs with random weights from `tests/zoo`.", "", "| model | what it exercises |", "|---|---|"]
    lines += [f"| `{name}` | {what} |" for name, what in REAL_MODELS]
    lines.append("")
    lines += ["## Numerics", "", "Compared with eager PyTorch on CPU.", "", "| where | what fxla computes |",
              "|---|---|"]
    lines += [f"| {where} | {what} |" for where, what in NUMERICS]
    lines.append("")
    lines += ["## Known unsupported", "", "| op | why |", "|---|---|"]
    lines += [f"| {op} | {why} |" for op, why in KNOWN_UNSUPPORTED]
    lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(render_markdown())
