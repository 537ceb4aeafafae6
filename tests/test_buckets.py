"""``fxla.bucketed`` (issue #21, item 3): a loop over many lengths padded to a few buckets compiles a bounded
number of executables, with the results eager's; a model that padding changes is refused (api/buckets.py)."""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

import fxla
from fxla.runtime import compile_stats

transformers = pytest.importorskip("transformers")
transformers.logging.set_verbosity_error()


def _bert():
    torch.manual_seed(0)
    config = transformers.BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=64, vocab_size=100, max_position_embeddings=64)
    return transformers.BertModel(config).eval()


def test_a_length_loop_compiles_a_few_programs_and_equals_eager(fresh_dynamo):
    model = _bert()
    compiled = torch.compile(model, backend="fxla")
    serve = fxla.bucketed(compiled, sizes=(8, 16, 32), pad={"input_ids": (1, 0), "attention_mask": (1, 0)})
    gen = torch.Generator().manual_seed(0)
    before = compile_stats()["compiles"] + compile_stats()["disk_hits"]
    with torch.no_grad():
        for length in (3, 5, 7, 9, 12, 15, 20, 26, 31, 4, 32):
            ids = torch.randint(1, 100, (2, length), generator=gen)
            mask = torch.ones(2, length, dtype=torch.int64)
            mask[1, length // 2:] = 0                      # (a shorter second sequence, padded by its caller)
            got = serve(input_ids=ids, attention_mask=mask)
            want = model(input_ids=ids, attention_mask=mask)
            assert got.last_hidden_state.shape == (2, length, 32)
            torch.testing.assert_close(got.last_hidden_state, want.last_hidden_state, rtol=1e-4, atol=1e-4)
            torch.testing.assert_close(got.pooler_output, want.pooler_output, rtol=1e-4, atol=1e-4)
    executables = compile_stats()["compiles"] + compile_stats()["disk_hits"] - before
    assert executables <= 2 * 3 + 1, executables       # each bucket, and one unpadded check per bucket
    assert sorted(serve.plans) == [8, 16, 32]           # (each checked once against an unpadded call)


class Unmasked(nn.Module):
    """Bidirectional attention with no mask: the padded positions change every output."""

    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)

    def forward(self, x):
        return self.layer(x)


def test_a_model_that_padding_changes_is_refused():
    torch.manual_seed(0)
    model = Unmasked().eval()
    serve = fxla.bucketed(model, sizes=(8,), pad={"x": (1, 0.0)})
    with torch.no_grad(), pytest.raises(fxla.BucketError, match="padding length 5 to the bucket 8 changes the result"):
        serve(torch.randn(1, 5, 16))
    assert serve.plans == {}
    with torch.no_grad():                                 # (at a bucket's size, or above the largest, no padding)
        x = torch.randn(1, 8, 16)
        torch.testing.assert_close(serve(x), model(x))
        x = torch.randn(1, 11, 16)
        torch.testing.assert_close(serve(x), model(x))


def test_bad_arguments():
    model = Unmasked().eval()
    with pytest.raises(fxla.BucketError, match=r"pad= names \['mask'\]"):
        fxla.bucketed(model, sizes=(8,), pad={"mask": (1, 0)})
    with pytest.raises(fxla.BucketError, match="sizes="):
        fxla.bucketed(model, sizes=(), pad={"x": (1, 0)})

    def two(a, b):
        return a + b
    serve = fxla.bucketed(two, sizes=(8,), pad={"a": (0, 0), "b": (0, 0)})
    with pytest.raises(fxla.BucketError, match="different lengths"):
        serve(torch.ones(3), torch.ones(4))


def test_a_prompt_loop_through_generate_compiles_a_few_programs(fresh_dynamo):
    """Prompts of 20 lengths through ``generate`` (static cache), padded on the left to 3 buckets: the tokens are
    eager's (unpadded) for every prompt, and XLA compiles at most 4 programs per bucket (prefill and decode, padded
    and the unpadded check), not 2 per length."""
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=128,
                                                                n_positions=256, bos_token_id=0, eos_token_id=None))
    model = model.eval()
    model.generation_config.eos_token_id, model.generation_config.pad_token_id = None, 0
    gen = torch.Generator().manual_seed(0)
    prompts = [torch.randint(1, 128, (1, n), generator=gen) for n in range(2, 22)]
    options = dict(max_new_tokens=4, do_sample=False, cache_implementation="static")
    with torch.no_grad():
        want = [model.generate(input_ids=p, attention_mask=torch.ones_like(p), **options) for p in prompts]
    model.forward = torch.compile(model.forward, backend="fxla")
    generate = fxla.bucketed(model.generate, sizes=(8, 16, 32), side="left",
                             pad={"input_ids": (1, 0), "attention_mask": (1, 0)})
    before = compile_stats()["compiles"] + compile_stats()["disk_hits"]
    with torch.no_grad():
        for p, expected in zip(prompts, want):
            assert torch.equal(generate(input_ids=p, attention_mask=torch.ones_like(p), **options), expected)
    assert compile_stats()["compiles"] + compile_stats()["disk_hits"] - before <= 4 * 3
