"""Changes made to a compiled model from outside forward: plain attributes forward reads (fxla.frontend.
attribute_reads, fxla.attribute_watch) run a trace for their new values, and a structure change (a submodule,
parameter or buffer replaced, added or removed: fxla.structure_watch) is a clear error -- never the old
program's answer."""
from __future__ import annotations

import logging
import types

import pytest
import torch
from torch import nn

import fxla
from support import tiny_gpt2


class Knobs(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.act = nn.LeakyReLU(0.1)
        self.scale = 2.0
        self.use_relu = False
        self.config = types.SimpleNamespace(gate=True, bias=0.5)

    def forward(self, x):
        y = self.act(self.lin(x)) * self.scale
        if self.config.gate:
            y = y + self.config.bias
        return y.relu() if self.use_relu else y


def _same(fast, model, x):
    torch.testing.assert_close(fast(x), model(x))


@pytest.mark.parametrize("concrete", [False, True])
def test_plain_attributes_forward_reads_are_watched(concrete):
    torch.manual_seed(0)
    model, x = Knobs(), torch.randn(3, 4)
    fast = fxla.compile(model, concrete_shapes=concrete)
    _same(fast, model, x)
    model.scale = 3.0                           # a number forward reads
    _same(fast, model, x)
    model.use_relu = True                       # a flag forward branches on
    _same(fast, model, x)
    model.act.negative_slope = 0.5              # a leaf module's attribute its lowering reads
    _same(fast, model, x)
    model.config.gate = False                   # an attribute of a configuration object forward reads
    _same(fast, model, x)
    model.config.gate, model.scale = True, 2.0
    _same(fast, model, x)


def test_going_back_to_earlier_values_reuses_their_trace(caplog):
    torch.manual_seed(0)
    model, x = Knobs(), torch.randn(3, 4)
    fast = fxla.compile(model)
    with caplog.at_level(logging.INFO, logger="fxla"):
        for scale in (2.0, 3.0, 2.0, 3.0, 2.0):
            model.scale = scale
            _same(fast, model, x)
    compiles = [r.getMessage() for r in caplog.records if "compiled input signature" in r.getMessage()]
    assert len(compiles) == 2 and "scale: 2.0 -> 3.0" in compiles[1], compiles


def test_the_recompile_log_names_the_attribute(caplog):
    torch.manual_seed(0)
    model, x = Knobs(), torch.randn(3, 4)
    fast = fxla.compile(model)
    fast(x)
    model.scale = 5.0
    with caplog.at_level(logging.DEBUG, logger="fxla"):
        fast(x)
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "scale: 2.0 -> 5.0" in text, text


def test_an_attribute_changed_on_every_call_is_refused_after_the_bound():
    torch.manual_seed(0)
    model, x = Knobs(), torch.randn(3, 4)
    fast = fxla.compile(model)
    with pytest.raises(fxla.modes.StateChangeError, match=r"the plain value\(s\) scale changed on call after call"):
        for i in range(20):
            model.scale = float(i)
            _same(fast, model, x)
    assert i >= fxla.modes.MAX_STATE_TRACES - 1


class Shadowed(nn.Module):
    scale = 1.0                                 # a class attribute the instance overrides: not hidden while tracing

    def __init__(self):
        super().__init__()
        self.scale = 2.0
        self.order = "kept"

    def forward(self, x):
        return x * self.scale


def test_tracing_leaves_the_module_as_it_was():
    model = Shadowed()
    before = list(vars(model))
    fast = fxla.compile(model)
    x = torch.ones(2)
    torch.testing.assert_close(fast(x), x * 2)
    assert list(vars(model)) == before and model.scale == 2.0 and model.order == "kept"


class Broken(nn.Module):
    def __init__(self):
        super().__init__()
        self.width = 3

    def forward(self, x):
        return x.view(self.width, -1).undefined_method()


def test_a_failed_trace_puts_the_attributes_back():
    model = Broken()
    before = dict(vars(model))
    with pytest.raises(Exception):
        fxla.compile(model)(torch.ones(6))
    assert vars(model) == before


def test_replacing_a_submodule_is_a_clear_error_until_it_is_put_back():
    torch.manual_seed(0)
    model, x = nn.Sequential(nn.Linear(4, 4), nn.ReLU()), torch.randn(3, 4)
    fast = fxla.compile(model)
    _same(fast, model, x)
    relu = model[1]
    model[1] = nn.Tanh()
    with pytest.raises(fxla.modes.ModelStructureError) as info:
        fast(x)
    message = str(info.value)
    assert "module `1` replaced (ReLU -> Tanh)" in message and "fix: compile the model again" in message
    assert __file__ in message                  # (the call's line)
    model[1] = relu
    _same(fast, model, x)
    model.append(nn.Linear(4, 2))
    with pytest.raises(fxla.modes.ModelStructureError, match=r"module `2` \(Linear\) added"):
        fast(x)
    _same(fxla.compile(model), model, x)        # (compiled again: the new structure)


def test_replacing_a_parameter_object_is_a_clear_error():
    torch.manual_seed(0)
    model, x = nn.Linear(4, 4), torch.randn(3, 4)
    fast = fxla.compile(model)
    _same(fast, model, x)
    model.weight = nn.Parameter(torch.randn(4, 4))
    with pytest.raises(fxla.modes.ModelStructureError, match=r"parameter `weight` replaced"):
        fast(x)
    with torch.no_grad():                       # (new values in place: seen, no error)
        model.weight.mul_(2)
    fxla.compile(model)                         # (another compiled module of the same model is not affected)


def test_models_made_elsewhere_do_not_slow_or_break_the_call():
    torch.manual_seed(0)
    model, x = Knobs(), torch.randn(3, 4)
    fast = fxla.compile(model)
    _same(fast, model, x)
    for _ in range(3):
        nn.Linear(2, 2)                         # (registrations into other modules: no check, no error)
        _same(fast, model, x)


def test_hugging_face_config_changes_are_seen():
    model, ids = tiny_gpt2(head=False)
    fast = fxla.compile(model, concrete_shapes=True)
    assert len(fast(ids)) == len(model(ids))
    model.config.output_hidden_states = True    # read from the config by forward
    got, want = fast(ids), model(ids)
    assert got.hidden_states is not None and len(got.hidden_states) == len(want.hidden_states)
    for g, w in zip(got.hidden_states, want.hidden_states):
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-4)


