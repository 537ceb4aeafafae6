"""fxla.runtime._fastcall: the C call path of CompiledModule (Dispatch) and the host view of CPU results.

Dispatch is tested here on hand-made plans, each branch of its contract (see runtime/_fastcall.c) against what
the plan would have done; tests/test_dispatch.py covers the plans CompiledModule builds."""
from __future__ import annotations

import gc
import operator
import weakref

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

import fxla
from fxla.runtime._fastcall import DirectCall, Dispatch, HostCall, host_view


class Plan:
    """A call plan as fxla.dispatch builds them: callable on the args tuple, with ``host`` and ``direct``."""

    def __init__(self, host=None, direct=None):
        self.host, self.direct, self.calls = host, direct, []

    def __call__(self, args):
        self.calls.append(args)
        return ("plan", args)


def general(*args, **kwargs):
    return ("general", args, kwargs)


def key(*args):
    keys = [(type(a), a.shape, a.dtype) for a in args]
    return keys[0] if len(keys) == 1 else tuple(keys)


def add_one(*values):                          # a host plan's run: the program's results, a list of jax arrays
    return [jnp.asarray(values[-1]) + 1]


F32 = np.dtype(np.float32)
FIRST = operator.itemgetter(0)                 # the build of a one-tensor result (fxla.dispatch._builder)


def host(run, shape, params=(), grad=False):
    return (run, tuple(params), ((F32, shape),), FIRST, grad)


# -- host_view -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(), (5,), (2, 3, 4)])
def test_host_view_is_a_writable_zero_copy_view_that_keeps_the_array(shape):
    array = jnp.arange(int(np.prod(shape)), dtype=jnp.float32).reshape(shape) + 1
    array.block_until_ready()
    view = host_view(array, F32, array.shape)
    assert view.shape == shape and view.dtype == F32 and view.flags.writeable
    assert view.ctypes.data == array.unsafe_buffer_pointer()
    np.testing.assert_array_equal(view, np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) + 1)
    ref = weakref.ref(array)
    del array
    gc.collect()
    assert ref() is not None                    # the view's base holds it
    tensor = torch.from_numpy(view)
    del view
    gc.collect()
    assert ref() is not None                    # so does the tensor made from it
    tensor += 1
    del tensor
    gc.collect()
    assert ref() is None


def test_host_view_argument_errors():
    array = jnp.zeros(3)
    with pytest.raises(TypeError, match=r"host_view\(array, dtype: np.dtype, shape: tuple\)"):
        host_view(array, "float32", (3,))
    with pytest.raises(TypeError, match="host_view"):
        host_view(array, F32)


# -- Dispatch ---------------------------------------------------------------------------------------------------
def test_calls_without_a_plan_take_the_general_path():
    x = torch.ones(2)
    plans = {key(x): Plan()}
    call = Dispatch(plans, general)
    assert call(x, scale=2) == ("general", (x,), {"scale": 2})             # keyword arguments
    y = torch.ones(3)
    assert call(y)[0] == "general"                                          # another signature
    assert call(1.5) == ("general", (1.5,), {})                             # not array-like (no .shape)
    assert call(x, 2)[0] == "general"                                       # one argument is not
    assert call() == ("general", (), {})
    assert plans[key(x)].calls == []


def test_calls_of_only_the_bypass_type_go_to_general_without_a_lookup():
    xj, yj, t = jnp.ones(2), jnp.zeros(3), torch.ones(2)
    plans = {key(xj): Plan(), key(t): Plan(), key(xj, t): Plan(), (): Plan()}
    call = Dispatch(plans, general, bypass=type(xj))
    assert call.bypass is type(xj)
    assert call(xj) == ("general", (xj,), {}) and call(xj, yj)[0] == "general"     # a plan exists: not looked up
    assert call(t) == ("plan", (t,)) and call(xj, t) == ("plan", (xj, t))          # any other type: looked up
    assert call() == ("plan", ())                                                   # no arguments: looked up
    assert plans[key(xj)].calls == []
    with pytest.raises(TypeError, match="bypass must be a type or None"):
        Dispatch({}, general, bypass=3)
    assert Dispatch({}, general).bypass is None


