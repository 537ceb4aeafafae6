"""A tiny Hugging Face GPT-2 (2 layers, width 64, 2 heads, vocabulary 128; seeded random weights, no hub) for
fxla-dump's tests: ``gpt2`` returns the model alone (the inputs come from ``--input-shape 2x16:i64``),
``gpt2_with_mask`` the model, its token ids and an ``attention_mask`` keyword input."""
import os
import sys

import torch

# transformers' model classes import torchvision, whose test-extras build needs this on CPU torch
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), *[os.pardir] * 4, "utils"))
from torchvision_cpu import import_torchvision  # noqa: E402

import_torchvision()
sys.path.pop(0)

import transformers  # noqa: E402

transformers.logging.set_verbosity_error()


def gpt2():
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=128, n_positions=64,
                                     bos_token_id=1, eos_token_id=1, pad_token_id=0)
    return transformers.GPT2LMHeadModel(config)


def gpt2_with_mask():
    ids = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(1))
    mask = torch.ones(2, 16, dtype=torch.int64)
    mask[1, :4] = 0                     # a left-padded second row
    return gpt2(), (ids,), {"attention_mask": mask}
