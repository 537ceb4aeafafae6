"""Gradients of ``fxla.compile(model, dynamic=...)`` modules (issue #21 with #22): one trace, lowering and
differentiation for every size of the marked dims, each size refining both halves; gradients equal eager's at
every size tried, and a VJP rule that needs a size as a number makes those gradients per size, never wrong."""
from __future__ import annotations

import logging

import pytest
import torch
import torch.nn.functional as F

import fxla
from fxla.lowering.autodiff import reduce as reduce_rules
from test_train_step import eager_step

SIZES = [(3, 5), (4, 7), (2, 9)]


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(16, 16)
        self.norm = torch.nn.LayerNorm(16)

    def forward(self, x):
        y = self.norm(self.proj(x)).softmax(-1)
        return (y * x).mean(1), x.var(1)


def _grads(fn, model, x):
    """(outputs, gradient of x, gradients of the parameters) through seeded random cotangents."""
    model.zero_grad()
    x = x.detach().clone().requires_grad_(True)
    outputs = fn(x)
    gen = torch.Generator().manual_seed(1)
    cts = [torch.randn(o.shape, generator=gen) for o in outputs]
    torch.autograd.backward(list(outputs), cts)
    return [o.detach() for o in outputs], x.grad, [p.grad.clone() for p in model.parameters()]


def _assert_same(got, want):
    for a, b in zip(got[0] + [got[1]] + got[2], want[0] + [want[1]] + want[2]):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def _check_sizes(fast, model, shapes):
    """Outputs and gradients of ``fast`` (compiled from ``model``) equal eager's for a random x of each shape."""
    for shape in shapes:
        x = torch.randn(*shape)
        _assert_same(_grads(fast, model, x), _grads(model, model, x))


def test_gradients_at_every_size_come_from_one_differentiation(caplog):
    torch.manual_seed(0)
    model = Block()
    fast = fxla.compile(model, dynamic={"x": {0: fxla.Dim("b"), 1: fxla.Dim("s")}})
    with caplog.at_level(logging.INFO, logger="fxla"):
        _check_sizes(fast, model, [(b, s, 16) for b, s in SIZES])
    made = [r.getMessage() for r in caplog.records if "differentiated once" in r.getMessage()]
    assert len(made) == 1 and "symbolic dims b, s" in made[0]
    assert not [r for r in caplog.records if "no polymorphic gradient" in r.getMessage()]
    (variants,) = fast._dynamic.gradients.values()
    assert len(variants) == 1
    # later sizes only refine: no trace, lowering or differentiation in their gradient compiles
    later = [r.getMessage() for r in caplog.records
             if "forward with residuals for input signature #3" in r.getMessage()]
    assert later and "phases: refine" in later[0] and "vjp" not in later[0] and "prepare" not in later[0]


def test_the_halves_are_polymorphic_and_the_backward_reads_its_sizes_off_an_input(monkeypatch):
    model = Block()
    fast = fxla.compile(model, dynamic={"x": {0: fxla.Dim("b"), 1: fxla.Dim("s")}})
    _grads(fast, model, torch.randn(3, 5, 16))
    (variants,) = fast._dynamic.gradients.values()
    assert all(half is not None for half in variants[0].stablehlo)
    # later sizes refine the halves' polymorphic StableHLO: no fxla -> StableHLO conversion
    converted = []
    monkeypatch.setattr(fast._pipeline, "to_stablehlo", lambda program: converted.append(program))
    _check_sizes(fast, model, [(b, s, 16) for b, s in SIZES[1:]])
    assert converted == []
    diff = variants[0].made
    forward, backward = diff.forward.text(), diff.backward.text()
    assert "tensor<?x?x16xf32>" in forward and "tensor<?x?x16xf32>" in backward
    assert "fxla.dim_size" in backward
    # the mean's 1 / s and the variance's 2 / (s - 1) are computed from the size, not a constant of the traced one
    assert "0.2" not in backward and "5.000000e-01" not in backward


class Attention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = torch.nn.MultiheadAttention(16, 4, batch_first=True)
        self.out = torch.nn.Linear(16, 3)

    def forward(self, x):
        y, _ = self.attn(x, x, x, need_weights=False)
        return (self.out(F.gelu(y)).sum(1),)