def test_a_collected_compiled_module_leaves_no_watch_behind():
    import gc
    from fxla import structure_watch
    model = nn.Sequential(nn.Linear(4, 4))
    fast = fxla.compile(model)
    fast(torch.ones(1, 4))
    assert id(model) in structure_watch._WATCHES
    del fast
    gc.collect()
    assert id(model) not in structure_watch._WATCHES
    model[0] = nn.Linear(4, 4)                  # (no watch left to mark)


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.cfg = types.SimpleNamespace(gate=False)
        self.dims = (0,)

    def forward(self, x):
        y = x + 1 if self.cfg.gate else x - 1
        return y.sum(self.dims) if isinstance(self.dims, (tuple, list)) else y * self.dims


def test_a_replaced_configuration_object_is_watched_in_turn():
    model, x = Gate(), torch.zeros(2, 3)
    fast = fxla.compile(model)
    _same(fast, model, x)
    model.cfg = types.SimpleNamespace(gate=True)
    _same(fast, model, x)
    model.cfg.gate = False                      # (an attribute of the new object)
    _same(fast, model, x)


def test_values_that_become_lists_or_tensors_are_compared_safely():
    model, x = Gate(), torch.ones(2, 3)
    fast = fxla.compile(model)
    _same(fast, model, x)
    model.dims = [1]
    _same(fast, model, x)
    model.dims = torch.full((3,), 3.0)
    _same(fast, model, x)
    model.dims = (0,)
    _same(fast, model, x)


