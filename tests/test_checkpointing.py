"""Activation checkpointing (torch.utils.checkpoint, Hugging Face's gradient_checkpointing_enable()) is traced as the
plain call it is, on every route, with eager's values and gradients; what eager computes otherwise is refused
(fxla.frontend.checkpointing).  Also: a concrete tensor's size-vararg method with a traced size (``expand``)."""
from __future__ import annotations

import copy
import functools

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint, checkpoint_sequential, create_selective_checkpoint_contexts

import fxla
from fxla.frontend.errors import TraceError

TOL = dict(rtol=1e-5, atol=1e-5)
ROUTES = ["fxla", "concrete", "dynamic", "dynamo"]


def _compiled(model, route):
    if route == "dynamo":
        return torch.compile(model, backend="fxla")
    return fxla.compile(model, **{"fxla": {}, "concrete": {"concrete_shapes": True},
                                  "dynamic": {"dynamic": True}}[route])


class Checkpointed(nn.Module):
    def __init__(self, case):
        super().__init__()
        self.case = case
        self.a = nn.Linear(4, 8)
        self.b = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 8))
        self.c = nn.Linear(4, 8)

    def block(self, h, scale=1.0):
        return self.b(h) * scale + h

    def forward(self, x):
        h = self.a(x)
        if self.case == "non_reentrant":
            return checkpoint(self.block, h, use_reentrant=False)
        if self.case == "non_reentrant_kwargs":
            return checkpoint(self.block, h, scale=0.5, use_reentrant=False, preserve_rng_state=False)
        if self.case == "on_input":
            return checkpoint(lambda t: self.block(self.c(t)), x, use_reentrant=False)
        if self.case == "reentrant":
            return checkpoint(self.block, h, use_reentrant=True)
        if self.case == "sequential":
            return checkpoint_sequential(self.b, 2, h, use_reentrant=False)
        if self.case == "selective":
            policy = functools.partial(create_selective_checkpoint_contexts, [torch.ops.aten.mm.default])
            return checkpoint(self.block, h, use_reentrant=False, context_fn=policy)
        raise AssertionError(self.case)


def _grads(model, x, out):
    out.pow(2).sum().backward()
    return [x.grad] + [p.grad for p in model.parameters()]


@pytest.mark.usefixtures("fresh_dynamo")
@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("case", ["non_reentrant", "non_reentrant_kwargs", "on_input", "reentrant", "sequential",
                                  "selective"])
def test_checkpointed_forward_and_gradients_match_eager(route, case):
    if route == "dynamo" and case in ("selective", "sequential"):
        pytest.skip("dynamo itself checks a selective policy's ops; checkpoint_sequential: no HOP to test")
    torch.manual_seed(0)
    model = Checkpointed(case)
    reference = copy.deepcopy(model)
    x = torch.randn(3, 4, requires_grad=True)
    x_ref = x.detach().clone().requires_grad_()
    expected = reference(x_ref)
    out = _compiled(model, route)(x)
    torch.testing.assert_close(out, expected, **TOL)
    for got, want in zip(_grads(model, x, out), _grads(reference, x_ref, expected)):
        torch.testing.assert_close(got, want, **TOL)
    # torch's own checkpoint is back: eager checkpointing still works after the trace
    assert torch.utils.checkpoint._checkpoint_without_reentrant_generator.__module__ == "torch.utils.checkpoint"
    assert "apply" not in torch.utils.checkpoint.CheckpointFunction.__dict__


class DropoutInside(nn.Module):
    def __init__(self, preserve=True):
        super().__init__()
        self.preserve = preserve
        self.w = nn.Parameter(torch.linspace(0.5, 1.5, 16).reshape(2, 8))

    def body(self, x):
        return F.dropout(x * self.w, 0.5, self.training)

    def forward(self, x):
        return checkpoint(self.body, x, use_reentrant=False, preserve_rng_state=self.preserve)


@pytest.mark.usefixtures("fresh_dynamo")
@pytest.mark.parametrize("route", ROUTES)
def test_dropout_inside_a_checkpoint_uses_the_forward_mask_in_backward(route):
    # eager's recomputation with preserve_rng_state=True reuses the forward's mask: the gradient of w is x where
    # the output kept its element (scaled by 2), 0 where the dropout dropped it
    model = DropoutInside().train()
    x = torch.rand(2, 8) + 1.0
    out = _compiled(model, route)(x)
    out.sum().backward()
    kept = out != 0
    assert 0 < int(kept.sum()) < 16
    torch.testing.assert_close(model.w.grad, torch.where(kept, 2 * x, torch.zeros_like(x)), **TOL)


def test_a_random_op_in_a_checkpoint_without_preserve_rng_state_is_refused():
    model = DropoutInside(preserve=False).train()
    with pytest.raises(TraceError, match="preserve_rng_state=False") as info:
        fxla.compile(model)(torch.rand(2, 8))
    assert "fix: pass preserve_rng_state=True" in str(info.value) and "test_checkpointing.py" in str(info.value)
    # without a draw (eval mode: the dropout is off) there is nothing to refuse
    model.eval()
    x = torch.rand(2, 8)
    torch.testing.assert_close(fxla.compile(model)(x), model(x), **TOL)


