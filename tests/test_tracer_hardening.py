"""Issue #16 items 5, 19 and 20 (the tracer's part): branches on a traced tensor take eager's path or fail,
host conversions of a traced tensor and data-dependent shapes are TraceErrors at the user's line with a fix."""
import zlib

import numpy as np
import pytest
import torch
import torch.nn as nn

import fxla
from fxla.frontend import TraceError, symbolic_trace
from fxla.frontend.errors import DataDependentError
from fxla.frontend.proxy import Proxy

from support import marker_line  # noqa: E402

THIS_FILE = __file__
MODES = [pytest.param(None, id="default"), pytest.param(True, id="concrete_shapes")]


def line_of(marker: str) -> int:
    return marker_line(THIS_FILE, marker)


def trace(fn, concrete, x):
    return symbolic_trace(fn, example_inputs=(x,) if concrete else None)


def _located(err: Exception, marker: str) -> str:
    msg = str(err)
    assert isinstance(err, TraceError), type(err)
    assert f"{THIS_FILE}:{line_of(marker)}:" in msg, msg
    assert "fix:" in msg and msg.index("at ") < msg.index("fix:")
    return msg


# ---- item 5: isinstance, caught TraceErrors, text ---------------------------------------------------------
def doubles_tensors(x):
    return x * 2 if isinstance(x, torch.Tensor) else x


class ChecksParameter(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(3))
        self.register_buffer("b", torch.randn(3))

    def forward(self, x):
        out = x
        if isinstance(self.w, nn.Parameter):
            out = out + self.w
        if isinstance(self.b, nn.Parameter):          # a buffer is a plain tensor
            out = out * 100
        if isinstance(x.shape[0], torch.Tensor) or isinstance(x.size(), torch.Tensor):
            out = out * 1000
        return out if isinstance(self.b, torch.Tensor) else -out


@pytest.mark.parametrize("concrete", MODES)
def test_isinstance_of_traced_tensor_is_eager(concrete):
    x = torch.randn(3)
    torch.testing.assert_close(trace(doubles_tensors, concrete, x)(x), x * 2)
    m = ChecksParameter()
    torch.testing.assert_close(trace(m, concrete, x)(x), m(x))


def test_isinstance_compiled_matches_eager():
    x = torch.randn(2, 3)
    torch.testing.assert_close(fxla.compile(doubles_tensors)(x), x * 2)
    m, x = ChecksParameter(), torch.randn(3)
    with torch.no_grad():
        torch.testing.assert_close(fxla.compile(m)(x), m(x))
        torch.testing.assert_close(fxla.compile(m, concrete_shapes=True)(x), m(x))


def test_isinstance_keeps_proxy_type():
    seen = []

    def f(x):
        seen.append((isinstance(x, Proxy), type(x) is torch.Tensor, isinstance(x, (int, tuple, dict))))
        return x + 1
    symbolic_trace(f)
    assert seen == [(True, False, False)]


def _to_float(t):
    return float(t.sum())  # @raised-line


def swallows(x):
    try:
        s = _to_float(x)  # @caught-line
    except Exception:
        s = 0.0
    return x + s


@pytest.mark.parametrize("concrete", MODES)
def test_caught_trace_error_fails_the_trace(concrete):
    with pytest.raises(TraceError) as info:
        trace(swallows, concrete, torch.randn(3))
    msg = _located(info.value, "@caught-line")
    assert "caught" in msg
    assert f"{THIS_FILE}:{line_of('@raised-line')}:" in msg     # where it was raised, too
    assert "cannot convert to float" in msg


def fstring(x):
    return x + len(f"{x}")  # @fstring-line


def format_call(x):
    return x + len(format(x, ""))  # @format-line


def percent(x):
    return x + len("%s" % (x,))  # @percent-line


def str_call(x):
    return x + len(str(x))  # @str-line


def repr_call(x):
    return x + len(repr(x))  # @repr-line


@pytest.mark.parametrize("concrete", MODES)
@pytest.mark.parametrize("fn, marker", [(fstring, "@fstring-line"), (format_call, "@format-line"),
                                        (percent, "@percent-line"), (str_call, "@str-line"),
                                        (repr_call, "@repr-line")])
def test_formatting_a_traced_tensor_is_an_error(fn, marker, concrete):
    with pytest.raises(TraceError) as info:
        trace(fn, concrete, torch.randn(3))
    msg = _located(info.value, marker)
    assert "cannot format as text" in msg and "has no values" in msg