def test_a_plan_without_shortcuts_is_called_with_the_args_tuple():
    x, y = torch.ones(2), torch.zeros(2, 2)
    plan = Plan()
    call = Dispatch({key(x, y): plan}, general)
    result = call(x, y)
    assert result[0] == "plan" and result[1] == (x, y) and type(result[1]) is tuple


def test_an_unhashable_signature_takes_the_general_path():
    class Odd:
        shape, dtype = [2], "f4"                # a list: the key cannot be hashed
    odd = Odd()
    assert Dispatch({}, general)(odd) == ("general", (odd,), {})


def test_host_shortcut_runs_and_returns_a_private_writable_tensor():
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    seen = []

    def run(*values):
        seen.append(values)
        return add_one(*values)
    param = jnp.ones(1)
    plan = Plan(host=host(run, (2, 3), [param]))
    call = Dispatch({key(x): plan}, general)
    out = call(x)
    assert isinstance(out, torch.Tensor) and out.shape == (2, 3) and out.dtype == torch.float32
    torch.testing.assert_close(out, x + 1)
    assert plan.calls == [] and len(seen) == 1
    assert seen[0][0] is param and isinstance(seen[0][1], np.ndarray)      # params first, then x.numpy()
    out += 10                                                               # writable, and nobody else's
    torch.testing.assert_close(call(x), x + 1)


@pytest.mark.parametrize("make", [
    lambda: torch.ones(3, requires_grad=True),          # x.numpy() raises RuntimeError
    lambda: torch.ones(3, dtype=torch.bfloat16),        # x.numpy() raises TypeError
], ids=["requires_grad", "bfloat16"])
def test_host_shortcut_leaves_inputs_numpy_refuses_to_the_plan(make):
    x = make()
    plan = Plan(host=host(add_one, (3,)))
    assert Dispatch({key(x): plan}, general)(x) == ("plan", (x,))


def test_host_shortcut_with_grad_leaves_grad_mode_calls_to_the_plan():
    """grad True (a parameter required grad when the plan was made): with torch's grad mode on the plan takes
    the call (its outputs pass fxla's gradient guard); under no_grad / inference_mode the shortcut runs."""
    x = torch.ones(3)
    plan = Plan(host=host(add_one, (3,), grad=True))
    call = Dispatch({key(x): plan}, general)
    assert call(x) == ("plan", (x,))
    with torch.no_grad():
        torch.testing.assert_close(call(x), x + 1)
    with torch.inference_mode():
        torch.testing.assert_close(call(x), x + 1)
    assert plan.calls == [(x,)]
    unflagged = Plan(host=host(add_one, (3,)))                   # grad False: grad mode is not even looked at
    torch.testing.assert_close(Dispatch({key(x): unflagged}, general)(x), x + 1)


def test_host_and_direct_shortcuts_leave_a_value_error_of_run_to_the_plan():
    def refuse(*values):
        raise ValueError("an array on another device")
    x = torch.ones(3)
    plan = Plan(host=host(refuse, (3,)))
    assert Dispatch({key(x): plan}, general)(x) == ("plan", (x,))
    a = jnp.ones(3)
    plan = Plan(direct=(refuse, (), list))
    assert Dispatch({key(a): plan}, general)(a) == ("plan", (a,))


def test_other_errors_of_run_propagate():
    def broken(*values):
        raise KeyError("inside the program")
    x = torch.ones(3)
    with pytest.raises(KeyError, match="inside the program"):
        Dispatch({key(x): Plan(host=host(broken, (3,)))}, general)(x)
    a = jnp.ones(3)
    with pytest.raises(KeyError, match="inside the program"):
        Dispatch({key(a): Plan(direct=(broken, (), list))}, general)(a)


def test_direct_shortcut_builds_the_result_of_params_then_args():
    a, b, p = jnp.ones(2), jnp.zeros(2), jnp.full(2, 5.0)
    plan = Plan(direct=(lambda *v: list(v), (p,), tuple))
    out = Dispatch({key(a, b): plan}, general)(a, b)
    assert type(out) is tuple and out[0] is p and out[1] is a and out[2] is b and plan.calls == []


def test_more_arguments_than_the_c_stack_holds_go_to_the_plan():
    args = [jnp.ones(1)] * 70
    plan = Plan(direct=(lambda *v: list(v), (), tuple))
    assert Dispatch({key(*args): plan}, general)(*args) == ("plan", tuple(args))


