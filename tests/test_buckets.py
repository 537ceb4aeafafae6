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
    serve = fxla.bucketed(compiled, sizes=(8, 16, 32), pad={"input_ids": (1, 0), "attention_mask": (1, 0)},
                          check="bucket")
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
    assert executables <= 3 * 3, executables           # each bucket, and two unpadded checks per bucket
    assert {key[0]: sorted(checked) for key, checked in serve.plans.items()} == {8: [3, 5], 16: [9, 12],
                                                                                  32: [20, 26]}
    assert sorted(key[0] for key in serve.trusted) == [8, 16, 32]


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
    with pytest.raises(fxla.BucketError, match="check="):
        fxla.bucketed(model, sizes=(8,), pad={"x": (1, 0)}, check="never")

    def two(a, b):
        return a + b
    serve = fxla.bucketed(two, sizes=(8,), pad={"a": (0, 0), "b": (0, 0)})
    with pytest.raises(fxla.BucketError, match="different lengths"):
        serve(torch.ones(3), torch.ones(4))


def test_a_prompt_loop_through_generate_compiles_a_few_programs(fresh_dynamo):
    """Prompts of 20 lengths through ``generate`` (static cache), padded on the left to 3 buckets: the tokens are
    eager's (unpadded) for every prompt, and XLA compiles at most 6 programs per bucket (prefill and decode, padded
    and the two unpadded checks), not 2 per length."""
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
    generate = fxla.bucketed(model.generate, sizes=(8, 16, 32), side="left", check="bucket",
                             pad={"input_ids": (1, 0), "attention_mask": (1, 0)})
    before = compile_stats()["compiles"] + compile_stats()["disk_hits"]
    with torch.no_grad():
        for p, expected in zip(prompts, want):
            assert torch.equal(generate(input_ids=p, attention_mask=torch.ones_like(p), **options), expected)
    assert compile_stats()["compiles"] + compile_stats()["disk_hits"] - before <= 6 * 3


class Down(nn.Module):
    """Masked features downsampled by 2 (a strided front end): padding lengthens the output by half the padding."""

    def forward(self, x, mask):
        return nn.functional.avg_pool1d(x * mask[:, None, :], 2, 2)


@pytest.mark.parametrize("check", ["length", "bucket"])
def test_an_output_padding_lengthens_by_less_than_the_padding_is_cut_right_at_every_length(check):
    """(Once the plan learnt at a bucket's first length cut every other length by its padding: a (1, 3, 4) result
    where eager's is (1, 3, 10), and a raw narrow() error at length 10.)"""
    torch.manual_seed(0)
    model = Down()
    serve = fxla.bucketed(fxla.compile(model, dynamic=True), sizes=(32,), pad={"x": (2, 0.0), "mask": (1, 0.0)},
                          check=check)
    for length in (31, 20, 10, 20, 5):
        x, mask = torch.randn(1, 3, length), torch.ones(1, length)
        got, want = serve(x=x, mask=mask), model(x, mask)
        assert got.shape == want.shape == (1, 3, length // 2)
        torch.testing.assert_close(got, want)
    assert [sorted(c) for c in serve.plans.values()] == [[5, 10, 20, 31]]    # (each length checked: the cuts
    # are not the padding)
    assert serve.trusted == {}


def test_each_length_is_checked():
    """A model that padding changes at one length of a bucket only (a max over the first 8 positions, which see
    padding below length 8) is refused at that length, not answered with the padding's values."""
    def head(x):
        return x[:, :8].amax(1)

    serve = fxla.bucketed(fxla.compile(head, dynamic=True), sizes=(16,), pad={"x": (1, 0.0)})
    x = -torch.rand(2, 12) - 1
    torch.testing.assert_close(serve(x), head(x))
    with pytest.raises(fxla.BucketError, match="padding length 5 to the bucket 16 changes the result"):
        serve(-torch.rand(2, 5) - 1)
    x = -torch.rand(2, 9) - 1
    torch.testing.assert_close(serve(x), head(x))


def test_check_bucket_refuses_a_cut_that_does_not_fit():
    """``check="bucket"`` trusts the cut its first two lengths agreed on; where that cut does not fit an output it
    raises BucketError, not narrow()'s error."""
    def tail(x, mask):
        return (x * mask)[:, 20:]

    serve = fxla.bucketed(tail, sizes=(32,), pad={"x": (1, 0.0), "mask": (1, 0.0)}, check="bucket")
    for length in (30, 25):
        x, mask = torch.randn(2, length), torch.ones(2, length)
        torch.testing.assert_close(serve(x, mask), tail(x, mask))
    assert [key[0] for key in serve.trusted] == [32]
    with pytest.raises(fxla.BucketError, match="cannot cut the padding of length 10 .bucket 32. off output 0"):
        serve(torch.randn(2, 10), torch.ones(2, 10))


def test_a_plan_is_kept_per_other_arguments_and_output_layout():
    """A flag that changes the outputs' structure (a pooled output first) gets its own plan: the plan of the same
    length without it cut the pooled features (silently wrong shapes before)."""
    class Pools(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.l = torch.nn.Linear(6, 6)

        def forward(self, x, mask, pooled=False, options=None):
            h = self.l(x) * mask[..., None]
            mean = h.sum(1) / mask.sum(1, keepdim=True)
            return (mean, h) if pooled or (options or {}).get("pooled") else (h, mean)

    torch.manual_seed(0)
    model = Pools().eval()
    serve = fxla.bucketed(model, sizes=(8,), pad={"x": (1, 0.0), "mask": (1, 0)})
    x, mask = torch.randn(2, 5, 6), torch.ones(2, 5)
    with torch.no_grad():
        for pooled in (False, True, False, True):
            for got, want in zip(serve(x, mask, pooled=pooled), model(x, mask, pooled=pooled)):
                torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
            options = {"pooled": pooled}                # (a flag inside a dict argument)
            for got, want in zip(serve(x, mask, options=options), model(x, mask, options=options)):
                torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_positional_calls_of_a_torch_compiled_model_are_bucketed():
    class Masked(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.l = torch.nn.Linear(4, 4)

        def forward(self, x, mask):
            return self.l(x) * mask[..., None]

    torch.manual_seed(0)
    model = Masked().eval()
    serve = fxla.bucketed(torch.compile(model, backend="fxla"), sizes=(8,), pad={"x": (1, 0.0), "mask": (1, 0)})
    with torch.no_grad():
        for length in (5, 6):
            x, mask = torch.randn(2, length, 4), torch.ones(2, length)
            torch.testing.assert_close(serve(x, mask), model(x, mask))
    assert [sorted(c) for c in serve.plans.values()] == [[5, 6]]