def test_attention_gradients_at_every_sequence_length():
    torch.manual_seed(0)
    model = Attention()
    fast = fxla.compile(model, dynamic={"x": {1: fxla.Dim("s")}})
    _check_sizes(fast, model, [(2, s, 16) for s in (4, 7, 2, 12)])
    assert sum(len(v) for v in fast._dynamic.gradients.values()) == 1


def test_a_training_loop_over_changing_lengths_equals_eager():
    torch.manual_seed(0)
    model, twin = Attention(), Attention()
    twin.load_state_dict(model.state_dict())
    fast = fxla.compile(model, dynamic=True)
    opt, twin_opt = (torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9) for m in (model, twin))
    gen = torch.Generator().manual_seed(3)
    for s in (5, 9, 3, 9, 6):
        x = torch.randn(2, s, 16, generator=gen)
        for m, o, step in ((fast, opt, model), (twin, twin_opt, twin)):
            o.zero_grad()
            m(x)[0].pow(2).mean().backward()
            o.step()
    for a, b in zip(model.parameters(), twin.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    assert sum(len(v) for v in fast._dynamic.gradients.values()) == 1


def test_a_vjp_rule_that_reads_a_size_as_a_number_fixes_it(monkeypatch, caplog):
    """The mean's VJP as it was before it kept the count symbolic (a float of the size): the size it read becomes a
    guard of the gradient programs, so each size gets programs of its own -- and eager's gradients."""
    original = reduce_rules._scalar_op

    def as_a_number(ctx, opdef, v, scalar):
        return original(ctx, opdef, v, float(scalar))
    monkeypatch.setattr(reduce_rules, "_scalar_op", as_a_number)
    torch.manual_seed(0)
    model = Block()
    fast = fxla.compile(model, dynamic={"x": {0: fxla.Dim("b"), 1: fxla.Dim("s")}})
    with caplog.at_level(logging.INFO, logger="fxla"):
        _check_sizes(fast, model, [(b, s, 16) for b, s in SIZES + [(5, 9)]])
    made = [r.getMessage() for r in caplog.records if "differentiated once" in r.getMessage()]
    assert len(made) == 3 and all("fixed by the program: s = " in m for m in made)      # (5, 9) reuses (2, 9)'s
    (variants,) = fast._dynamic.gradients.values()
    assert len(variants) == 3


def test_a_vjp_rule_without_a_symbolic_form_makes_those_gradients_per_size(monkeypatch, caplog):
    from fxla.dialects.fxla import ops
    from fxla.dialects.fxla.symbolic import NotPolymorphicError
    from fxla.lowering.autodiff.registry import VJP_RULES
    original = VJP_RULES[ops.softmax]

    def static_only(ctx, ct, x, **kwargs):
        if any(isinstance(d, torch.SymInt) for d in ctx.sig(x).shape):
            raise NotPolymorphicError("softmax: this rule needs static sizes")
        return original(ctx, ct, x, **kwargs)
    monkeypatch.setitem(VJP_RULES, ops.softmax, static_only)
    torch.manual_seed(0)
    model = Block()
    fast = fxla.compile(model, dynamic=True)
    with caplog.at_level(logging.INFO, logger="fxla"):
        _check_sizes(fast, model, [(b, s, 16) for b, s in SIZES])
    fallbacks = [r.getMessage() for r in caplog.records if "no polymorphic gradient" in r.getMessage()]
    assert len(fallbacks) == 1 and "softmax: this rule needs static sizes" in fallbacks[0]
    assert not fast._dynamic.gradients[next(iter(fast._dynamic.gradients))]       # (none made; no retry per size)


class Recurrent(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(4, 5, num_layers=2, bidirectional=True, proj_size=3)
        self.gru = torch.nn.GRU(4, 3, batch_first=True)
        self.rnn = torch.nn.RNN(4, 3, nonlinearity="relu")

    def forward(self, x):
        a, (h, c) = self.lstm(x)
        b, hb = self.gru(x.transpose(0, 1))
        r, hr = self.rnn(x)
        return a.sum(2), h, c, b.mean(1), hb, r, hr


@pytest.mark.parametrize("dynamic", [{"x": {0: fxla.Dim("t"), 1: fxla.Dim("b")}}, True], ids=["named", "all"])
def test_recurrent_layers_over_any_length_from_one_differentiation(dynamic, monkeypatch, caplog):
    """LSTM (with a projection) / GRU / RNN layers are loops whose trip count is the sequence length: the sequence
    length and the batch stay symbolic, forward and backward are one polymorphic StableHLO program each, and later
    sizes only refine them.  Under dynamic=True the input's feature dim is fixed to 4 by the program; a residual
    that keeps it (x.transpose(0, 1)) used to make the forward half per size (its StableHLO type had a ? there)."""
    torch.manual_seed(0)
    model = Recurrent()
    fast = fxla.compile(model, dynamic=dynamic)
    converted = []
    with caplog.at_level(logging.INFO, logger="fxla"):
        _check_sizes(fast, model, [(3, 2, 4)])
        monkeypatch.setattr(fast._pipeline, "to_stablehlo", lambda program: converted.append(program))
        _check_sizes(fast, model, [(7, 3, 4), (12, 4, 4)])
    assert converted == []
    made = [r.getMessage() for r in caplog.records if "differentiated once" in r.getMessage()]
    assert len(made) == 1
    assert not [r for r in caplog.records if "no polymorphic" in r.getMessage()]
    (variants,) = fast._dynamic.gradients.values()
    assert len(variants) == 1 and all(half is not None for half in variants[0].stablehlo)
    assert "tensor<?x?x20xf32>" in variants[0].made.forward.text()        # (the LSTM input projection [T, N, 4 * 5])


def test_torch_compile_training_differentiates_each_symbolic_graph_once(caplog):
    torch.manual_seed(0)
    model, twin = Attention(), Attention()
    twin.load_state_dict(model.state_dict())
    fast = torch.compile(model, backend="fxla")
    with caplog.at_level(logging.INFO, logger="fxla"):
        for s in (5, 9, 3, 7):
            x = torch.randn(2, s, 16)
            fast(x)[0].pow(2).sum().backward()
            twin(x)[0].pow(2).sum().backward()
    for a, b in zip(model.parameters(), twin.parameters()):
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-4, atol=1e-5)
    # dynamo's first graph is static (5), its second symbolic in the length (9, 3, 7): one differentiation
    made = [r.getMessage() for r in caplog.records if "differentiated once" in r.getMessage()]
    assert len(made) == 1
    assert not [r for r in caplog.records if "no polymorphic gradient" in r.getMessage()]


def test_hugging_face_gpt2_trains_over_changing_lengths_with_one_differentiation_per_graph(caplog):
    """A tiny GPT-2 with labels through the torch.compile backend: dynamo's symbolic graphs (the model's, the
    loss's) are each differentiated once; losses and every parameter's gradient equal eager's at every length."""
    import copy
    from support import tiny_gpt2
    model, _ = tiny_gpt2(head=True, layers=1)
    model.train()
    for m in model.modules():               # (dropout off: the two sides must see the same forward)
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    twin = copy.deepcopy(model)
    fast = torch.compile(model, backend="fxla")
    gen = torch.Generator().manual_seed(0)
    with caplog.at_level(logging.INFO, logger="fxla"):
        for s in (6, 9, 13):
            ids = torch.randint(0, 64, (2, s), generator=gen)
            loss = fast(input_ids=ids, labels=ids).loss
            want = twin(input_ids=ids, labels=ids).loss
            torch.testing.assert_close(loss, want, rtol=1e-5, atol=1e-6)
            loss.backward()
            want.backward()
    for (name, a), b in zip(model.named_parameters(), twin.parameters()):
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-4, atol=1e-6, msg=name)
    made = [r.getMessage() for r in caplog.records if "differentiated once" in r.getMessage()]
    assert len(made) == 2
    assert not [r for r in caplog.records if "no polymorphic gradient" in r.getMessage()]