def test_repr_outside_the_trace_and_graph_printing_still_work():
    kept = []

    def f(x):
        y = x + 1
        kept.append(y)
        return y
    gm = symbolic_trace(f)
    assert repr(kept[0]) == "Proxy(add)" and f"{kept[0]}" == "Proxy(add)"
    assert "add" in gm.code and "add" in str(gm.graph)


# ---- item 19: host conversions -----------------------------------------------------------------------------
def f_numpy(x):
    return x.numpy()  # @numpy-line


def f_tolist(x):
    v = x.tolist()  # @tolist-line
    return x + len(v)


def f_npsin(x):
    return np.sin(x)  # @npsin-line


def f_asarray(x):
    return torch.from_numpy(np.asarray(x))  # @asarray-line


def f_npsum(x):
    return np.sum(x)  # @npsum-line


def f_bytes(x):
    return x + len(bytes(x))  # @bytes-line


def f_memoryview(x):
    return x + len(memoryview(x))  # @memoryview-line


def f_crc(x):
    return x + zlib.crc32(x)  # @crc-line


@pytest.mark.parametrize("concrete", MODES)
@pytest.mark.parametrize("fn, marker, what", [
    (f_numpy, "@numpy-line", ".numpy()"), (f_tolist, "@tolist-line", ".tolist()"),
    (f_npsin, "@npsin-line", "np.sin"), (f_asarray, "@asarray-line", "NumPy array"),
    (f_npsum, "@npsum-line", "np.sum"), (f_bytes, "@bytes-line", "bytes"),
    (f_memoryview, "@memoryview-line", "memoryview"), (f_crc, "@crc-line", "bytes-like object")])
def test_host_conversions_are_trace_errors(fn, marker, what, concrete):
    with pytest.raises(TraceError) as info:
        trace(fn, concrete, torch.randn(3))
    msg = _located(info.value, marker)
    assert what in msg and ("has no values" in msg or "no data" in msg)