def test_host_shortcut_with_several_tensors_in_and_out():
    x, y = torch.arange(3, dtype=torch.float32), torch.full((2, 3), 2.0)
    seen = []

    def run(*values):
        seen.append(values)
        a, b = (jnp.asarray(v) for v in values)
        return [a * b, (a + b).sum(), a - 1]
    views = ((F32, (2, 3)), (F32, ()), (F32, (3,)))
    plan = Plan(host=(run, (), views, tuple, False))
    out = Dispatch({key(x, y): plan}, general)(x, y)
    assert type(out) is tuple and len(out) == 3 and plan.calls == []
    assert all(isinstance(v, np.ndarray) for v in seen[0])
    torch.testing.assert_close(out[0], x * y)
    torch.testing.assert_close(out[1], (x + y).sum())
    torch.testing.assert_close(out[2], x - 1)
    w = torch.ones(2, 3, requires_grad=True)                            # the second argument leaves it
    plan2 = Plan(host=(run, (), views, tuple, False))
    assert Dispatch({key(x, w): plan2}, general)(x, w) == ("plan", (x, w))


def test_host_shortcut_without_views_returns_the_computed_jax_results():
    """views None (output="jax"): torch tensors in, the results themselves out, each waited for."""
    waited = []

    class Result:                               # a jax array that records its wait
        def __init__(self, value):
            self.value = value

        def block_until_ready(self):
            waited.append(self)
            return self

    seen = []

    def run(p, a, b):
        seen.append((p, a, b))
        return [Result(a + b), Result(a * p)]
    x, y = torch.arange(3.0), torch.ones(3)
    plan = Plan(host=(run, (2.0,), None, tuple, False))
    out = Dispatch({key(x, y): plan}, general)(x, y)
    assert plan.calls == [] and type(out) is tuple and list(out) == waited
    assert all(isinstance(v, np.ndarray) for v in seen[0][1:])
    np.testing.assert_array_equal(out[0].value, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(out[1].value, [0.0, 2.0, 4.0])
    real = Plan(host=(add_one, (), None, FIRST, False))
    out = Dispatch({key(x): real}, general)(x)
    assert isinstance(out, jax.Array) and out.tolist() == [1.0, 2.0, 3.0]
    w = torch.ones(3, requires_grad=True)                               # numpy() refuses: the plan takes it
    assert Dispatch({key(w): Plan(host=(add_one, (), None, FIRST, False))}, general)(w) == ("plan", (w,))


def test_no_arguments_are_the_empty_key():
    plan = Plan(host=(lambda: [jnp.full((2,), 7.0)], (), ((F32, (2,)),), FIRST, False))
    out = Dispatch({(): plan}, general)()
    torch.testing.assert_close(out, torch.full((2,), 7.0))


def test_malformed_shortcuts_are_type_errors_naming_the_contract():
    x = torch.ones(3)
    with pytest.raises(TypeError, match=r"plan.host must be \(run, params, views, build, grad: bool\)"):
        Dispatch({key(x): Plan(host=(add_one, (), F32))}, general)(x)
    with pytest.raises(TypeError, match=r"plan.host must be \(run, params, views, build, grad: bool\)"):
        Dispatch({key(x): Plan(host=(add_one, (), ((F32, (3,)),), FIRST, 1))}, general)(x)
    with pytest.raises(TypeError, match=r"plan.host must be \(run, params: tuple, views: tuple or None, build\)"):
        Dispatch({key(x): Plan(host=(add_one, [], ((F32, (3,)),), FIRST, False))}, general)(x)
    with pytest.raises(TypeError, match=r"views must be \(dtype: np.dtype, shape: tuple\) pairs"):
        Dispatch({key(x): Plan(host=(add_one, (), (("float32", (3,)),), FIRST, False))}, general)(x)
    with pytest.raises(TypeError, match="returned 1 results for 2 views"):
        Dispatch({key(x): Plan(host=(add_one, (), ((F32, (3,)), (F32, (3,))), tuple, False))}, general)(x)
    with pytest.raises(TypeError, match="must return a list or tuple of arrays"):
        Dispatch({key(x): Plan(host=(lambda v: jnp.asarray(v), (), ((F32, (3,)),), FIRST, False))}, general)(x)
    a = jnp.ones(3)
    with pytest.raises(TypeError, match=r"plan.direct must be \(run, params: tuple, build\)"):
        Dispatch({key(a): Plan(direct=(add_one, []))}, general)(a)


def test_the_typed_shortcuts_check_their_shape_once_when_made():
    """HostCall / DirectCall (what fxla.dispatch builds): the bare tuples' contract, checked by the constructor."""
    views = ((F32, (3,)),)
    h = HostCall(add_one, (), views, FIRST, False)
    assert isinstance(h, tuple) and h == (add_one, (), views, FIRST, False) and h[4] is False
    assert (h.run, h.params, h.views, h.build, h.grad) == (add_one, (), views, FIRST, False)
    assert HostCall(run=add_one, params=(), views=None, build=FIRST, grad=True).views is None
    assert repr(h).startswith("HostCall(run=<function add_one")
    d = DirectCall(add_one, (1,), list)
    assert d == (add_one, (1,), list) and (d.run, d.params, d.build) == (add_one, (1,), list)
    with pytest.raises(TypeError, match=r"plan.host must be \(run, params, views, build, grad: bool\)"):
        HostCall(add_one, (), views, FIRST, 1)
    with pytest.raises(TypeError, match=r"plan.host must be \(run, params: tuple, views: tuple or None, build\)"):
        HostCall(add_one, [], views, FIRST, False)
    with pytest.raises(TypeError, match=r"views must be \(dtype: np.dtype, shape: tuple\) pairs"):
        HostCall(add_one, (), (("float32", (3,)),), FIRST, False)
    with pytest.raises(TypeError, match="run and build must be callable"):
        HostCall(add_one, (), views, 3, False)
    with pytest.raises(TypeError, match="missing its field grad"):
        HostCall(add_one, (), views, FIRST)
    with pytest.raises(TypeError, match=r"plan.direct must be \(run, params: tuple, build\)"):
        DirectCall(add_one, [], list)
    with pytest.raises(TypeError, match="run and build must be callable"):
        DirectCall(None, (), list)


def test_the_typed_shortcuts_run_like_bare_tuples():
    x, a, p = torch.arange(3.0), jnp.ones(2), jnp.full(2, 5.0)
    plan = Plan(host=HostCall(add_one, (), ((F32, (3,)),), FIRST, False))
    torch.testing.assert_close(Dispatch({key(x): plan}, general)(x), x + 1)
    plan = Plan(direct=DirectCall(lambda *v: list(v), (p,), tuple))
    out = Dispatch({key(a): plan}, general)(a)
    assert type(out) is tuple and out[0] is p and out[1] is a and plan.calls == []
    w = torch.ones(3, requires_grad=True)                               # numpy() refuses: the plan takes it
    plan = Plan(host=HostCall(add_one, (), ((F32, (3,)),), FIRST, False))
    assert Dispatch({key(w): plan}, general)(w) == ("plan", (w,))


def test_constructor_checks_its_arguments():
    with pytest.raises(TypeError):
        Dispatch([], general)
    with pytest.raises(TypeError, match="general must be callable"):
        Dispatch({}, 3)
    call = Dispatch({}, general)
    assert call.general is general and call.plans == {}


def test_a_dispatch_in_a_reference_cycle_is_collected():
    class Owner:
        def general(self, *args, **kwargs):
            return "general"
    owner = Owner()
    owner.call = Dispatch({}, owner.general)    # owner -> call -> bound method -> owner
    ref = weakref.ref(owner)
    assert owner.call(1) == "general"
    del owner
    gc.collect()
    assert ref() is None


# -- through CompiledModule -------------------------------------------------------------------------------------
def test_compiled_module_calls_run_through_dispatch():
    fast = fxla.compile(lambda x: x * 2 + 1)
    assert type(fast.__call__) is Dispatch
    x = torch.arange(4, dtype=torch.float32)
    for _ in range(3):
        torch.testing.assert_close(fast(x), x * 2 + 1)
    (plan,) = fast._plans.values()
    assert plan.host is not None and plan.host[2] == ((F32, (4,)),)
    w = torch.arange(4, dtype=torch.float32, requires_grad=True)        # leaves the shortcut to the plan
    torch.testing.assert_close(fast(w), (w * 2 + 1).detach())
    t = torch.arange(8, dtype=torch.float32)[::2]                       # a strided view: x.numpy() keeps strides
    torch.testing.assert_close(fast(t), t * 2 + 1)