class Tracker:
    def __init__(self):
        self.enabled, self.step = True, 0


class Tracked(nn.Module):
    def __init__(self):
        super().__init__()
        self.tracker = Tracker()

    def forward(self, x):
        return x * 2 if self.tracker.enabled else x


def test_only_the_attributes_forward_reads_of_a_helper_object_are_watched():
    model, x = Tracked(), torch.ones(2)
    fast = fxla.compile(model)
    for i in range(2 * fxla.modes.MAX_STATE_TRACES):
        model.tracker.step = i                  # (not read by forward: no trace)
        _same(fast, model, x)
    assert len(fast._modes.traces) == 1
    model.tracker.enabled = False
    _same(fast, model, x)


class Lazy(nn.Module):
    def forward(self, x):
        if not hasattr(self, "act"):
            self.act = nn.GELU()                # (a submodule made on the first call)
        return self.act(x) + repr(self.act).count("GELU")


def test_a_submodule_forward_makes_on_its_first_call_is_not_a_structure_change():
    model, x = Lazy(), torch.randn(3)
    fast = fxla.compile(model)
    for _ in range(2):
        _same(fast, model, x)


def test_a_torch_layer_compiled_alone_watches_its_own_attributes():
    layer, x = nn.LeakyReLU(0.1), torch.randn(5)
    fast = fxla.compile(layer)
    _same(fast, layer, x)
    layer.negative_slope = 0.5
    _same(fast, layer, x)


def test_an_instance_value_over_a_class_attribute_is_watched():
    model, x = Shadowed(), torch.ones(2)
    fast = fxla.compile(model)
    _same(fast, model, x)
    model.scale = 7.0
    _same(fast, model, x)


class Fill(nn.Module):
    def __init__(self):
        super().__init__()
        self.fill = 1
        self.cfg = types.SimpleNamespace(sizes=[1.0, 2.0], table={"k": 1.0})

    def forward(self, x):
        return torch.full_like(x, self.fill, dtype=torch.tensor(self.fill).dtype) * self.cfg.sizes[0] \
            + self.cfg.table["k"] + getattr(self, "gain", 0.0)


def test_types_in_place_edits_and_attributes_set_later_are_seen():
    model, x = Fill(), torch.ones(2)
    fast = fxla.compile(model)
    _same(fast, model, x)
    for change in (lambda: setattr(model, "fill", 1.0), lambda: setattr(model, "fill", True),
                   lambda: model.cfg.sizes.__setitem__(0, 3.0), lambda: model.cfg.table.update(k=5.0),
                   lambda: setattr(model, "gain", 2.0)):       # (read with getattr's default when traced)
        change()
        got, want = fast(x), model(x)
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want)


