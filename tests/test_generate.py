"""Hugging Face ``generate()`` with a static KV cache through ``torch.compile(backend="fxla")`` (issue #21, item 3).

The recipe (docs/tutorial.md, "Generate with a static cache")::

    model.forward = torch.compile(model.forward, backend="fxla")
    model.generate(ids, max_new_tokens=n, do_sample=False, cache_implementation="static")

Dynamo hands fxla two graphs: the prefill, which makes the cache (``torch.zeros`` of the cache's full size, then
``index_copy_`` of the prompt's keys and values into it: a tensor made from constants and changed with traced
values, fxla.frontend.factories) and advances ``cumulative_length`` through ``.to(device)`` (the input itself:
written back, fxla.frontend.passes.aliasing.whole_root); and the decode step, whose cache tensors are graph inputs
changed in place (``index_copy_`` at ``cache_position``, ``add_``), written back after each call.  Every decode
step has the same shapes, so the whole generate compiles two XLA executables, and the tokens are eager's.
"""
from __future__ import annotations

import logging

import pytest
import torch

from fxla.runtime import compile_stats

transformers = pytest.importorskip("transformers")
transformers.logging.set_verbosity_error()

PROMPT = 8
VOCAB = 128


def _gpt2():
    return transformers.GPT2LMHeadModel(transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=VOCAB,
                                                                n_positions=256, bos_token_id=0, eos_token_id=None))


def _llama():
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4, intermediate_size=128,
        vocab_size=VOCAB, bos_token_id=0, eos_token_id=None, pad_token_id=0))


def _model(build):
    torch.manual_seed(0)
    model = build().eval()
    model.generation_config.eos_token_id = None        # every run generates all its tokens
    model.generation_config.pad_token_id = 0
    return model


def _generate(model, ids, new_tokens):
    with torch.no_grad():
        return model.generate(ids, max_new_tokens=new_tokens, do_sample=False, cache_implementation="static")


@pytest.fixture
def dynamo():
    """A fresh dynamo (no graphs cached by another test) and its counters."""
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    yield torch._dynamo.utils.counters
    torch._dynamo.reset()


@pytest.mark.parametrize("new_tokens", [32, pytest.param(128, marks=pytest.mark.slow)])
@pytest.mark.parametrize("build", [_gpt2, _llama], ids=["gpt2", "llama"])
def test_static_cache_generate_matches_eager_with_two_compiles(build, new_tokens, dynamo):
    model = _model(build)
    ids = torch.randint(0, VOCAB, (1, PROMPT), generator=torch.Generator().manual_seed(1))
    want = _generate(model, ids, new_tokens)
    assert want.shape == (1, PROMPT + new_tokens)

    model.forward = torch.compile(model.forward, backend="fxla")
    before = compile_stats()["compiles"]
    got = _generate(model, ids, new_tokens)
    assert torch.equal(got, want)
    # prefill and decode: one dynamo graph and one XLA executable each (the issue allows at most 3)
    assert dynamo["stats"]["unique_graphs"] == 2, dict(dynamo["stats"])
    assert dynamo["graph_break"] == {}, dict(dynamo["graph_break"])
    assert compile_stats()["compiles"] - before == 2

    again = _generate(model, ids, new_tokens)         # warm: the same executables, the cache reset by generate
    assert torch.equal(again, want)
    assert compile_stats()["compiles"] - before == 2
    assert dynamo["stats"]["unique_graphs"] == 2


def test_static_cache_generate_with_another_prompt_length(dynamo):
    """A prompt of another length compiles one more prefill, not another decode step (``dynamic=False``: one
    prefill per prompt length; generate keeps the model's static cache, of the first length it was made for, while
    it is long enough); a length seen before compiles nothing."""
    model = _model(_gpt2)
    prompts = [torch.randint(0, VOCAB, (1, n), generator=torch.Generator().manual_seed(n)) for n in (8, 5, 8)]
    want = [_generate(model, ids, 8) for ids in prompts]
    model.forward = torch.compile(model.forward, backend="fxla", dynamic=False)
    compiles = []
    for ids, expected in zip(prompts, want):
        before = compile_stats()["compiles"]
        assert torch.equal(_generate(model, ids, 8), expected)
        compiles.append(compile_stats()["compiles"] - before)
    assert compiles == [2, 1, 0]


@pytest.mark.parametrize("build,new_tokens", [(_gpt2, 24), (_llama, 12), pytest.param(_gpt2, 128, marks=pytest.mark.slow)],
                         ids=["gpt2", "llama", "gpt2-128"])
def test_dynamic_cache_generate_lowers_the_decode_step_once(build, new_tokens, dynamo, caplog):
    """The default (dynamic) cache: dynamo hands over a decode graph whose cache length is a symbol; fxla lowers it
    once (a polymorphic program, docs/shapes.md) and refines it for every length (XLA compiles one executable per
    length); the tokens are eager's."""
    model = _model(build)
    ids = torch.randint(0, VOCAB, (1, PROMPT), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        want = model.generate(ids, max_new_tokens=new_tokens, do_sample=False)
    model.forward = torch.compile(model.forward, backend="fxla")
    with caplog.at_level(logging.INFO, logger="fxla.compile"), torch.no_grad():
        got = model.generate(ids, max_new_tokens=new_tokens, do_sample=False)
    assert torch.equal(got, want)
    lowered = [r.getMessage() for r in caplog.records if "polymorphic program #" in r.getMessage()]
    assert len(lowered) == 1 and "keys.size(2)" in lowered[0], lowered        # the decode step, once
    refined = [r.getMessage() for r in caplog.records if "refine " in r.getMessage()]
    assert len(refined) >= new_tokens - 2                                     # one refinement per cache length


def test_prompts_of_other_lengths_reuse_one_polymorphic_prefill(dynamo, caplog):
    """Dynamo makes the prompt length a symbol at the second length; fxla lowers that prefill graph once (the
    causal mask of scaled_dot_product_attention from iotas, the embedding's flattened indices symbolic) and every
    later length only refines it; the tokens are eager's."""
    model = _model(_gpt2)
    prompts = [torch.randint(0, VOCAB, (1, n), generator=torch.Generator().manual_seed(n)) for n in (8, 5, 11, 6)]
    with torch.no_grad():
        want = [model.generate(ids, max_new_tokens=3, do_sample=False) for ids in prompts]
    model.forward = torch.compile(model.forward, backend="fxla")
    with caplog.at_level(logging.INFO, logger="fxla.compile"), torch.no_grad():
        for ids, expected in zip(prompts, want):
            assert torch.equal(model.generate(ids, max_new_tokens=3, do_sample=False), expected)
    prefill = [r.getMessage() for r in caplog.records
               if "polymorphic program #" in r.getMessage() and "input_ids_.size(1)" in r.getMessage()]
    assert len(prefill) == 1 and "fixed by the program" not in prefill[0], prefill