def f_size_of_sizes(x):
    return x.reshape(torch.Size([x.shape[0] // 3, 3]))  # @size-line


def test_a_torch_size_of_traced_sizes_is_a_trace_error_with_the_fix():
    with pytest.raises(TraceError) as info:
        trace(f_size_of_sizes, None, torch.randn(6))
    msg = _located(info.value, "@size-line")
    assert "torch.Size() of traced sizes" in msg and "takes ints only" in msg
    assert "pass the sizes as a tuple" in msg and "concrete_shapes=True" in msg
    x = torch.randn(6)                     # (as the fix says: a concrete-shapes trace takes it)
    torch.testing.assert_close(trace(f_size_of_sizes, True, x)(x), f_size_of_sizes(x))


def f_iter(x):
    return sum(v for v in x)  # @iter-line


def f_len(x):
    return x * len(x)  # @len-line


def f_bool(x):
    return x if x.sum() else -x  # @bool-line


def f_int(x):
    return x * int(x.sum())  # @int-line


def f_float(x):
    return x * float(x.sum())  # @float-line


def f_index(x):
    return x * [1, 2][x.sum()]  # @index-line


@pytest.mark.parametrize("fn, marker, what", [
    (f_iter, "@iter-line", "cannot iterate"), (f_len, "@len-line", "cannot take len()"),
    (f_bool, "@bool-line", "truth value"), (f_int, "@int-line", "convert to int"),
    (f_float, "@float-line", "convert to float"), (f_index, "@index-line", "Python index")])
def test_concrete_value_requests_keep_their_error(fn, marker, what):
    with pytest.raises(TraceError) as info:
        symbolic_trace(fn)
    msg = _located(info.value, marker)
    assert what in msg and "no concrete value during tracing" in msg


def f_descriptor(x):
    y = x * 1
    torch.Tensor.add_(y, 1)  # @descriptor-line
    return y


@pytest.mark.parametrize("concrete", MODES)
def test_unbound_tensor_method_is_a_trace_error(concrete):
    with pytest.raises(TraceError) as info:
        trace(f_descriptor, concrete, torch.randn(3))
    msg = _located(info.value, "@descriptor-line")
    assert "x.add_(...) instead of torch.Tensor.add_(x, ...)" in msg


# ---- item 20: data-dependent output shapes -------------------------------------------------------------------
def f_mask(x):
    return x[x > 0]  # @mask-line


def f_nonzero(x):
    return torch.nonzero(x)  # @nonzero-line


def f_masked_select(x):
    return torch.masked_select(x, x > 0)  # @masked-select-line


def f_item(x):
    return x + x.sum().item()  # @item-line


@pytest.mark.parametrize("fn, marker, what", [
    (f_mask, "@mask-line", "data-dependent output shape"), (f_nonzero, "@nonzero-line", "data-dependent output shape"),
    (f_masked_select, "@masked-select-line", "data-dependent output shape"),
    (f_item, "@item-line", "Python number read from the tensor's data")])
def test_data_dependent_ops_say_so(fn, marker, what):
    with pytest.raises(DataDependentError) as info:
        fxla.compile(fn)(torch.randn(4))
    msg = _located(info.value, marker)
    assert what in msg
    assert "meta_nonzero_assume_all_nonzero" not in msg and "check the shapes, dtypes and values" not in msg
    fix = msg.split("fix:")[1]
    assert "outside the compiled function" in fix
    assert ("torch.where(mask, x, 0)" in fix and "topk" in fix) if "shape" in what else ".item()" in fix


class AssignsNoneBuffer(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("h", None)

    def forward(self, x):
        self.h = x * 2  # @none-buffer-line
        return x + 1


@pytest.mark.parametrize("concrete", MODES)
def test_traced_value_into_a_none_buffer_is_an_error(concrete):
    # with isinstance(proxy, torch.Tensor) True, nn.Module.__setattr__ would store the Proxy in _buffers
    m = AssignsNoneBuffer()
    with pytest.raises(TraceError) as info:
        trace(m, concrete, torch.randn(3))
    assert "a buffer of AssignsNoneBuffer that holds None" in _located(info.value, "@none-buffer-line")
    assert m._buffers == {"h": None}


def probes_then_converts(x):
    assert hasattr(x, "numpy") and hasattr(x, "tolist")     # duck typing sees a tensor
    return x.numpy()  # @probe-numpy-line


def test_host_methods_fail_when_called_not_when_probed():
    with pytest.raises(TraceError) as info:
        symbolic_trace(probes_then_converts)
    assert "cannot call .numpy()" in _located(info.value, "@probe-numpy-line")


def ones_like_shape(x):
    return x + torch.ones(x.shape)     # torch's C parser tries x.shape.__index__ and clears the error itself


def test_errors_torch_clears_itself_do_not_fail_the_trace():
    x = torch.randn(2, 3)
    torch.testing.assert_close(symbolic_trace(ones_like_shape)(x), x + 1)


def union_and_nested(x):
    a = isinstance(x, torch.Tensor | None)
    b = isinstance(x, (int, (float, torch.Tensor)))
    return x * 2 if a and b else x


@pytest.mark.parametrize("concrete", MODES)
def test_isinstance_with_unions_and_nested_tuples(concrete):
    x = torch.randn(3)
    torch.testing.assert_close(trace(union_and_nested, concrete, x)(x), x * 2)


class RegistersTracedBuffer(nn.Module):
    def forward(self, x):
        self.register_buffer("h", x * 2)  # @register-buffer-line
        return x + 1


@pytest.mark.parametrize("concrete", MODES)
def test_register_buffer_of_a_traced_value_is_an_error(concrete):
    m = RegistersTracedBuffer()
    with pytest.raises(TraceError) as info:
        trace(m, concrete, torch.randn(3))
    assert "register_buffer('h', <traced value>)" in _located(info.value, "@register-buffer-line")
    assert dict(m._buffers) == {} and torch.nn.Module.register_buffer.__name__ == "register_buffer" \
        and torch.nn.Module.register_buffer.__module__ == "torch.nn.modules.module"


# -- library code that asks whether it is traced; layers made inside forward -------------------------------------
class _MaskShortcut(nn.Module):
    """Hugging Face's pattern: an eager-only shortcut on the data, skipped when torch says it is compiling."""

    def forward(self, x, mask):
        if not torch.compiler.is_compiling() and bool(mask.all()):
            mask = None
        return x.masked_fill(mask == 0, -1.0) if mask is not None else x


@pytest.mark.parametrize("concrete", MODES)
def test_torch_compiler_is_compiling_while_fxla_traces(concrete):
    x, mask = torch.randn(2, 5), torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    compiled = fxla.compile(_MaskShortcut(), concrete_shapes=concrete)
    torch.testing.assert_close(compiled(x, mask), _MaskShortcut()(x, mask))
    torch.testing.assert_close(compiled(x, torch.ones_like(mask)), x)
    assert not torch.compiler.is_compiling()                 # (restored after the trace)


class _LossInForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 3)

    def forward(self, x, y):
        loss_fct = nn.CrossEntropyLoss()                     # as transformers' heads do
        return loss_fct(nn.ReLU()(self.linear(x)), y)


class _LinearInForward(nn.Module):
    def forward(self, x):
        return nn.Linear(4, 3)(x)                            # fresh random weights at every eager call


@pytest.mark.parametrize("concrete", MODES)
def test_stateless_layers_made_inside_forward_are_traced_through(concrete):
    x, y = torch.randn(5, 4), torch.tensor([0, 2, 1, 1, 0])
    model = _LossInForward()
    torch.testing.assert_close(fxla.compile(model, concrete_shapes=concrete)(x, y), model(x, y))
    with pytest.raises(TraceError, match=r"random fill .uniform_\(\) of a tensor that is not traced \(a parameter"):
        fxla.compile(_LinearInForward(), concrete_shapes=concrete)(x)


class _PenaltyThroughParameters(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 2)

    def forward(self, x):
        return self.linear(x).sum() + sum(p.abs().sum() for p in self.parameters())     # (real tensors: eager ops)


class _PenaltyThroughAttributes(_PenaltyThroughParameters):
    def forward(self, x):
        return self.linear(x).sum() + sum(self.get_parameter(n).abs().sum() for n, _ in self.named_parameters())


@pytest.mark.parametrize("concrete", MODES)
def test_values_computed_eagerly_from_parameters_are_refused_not_frozen(concrete):
    """``self.parameters()`` yields the real tensors: ops on them run while tracing, and the result would be a
    constant (stale after an update, no gradient; found by a bug hunt).  It is a TraceError at the user's line; the
    same sum through ``get_parameter`` is traced, and trains as eager."""
    torch.manual_seed(0)
    x = torch.randn(2, 3)
    with pytest.raises(TraceError, match=r"(?s)computed eagerly from tensors that require grad.*self.parameters"):
        fxla.compile(_PenaltyThroughParameters(), concrete_shapes=concrete)(x)
    model = _PenaltyThroughAttributes()
    fast = fxla.compile(model, concrete_shapes=concrete)
    with torch.no_grad():
        model.linear.weight.mul_(3)                          # (read at each call, as eager)
    fast(x).backward()
    want = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    model(x).backward()
    for p, w in zip(model.parameters(), want):
        torch.testing.assert_close(w, p.grad)
    torch.testing.assert_close(fast(x), model(x))


class _PenaltyInForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(2, 1)

    def forward(self, x):
        (g,) = torch.autograd.grad(self.linear(x).tanh().sum(), x, create_graph=True)
        return g.pow(2).sum()


def test_autograd_inside_forward_is_a_trace_error_and_the_penalty_works_outside():
    """torch.autograd.grad of traced values was recorded as a node and failed later with a raw InterpreterError;
    now a TraceError at the line, whose fix (the gradient of the compiled call, create_graph=True) matches eager."""
    torch.manual_seed(0)
    x = torch.randn(3, 2, requires_grad=True)
    with pytest.raises(TraceError, match=r"(?s)asks autograd for gradients.*\n  at .*test_tracer_hardening.py"):
        fxla.compile(_PenaltyInForward())(x)
    model = _PenaltyInForward()
    fast = fxla.compile(model.linear)
    (g,) = torch.autograd.grad(fast(x).tanh().sum(), x, create_graph=True)
    g.pow(2).sum().backward()
    got = model.linear.weight.grad.clone()
    model.zero_grad()
    model(x).backward()
    torch.testing.assert_close(got, model.linear.weight.grad)


class _ByClass(nn.Module):
    """Dispatches on its argument's class, as loss functions and HF-style forwards do."""

    def __init__(self):
        super().__init__()
        self.l = nn.Linear(4, 3)

    def forward(self, x, w):
        if isinstance(w, float):  # class-check
            return self.l(x) * w
        if isinstance(w, dict):
            return self.l(x) * w["scale"]
        return (self.l(x) * w).sum(0)


def test_an_input_class_checked_while_tracing_must_match_each_call():
    # default mode: every input is a tensor while tracing; a float or dict in a call would take the other branch
    model, x = _ByClass(), torch.randn(6, 4)
    fast = fxla.compile(model)
    torch.testing.assert_close(fast(x, torch.ones(3)), model(x, torch.ones(3)))
    for value in (0.5, {"scale": torch.ones(3)}):
        with pytest.raises(TraceError, match=r"class of its input 'w' \(isinstance\)(.|\n)*this call gives it (.|\n)*"
                                             r"fix: pass the value as a constant") as err:
            fast(x, value)
        assert err.value.where.line == marker_line(THIS_FILE, "class-check")
    # concrete shapes: plain values are constants, and a dict input is a dict (its meta's class)
    fast = fxla.compile(model, concrete_shapes=True)
    for value in (0.5, {"scale": torch.full((3,), 2.0)}, torch.ones(3)):
        torch.testing.assert_close(fast(x, value), model(x, value))


def test_a_class_check_whose_answer_the_call_keeps_runs():
    # (`isinstance(past, Cache)` is False for the traced tensor and for the call's None: eager's branch)
    class Cache:
        pass

    def f(x, past=None):
        return x * 0 if isinstance(past, Cache) else x + 1

    fast, x = fxla.compile(f), torch.randn(3)
    torch.testing.assert_close(fast(x), f(x))
    torch.testing.assert_close(fast(x, None), f(x, None))


def test_torch_is_tensor_counts_as_the_models_class_check():
    def f(x, t):
        return x * t if torch.is_tensor(t) else x - t

    fast, x = fxla.compile(f), torch.randn(2, 4)
    torch.testing.assert_close(fast(x, torch.tensor(0.5)), f(x, torch.tensor(0.5)))
    with pytest.raises(TraceError, match=r"class of its input 't'(.|\n)*gives it 0.5 \(float"):
        fast(x, 0.5)


def test_a_step_whose_loss_checks_a_batch_arguments_class_is_refused_not_trained_differently():
    def loss_fn(m, x, y, w):
        if isinstance(w, float):
            return nn.functional.cross_entropy(m(x), y) * w
        return (nn.functional.cross_entropy(m(x), y, reduction="none") * w).sum()

    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    step = fxla.compile_step(model, torch.optim.SGD(model.parameters(), lr=0.1), loss_fn)
    x, y = torch.randn(6, 4), torch.randint(0, 3, (6,))
    with pytest.raises(TraceError, match=r"input 'w'(.|\n)*fix: compile the step with concrete shapes"):
        step(x, y, 0.5)
    step = fxla.compile_step(model, torch.optim.SGD(model.parameters(), lr=0.1), loss_fn, concrete_shapes=True)
    with torch.no_grad():
        want = loss_fn(model, x, y, 0.5)
    torch.testing.assert_close(step(x, y, 0.5), want)


class _HookInForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 3)

    def forward(self, x):
        h = torch.tanh(self.linear(x))
        h.register_hook(lambda g: g * 3)  # hook-in-forward
        return h * 2


@pytest.mark.parametrize("route", ["compile", "backend"])
def test_a_gradient_hook_registered_in_forward_is_a_trace_error(route):
    model, x = _HookInForward(), torch.randn(2, 3)
    with pytest.raises(Exception, match=r"registers a gradient hook on a traced tensor(.|\n)*fix: register the "
                                        r"hook on the compiled call's output") as err:      # (compile: traced now)
        fast = fxla.compile(model) if route == "compile" else torch.compile(model, backend="fxla")
        fast(x)
    if route == "compile":
        assert isinstance(err.value, TraceError)
        assert err.value.where.line == marker_line(THIS_FILE, "hook-in-forward")


def test_the_gradient_reversal_the_hook_error_suggests_is_eagers():
    x = torch.randn(4, requires_grad=True)
    a = 0.7
    fast = fxla.compile(lambda h: (h.detach() * (1 + a) - h * a) * 2)
    y = fast(x)
    torch.testing.assert_close(y, x.detach() * 2)
    (g,) = torch.autograd.grad(y.sum(), x)
    torch.testing.assert_close(g, torch.full((4,), -2 * a))