def _train_alongside(step, models, twin_opt, loss_fn, batches, max_grad_norm=None):
    """Each batch through the compiled ``step`` and through eager steps of the twin model (``models``: the compiled
    one and its twin): equal losses at every step, equal parameters after the last."""
    model, twin = models
    for batch in batches:
        loss = step(*batch)
        want = eager_step(twin, twin_opt, loss_fn, batch, max_grad_norm)
        torch.testing.assert_close(loss, want.detach(), rtol=1e-5, atol=1e-6)
    for a, b in zip(model.parameters(), twin.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_compile_step_with_dynamic_lowers_the_step_once_for_every_length(caplog):
    """fxla.compile_step(..., dynamic=): forward, backward, clipping and the SGD update traced, lowered and
    differentiated once; each new length refines the step program and compiles it; the parameters after the steps
    equal eager's."""
    torch.manual_seed(0)
    model, twin = Attention(), Attention()
    twin.load_state_dict(model.state_dict())
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    twin_opt = torch.optim.SGD(twin.parameters(), lr=0.05, momentum=0.9)

    def loss_fn(m, x, y):
        return F.mse_loss(m(x)[0], y)
    step = fxla.compile_step(model, opt, loss_fn, max_grad_norm=1.0, dynamic={"x": {1: fxla.Dim("s")}})
    gen = torch.Generator().manual_seed(1)
    batches = [(torch.randn(2, s, 16, generator=gen), torch.randn(2, 3, generator=gen)) for s in (5, 9, 3, 9, 6)]
    with caplog.at_level(logging.INFO, logger="fxla"):
        _train_alongside(step, (model, twin), twin_opt, loss_fn, batches, max_grad_norm=1.0)
    made = [r.getMessage() for r in caplog.records if "the training step traced" in r.getMessage()]
    assert len(made) == 1 and "symbolic dims s" in made[0]
    assert step.compiles == 4                       # one XLA executable per length, one lowering in all
    with pytest.raises(fxla.errors.FxlaError, match="a partitioned step takes static shapes"):
        fxla.compile_step(model, opt, loss_fn, dynamic=True, mesh=object())


def test_remat_recomputes_the_polymorphic_forward_inside_the_backward():
    """remat=True: the backward copies the forward's ops (their size operands too: dim_size of the inputs it takes)
    instead of saving residuals; still one differentiation, still eager's gradients."""
    torch.manual_seed(0)
    model = Block()
    fast = fxla.compile(model, dynamic=True, remat=True)
    _check_sizes(fast, model, [(b, s, 16) for b, s in SIZES])
    (variants,) = fast._dynamic.gradients.values()
    assert len(variants) == 1 and variants[0].made.residuals == 0


class Tagger(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(50, 8)
        self.lstm = torch.nn.LSTM(8, 12, num_layers=2, bidirectional=True, batch_first=True)
        self.out = torch.nn.Linear(24, 5)

    def forward(self, ids):
        return self.out(self.lstm(self.emb(ids))[0])


def test_a_recurrent_tagger_trains_over_changing_lengths_from_one_step_program(caplog):
    """A whole Adam training step of an embedding + 2-layer bidirectional LSTM tagger with a symbolic sequence
    length: lowered and differentiated once, one XLA executable per length, losses and parameters equal eager's
    step for step."""
    torch.manual_seed(0)
    model, twin = Tagger(), Tagger()
    twin.load_state_dict(model.state_dict())
    opt, twin_opt = (torch.optim.Adam(m.parameters(), lr=1e-2) for m in (model, twin))

    def loss_fn(m, ids, tags):
        return F.cross_entropy(m(ids).flatten(0, 1), tags.flatten())
    seq = fxla.Dim("seq")
    step = fxla.compile_step(model, opt, loss_fn, dynamic={"ids": {1: seq}, "tags": {1: seq}})
    gen = torch.Generator().manual_seed(1)
    batches = [(torch.randint(0, 50, (3, n), generator=gen), torch.randint(0, 5, (3, n), generator=gen))
               for n in (12, 20, 7, 12)]
    with caplog.at_level(logging.INFO, logger="fxla"):
        _train_alongside(step, (model, twin), twin_opt, loss_fn, batches)
    made = [r.getMessage() for r in caplog.records if "the training step traced" in r.getMessage()]
    assert len(made) == 1 and "symbolic dims seq" in made[0]
    assert step.compiles == 3