def test_a_custom_context_fn_is_refused():
    def contexts():
        return torch.autocast("cpu", torch.bfloat16), torch.autocast("cpu", torch.bfloat16)

    class Custom(nn.Module):
        def forward(self, x):
            return checkpoint(torch.sin, x, use_reentrant=False, context_fn=contexts)

    with pytest.raises(TraceError, match="context_fn=.* is not supported while fxla traces"):
        fxla.compile(Custom())(torch.rand(3))


def _gpt2(reentrant):
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=100, n_positions=32,
                                     bos_token_id=0, eos_token_id=0, resid_pdrop=0.0, embd_pdrop=0.0,
                                     attn_pdrop=0.0)
    model = transformers.GPT2LMHeadModel(config)
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": reentrant})
    return model.train()


def _gpt2_loss(m, ids):
    return m(input_ids=ids, labels=ids).loss


def _assert_same_parameters(model, reference):
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p, q, **TOL, msg=name)


@pytest.mark.slow
@pytest.mark.parametrize("reentrant", [False, True])
def test_hf_gpt2_with_gradient_checkpointing_trains_like_eager_in_compile_step(reentrant):
    model = _gpt2(reentrant)
    reference = copy.deepcopy(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    ref_optimizer = torch.optim.SGD(reference.parameters(), lr=0.1)
    step = fxla.compile_step(model, optimizer, _gpt2_loss, concrete_shapes=True)
    gen = torch.Generator().manual_seed(1)
    for _ in range(2):
        ids = torch.randint(0, 100, (2, 8), generator=gen)
        loss = step(ids)
        ref_optimizer.zero_grad()
        ref_loss = _gpt2_loss(reference, ids)
        ref_loss.backward()
        ref_optimizer.step()
        torch.testing.assert_close(loss, ref_loss.detach(), **TOL)
        _assert_same_parameters(model, reference)


@pytest.mark.slow
@pytest.mark.usefixtures("fresh_dynamo")
@pytest.mark.parametrize("reentrant", [False, True])
def test_hf_gpt2_with_gradient_checkpointing_trains_like_eager_under_torch_compile(reentrant):
    model = _gpt2(reentrant)
    reference = copy.deepcopy(model)
    compiled = torch.compile(model, backend="fxla")
    gen = torch.Generator().manual_seed(1)
    for _ in range(2):
        ids = torch.randint(0, 100, (2, 8), generator=gen)
        loss, ref_loss = _gpt2_loss(compiled, ids), _gpt2_loss(reference, ids)
        torch.testing.assert_close(loss, ref_loss, **TOL)
        loss.backward()
        ref_loss.backward()
        with torch.no_grad():
            for (name, p), q in zip(model.named_parameters(), reference.parameters()):
                torch.testing.assert_close(p.grad, q.grad, **TOL, msg=name)
                p -= 0.1 * p.grad
                q -= 0.1 * q.grad
                p.grad = q.grad = None


# ---- a concrete tensor's method with traced sizes among its varargs -------------------------------------------------
@pytest.mark.parametrize("kw", [{}, {"dynamic": True}], ids=["default", "dynamic"])
@pytest.mark.parametrize("fn", [
    lambda x: x.gather(2, torch.tensor([[[0, 6]]]).expand(x.shape[0], x.shape[1], 2)),
    lambda x: x + torch.ones(1, 1, 12).expand(x.shape[0], x.shape[1], 12),
    lambda x: x + torch.ones(1).new_zeros(x.shape[0], 3, 12),
    lambda x: x + torch.ones(1).new_ones(x.shape[0], x.shape[1], 12),
], ids=["expand_gather", "expand", "new_zeros", "new_ones"])
def test_a_concrete_tensors_method_with_traced_varargs_sizes(fn, kw):
    x = torch.randn(2, 3, 12)
    torch.testing.assert_close(fxla.compile(fn, **kw)(x), fn(x))
    assert "expand" not in torch.Tensor.__dict__


@pytest.mark.parametrize("kw", [{}, {"dynamic": True}], ids=["default", "dynamic"])
@pytest.mark.parametrize("fn", [
    lambda x: x + torch.ones(1, 1, 12).expand((x.shape[0], x.shape[1], 12)),
    lambda x: x + torch.ones(1, 1, 12).expand(x.shape),
    lambda x: x + torch.ones(1).new_zeros((x.shape[0], 3, 12)),
], ids=["expand_tuple", "expand_shape", "new_zeros_tuple"])
def test_the_sizes_as_one_tuple_still_trace(fn, kw):
    # (the patched method is what torch hands __torch_function__ for these: they are recorded as the method)
    x = torch.randn(2, 3, 12)
    torch.testing.assert_close(fxla.compile(fn, **kw)(x), fn(x))