class Aliased(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale, self.lin = 2.0, nn.Linear(2, 2)

    def __getattribute__(self, name):           # (its own lookup: reads of it count as reading every attribute)
        return super().__getattribute__("scale" if name == "alias" else name)

    def forward(self, x):
        if not hasattr(self, "act"):
            self.act = nn.LeakyReLU(0.1)        # (a layer made on the first call: its attributes are watched too)
        return self.act(self.lin(x)) * self.alias


def test_own_lookups_and_layers_made_by_forward_are_watched():
    torch.manual_seed(0)
    model, x = Aliased(), torch.randn(3, 2)
    fast = fxla.compile(model)
    _same(fast, model, x)
    model.scale = 7.0
    _same(fast, model, x)
    model.act.negative_slope = 0.9
    _same(fast, model, x)


class NoDict:
    __slots__ = ()

    def __getattr__(self, name):
        raise KeyError(name)


class Odd(nn.Module):
    def __init__(self):
        super().__init__()
        self.helper, self.lin = NoDict(), nn.Linear(2, 2)

    def forward(self, x):
        return self.lin(x)


def test_a_helper_whose_getattr_raises_neither_breaks_tracing_nor_leaves_classes_patched():
    from fxla.frontend import attribute_reads
    model, x = Odd(), torch.randn(1, 2)
    _same(fxla.compile(model), model, x)
    assert not attribute_reads._INSTALLED and not attribute_reads._RECORDED
    assert "__getattribute__" not in vars(Odd) and "__getattribute__" not in vars(nn.Linear)


def test_the_graph_stays_copyable():
    import copy
    import threading
    model = Knobs()
    model.config.lock = threading.Lock()        # (a value deepcopy refuses)
    gm = fxla.symbolic_trace(model)
    assert gm.graph.meta["attribute_reads"]["scale"] == 2.0
    copy.deepcopy(gm)


class Slow(nn.Module):
    def __init__(self, started, release):
        super().__init__()
        self.lin, self.started, self.release = nn.Linear(2, 2), started, release

    def forward(self, x):
        self.started.set()
        self.release.wait(10)                   # (the trace waits here while the main thread writes)
        return self.lin(x)


def test_a_write_from_another_thread_during_a_trace_is_the_writers_own():
    import threading
    started, release = threading.Event(), threading.Event()
    model, other = Slow(started, release), nn.Linear(2, 2)
    done = {}
    worker = threading.Thread(target=lambda: done.setdefault("fast", fxla.compile(model)))
    worker.start()
    assert started.wait(10)
    model.note = "set by the main thread"       # (not forward's write: kept after the trace)
    x = torch.ones(1, 2)
    torch.testing.assert_close(other(x), x @ other.weight.T + other.bias)    # (an eager call meanwhile)
    release.set()
    worker.join(30)
    assert model.note == "set by the main thread"
    _same(done["fast"], model, x)


class WithOptions(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin, self.options = nn.Linear(2, 2), Tracker()

    def forward(self, x):
        y = self.lin(x)
        return y * 2 if getattr(self.options, "double", False) else y    # (`double` is also an nn.Module method)


def test_an_optional_attribute_of_an_object_set_later_is_seen():
    torch.manual_seed(0)
    model, x = WithOptions(), torch.randn(3, 2)
    fast = fxla.compile(model)
    _same(fast, model, x)
    model.options.double = True
    _same(fast, model, x)


class GrowingCache(nn.Module):
    """Registers a longer buffer when a call is longer than it (the old rotary-cache pattern)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("cache", torch.arange(4.0), persistent=False)

    def forward(self, x):
        n = x.shape[-1]
        if n > self.cache.shape[0]:
            self.register_buffer("cache", torch.arange(float(n)) * 2, persistent=False)
        return x + self.cache[:n]


class SwapsOnLength(nn.Module):
    """Replaces a buffer by one of the same shape and other values at one length: a stale resident buffer or
    trace would give the other values silently."""

    def __init__(self):
        super().__init__()
        self.register_buffer("w", torch.ones(4))

    def forward(self, x):
        if x.shape[0] == 5:
            self.register_buffer("w", torch.full((4,), 2.0))
        return x.sum() * self.w


@pytest.mark.parametrize("dynamic", [False, True])
def test_a_buffer_forward_registers_anew_drops_the_traces_that_hold_the_old_one(dynamic, caplog):
    model, eager = GrowingCache(), GrowingCache()
    fast = fxla.compile(model, concrete_shapes=True, dynamic=dynamic or None)
    with caplog.at_level(logging.INFO, logger="fxla"):
        for n in (3, 6, 3, 6, 8, 3, 5):
            x = torch.randn(2, n)
            torch.testing.assert_close(fast(x), eager(x))
    assert "a trace changed the model's structure (buffer `cache` replaced" in caplog.text
    assert "which was dropped when a trace changed the model's structure" in caplog.text or dynamic


def test_a_same_shape_buffer_forward_replaces_is_never_the_old_one():
    model, eager = SwapsOnLength(), SwapsOnLength()
    fast = fxla.compile(model, concrete_shapes=True)
    for n in (3, 5, 3, 5):
        x = torch.randn(n)
        torch.testing.assert_close(fast(x), eager(x))


def test_a_buffer_a_training_trace_replaces_drops_the_other_modes_trace():
    class TrainSwap(SwapsOnLength):
        def forward(self, x):
            if self.training:
                self.register_buffer("w", torch.full((4,), 2.0))
            return x * self.w

    model, eager, x = TrainSwap().eval(), TrainSwap().eval(), torch.randn(4)
    fast = fxla.compile(model)
    for mode in ("eval", "train", "eval", "train"):
        getattr(model, mode)(), getattr(eager, mode)()
        torch.testing.assert_close(fast(x), eager(x))


def test_deleting_an_attribute_or_a_registered_object_is_seen():
    class Deletable(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale, self.act = 3.0, nn.ReLU()
            self.register_buffer("b", torch.ones(3))

        def forward(self, x):
            return self.act(x) * getattr(self, "scale", 1.0) + self.b

    for concrete in (False, True):
        model, x = Deletable(), torch.randn(3)
        fast = fxla.compile(model, concrete_shapes=concrete)
        _same(fast, model, x)
        del model.scale                     # (forward's default now)
        _same(fast, model, x)
        del model.b
        with pytest.raises(fxla.modes.ModelStructureError, match="buffer `b` .Tensor. removed"):
            fast(x)


def test_del_of_an_attribute_in_forward_is_a_trace_error():
    class OneShot(nn.Module):
        def __init__(self):
            super().__init__()
            self.first = True

        def forward(self, x):
            if hasattr(self, "first"):
                del self.first
                return x + 100
            return x

    for concrete in (False, True):
        model = OneShot()
        with pytest.raises(fxla.frontend.TraceError, match=r"del self.first in forward(.|\n)*fix: assign"):
            fxla.compile(model, concrete_shapes=concrete)(torch.ones(2))
        assert model.first is True                 # (the trace deleted nothing)


@pytest.mark.parametrize("change", ["set", "del"])
def test_a_write_in_another_thread_while_a_trace_runs_is_seen(change):
    import threading

    class Slow(nn.Module):
        def forward(self, x):
            started.set()
            go.wait(10)
            return x + 1

    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = 3.0

        def forward(self, x):
            return x * getattr(self, "scale", 1.0)

    started, go = threading.Event(), threading.Event()
    model, x = Scaled(), torch.ones(3)
    fast = fxla.compile(model)
    _same(fast, model, x)
    thread = threading.Thread(target=lambda: fxla.symbolic_trace(Slow()))
    thread.start()
    assert started.wait(10)
    if change == "set":
        model.scale = 5.0
    else:
        del model.scale
    go.set()
    thread.join(30)
    _same(fast, model, x)


def test_training_steps_of_other_shapes_are_rebuilt_after_a_trace_replaces_a_buffer():
    class Swaps(SwapsOnLength):
        def __init__(self):
            super().__init__()
            self.p = nn.Parameter(torch.ones(4))

        def forward(self, x):
            return super().forward(x) * self.p

    torch.manual_seed(0)
    model, eager = Swaps(), Swaps()
    opt, eager_opt = (torch.optim.SGD(m.parameters(), lr=0.1) for m in (model, eager))
    step = fxla.compile_step(model, opt, lambda m, x: m(x).sum(), concrete_shapes=True)
    for n in (3, 5, 3):
        x = torch.randn(n)
        eager_opt.zero_grad()
        loss = eager(x).sum()
        loss.backward()
        eager_opt.step()
        torch.testing.assert_close(step(x), loss.detach())
        torch.testing.assert_close(model.p, eager.p)
