"""Plain globals and closure variables the traced code reads are watched like plain attributes
(fxla.frontend.global_reads): a call after one changed runs the trace of the new value, as eager reads it."""
import collections
import copy
import functools

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import fxla
from fxla.frontend.global_reads import plain_reads
from fxla.modes import StateChangeError

BETA = 0.0
SCALE = 1.0


def _kl_annealed(m, x, y):
    out = m(x)
    return F.cross_entropy(out, y) + BETA * out.pow(2).mean()


class _Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(4, 3)

    def forward(self, x):
        return self.l(x) * SCALE


def _batches(n):
    g = torch.Generator().manual_seed(1)
    return [(torch.randn(6, 4, generator=g), torch.randint(0, 3, (6,), generator=g)) for _ in range(n)]


def _train(step_fn, loss_fn, model, opt, set_value):
    losses = []
    for i, (x, y) in enumerate(_batches(4)):
        set_value(float(i))
        if step_fn is None:
            opt.zero_grad()
            loss = loss_fn(model, x, y)
            loss.backward()
            opt.step()
        else:
            loss = step_fn(x, y)
        losses.append(float(loss.detach()))
    return losses


def _compare(loss_fn, set_value):
    torch.manual_seed(0)
    ref = nn.Linear(4, 3)
    model = copy.deepcopy(ref)
    opt_ref, opt = (torch.optim.SGD(m.parameters(), lr=0.1) for m in (ref, model))
    want = _train(None, loss_fn, ref, opt_ref, set_value)
    got = _train(fxla.compile_step(model, opt, loss_fn), loss_fn, model, opt, set_value)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(model.weight, ref.weight, rtol=1e-5, atol=1e-6)


def test_a_loss_reading_a_global_that_the_loop_changes_follows_it():
    def set_beta(v):
        global BETA
        BETA = v
    try:
        _compare(_kl_annealed, set_beta)
    finally:
        set_beta(0.0)


def test_a_loss_reading_a_closure_variable_that_the_loop_changes_follows_it():
    beta = 0.0

    def loss_fn(m, x, y):
        out = m(x)
        return F.cross_entropy(out, y) + beta * out.pow(2).mean()

    def set_beta(v):
        nonlocal beta
        beta = v
    _compare(loss_fn, set_beta)


def test_a_forward_reading_a_global_follows_it():
    global SCALE
    model, x = _Scaled(), torch.randn(2, 4)
    fast = fxla.compile(model)
    try:
        for value in (1.0, 2.0, 1.0):
            SCALE = value
            torch.testing.assert_close(fast(x), model(x))
    finally:
        SCALE = 1.0


def test_a_global_changing_on_every_call_is_a_clear_error():
    global SCALE
    model, x = _Scaled(), torch.randn(2, 4)
    fast = fxla.compile(model)
    try:
        with pytest.raises(StateChangeError, match=r"global SCALE changed on call after call \(now [^(]*SCALE = "
                                                   r"\d+\.0\)(.|\n)*fix: (.|\n)*a global or closure variable"):
            for i in range(20):
                SCALE = float(i)
                torch.testing.assert_close(fast(x), model(x))
    finally:
        SCALE = 1.0


def test_only_plain_values_loaded_by_the_code_are_watched():
    limit = 3

    def fn(x):
        return [F.relu(x) * SCALE for _ in range(limit)]       # (a comprehension's code, a closure cell)
    labels = [label for *_, label in plain_reads(fn)]
    where = "test_global_reads.test_only_plain_values_loaded_by_the_code_are_watched.<locals>.fn"
    assert sorted(labels) == [f"{where}: closure variable limit", f"{where}: global SCALE"]


class _Config:
    def __init__(self):
        self.beta = 1.0
        self.train = type("Train", (), {})()
        self.train.lr = 0.5


CONFIG = _Config()
HP = {"beta": 1.0, "name": "a"}


def _helper(x):
    return x * SCALE + HP["beta"]


def _outer_helper(x):
    return _helper(x) - CONFIG.train.lr


class _Helped(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(4, 3)

    def forward(self, x):
        return self._tail(_outer_helper(self.l(x)))

    def _tail(self, y):
        return y * CONFIG.beta


def _set(name, value):
    global SCALE
    if name == "SCALE":
        SCALE = value
    elif name == "HP":
        HP["beta"] = value
    elif name == "CONFIG.beta":
        CONFIG.beta = value
    elif name == "CONFIG.train":
        CONFIG.train = type("Train", (), {"__init__": lambda s: setattr(s, "lr", value)})()
    else:
        CONFIG.train.lr = value


@pytest.mark.parametrize("name", ["SCALE", "HP", "CONFIG.beta", "CONFIG.train.lr", "CONFIG.train"])
def test_values_read_by_helpers_methods_and_through_objects_are_followed(name):
    """Globals of helper functions (two calls deep), of a method forward calls, an attribute of a global object,
    a key of a global dict, a nested attribute (and the object holding it replaced)."""
    saved = (SCALE, dict(HP), CONFIG.beta, CONFIG.train)
    model, x = _Helped(), torch.randn(2, 4)
    fast = fxla.compile(model)
    try:
        for value in (2.0, 3.0, 2.0):
            _set(name, value)
            torch.testing.assert_close(fast(x), model(x))
    finally:
        _set("SCALE", saved[0])
        HP.update(saved[1])
        CONFIG.beta, CONFIG.train = saved[2], saved[3]


def test_a_compiled_function_follows_its_globals_and_closure_variables():
    global SCALE
    offset = 1.0

    def fn(x):
        return _helper(x) + offset

    fast, jax_fast = fxla.compile(fn), fxla.compile(fn, output="jax")
    x = torch.randn(3)
    try:
        for value in (1.0, 2.0):
            SCALE, offset = value, value * 10
            torch.testing.assert_close(fast(x), fn(x))
            torch.testing.assert_close(torch.from_numpy(jax_fast(x).__array__().copy()), fn(x))
    finally:
        SCALE = 1.0


def test_library_code_and_non_plain_values_are_not_followed():
    from fxla.frontend.global_reads import traced_functions
    found = traced_functions(_Helped())
    names = {getattr(f, "__qualname__", "") for f in found}
    assert {"_Helped.forward", "_Helped._tail", "_outer_helper", "_helper"} <= names
    assert not [f for f in found if f.__module__.startswith(("torch", "fxla"))]   # (F.relu, nn.Linear: library)
    labels = [label for fn in found for *_, label in plain_reads(fn)]
    assert "test_global_reads._helper: global HP['beta']" in labels
    assert "test_global_reads._outer_helper: global CONFIG.train.lr" in labels
    assert not any("F." in label or "nn." in label for label in labels)


# -- the forms a value reaches traced code in (each: eager's result after every change) --------------------------
LST = [1.0, 2.0]


class _Scale:
    beta = 1.0

    @staticmethod
    def apply(x):
        return x * SCALE


def _decorated(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        return fn(*args)
    return wrapper


@_decorated
def _wrapped_helper(x):
    return x * SCALE


@torch.no_grad()
def _no_grad_helper(x):
    return x + HP["beta"]


class _Forms(nn.Module):
    def __init__(self, form, cfg=None):
        super().__init__()
        self.form, self.cfg = form, cfg

    @property
    def gain(self):
        return SCALE * 2

    def forward(self, x):
        f = self.form
        if f == "list":
            return x * LST[0] + sum(LST)
        if f == "dict_get":
            return x * HP.get("beta", 0.0)
        if f == "class_attr":
            return x * _Scale.beta
        if f == "staticmethod":
            return _Scale.apply(x)
        if f == "decorated":
            return _wrapped_helper(x) + _no_grad_helper(x)
        if f == "property":
            return x * self.gain
        if f == "getattr":
            return x * getattr(CONFIG, "beta") + getattr(CONFIG.train, "lr", 0.0)
        if f == "alias":
            cfg = CONFIG
            train = cfg.train
            return x * cfg.beta + train.lr
        return x * self.cfg()


def _closure_config():
    cfg = _Config()
    return (lambda: cfg.beta), cfg


def _change(form, value, cfg):
    global SCALE
    SCALE = value
    HP["beta"] = value
    LST[0] = value
    _Scale.beta = value
    if cfg is not None:
        cfg.beta = value
    CONFIG.beta = CONFIG.train.lr = value


@pytest.mark.parametrize("form", ["list", "dict_get", "class_attr", "staticmethod", "decorated", "property",
                                  "closure_object", "getattr", "alias"])
def test_every_form_of_reading_a_plain_value_follows_it(form):
    saved = (SCALE, dict(HP), list(LST), _Scale.beta, CONFIG.beta, CONFIG.train.lr)
    read, cfg = _closure_config() if form == "closure_object" else (None, None)
    model, x = _Forms(form, read), torch.randn(3)
    fast = fxla.compile(model)
    try:
        for value in (2.0, 3.0, 2.0):
            _change(form, value, cfg)
            torch.testing.assert_close(fast(x), model(x))
    finally:
        _change(form, saved[0], None)
        HP.clear()
        HP.update(saved[1])
        LST[:] = saved[2]
        _Scale.beta = saved[3]
        CONFIG.beta, CONFIG.train.lr = saved[4], saved[5]


class _Logs(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(3, 3)

    def forward(self, x):
        return self.l(x) * HP["beta"]

    def log_stats(self):            # (never called by forward: its reads are not watched)
        return f"step {HP['step']} {SCALE}"


def test_values_forward_does_not_read_change_nothing():
    """A method forward never calls, another key of a dict forward reads, an equal config object made anew: none
    of them is a change (no trace, no StateChangeError)."""
    global SCALE, CONFIG
    saved = (SCALE, dict(HP), CONFIG)
    model, x = _Logs(), torch.randn(2, 3)
    fast = fxla.compile(model)
    try:
        HP["step"] = 0
        fast(x)
        traces = fast._history.compiles
        for i in range(20):
            SCALE, HP["step"], CONFIG = float(i), i, _Config()
            torch.testing.assert_close(fast(x), model(x))
        assert fast._history.compiles == traces
    finally:
        SCALE, CONFIG = saved[0], saved[2]
        HP.clear()
        HP.update(saved[1])


def test_helpers_of_the_same_name_in_two_modules_are_both_followed():
    import types
    for n, scale in (("_mod_a", 1.0), ("_mod_b", 10.0)):
        mod = types.ModuleType(n)
        mod.__file__ = __file__
        exec("SCALE = %r\ndef helper(x):\n    return x * SCALE\n" % scale, vars(mod))
        globals()[n] = mod

    class Two(nn.Module):
        def forward(self, x):
            return _mod_a.helper(x) + _mod_b.helper(x)  # noqa: F821  (made above)
    model, x = Two(), torch.ones(2)
    fast = fxla.compile(model)
    for a, b in ((3.0, 10.0), (3.0, 5.0)):
        _mod_a.SCALE, _mod_b.SCALE = a, b  # noqa: F821
        torch.testing.assert_close(fast(x), model(x))


class _Slotted:
    __slots__ = ("_d",)

    def __init__(self):
        self._d = {"beta": 2.0}

    def __getattr__(self, k):
        return self._d[k]          # (KeyError for anything else: getattr must not crash the compile)


SLOTTED = _Slotted()


def test_a_config_whose_getattr_raises_compiles():
    class M(nn.Module):
        def forward(self, x):
            return x * SLOTTED.beta
    model, x = M(), torch.ones(2)
    fast = fxla.compile(model)
    torch.testing.assert_close(fast(x), model(x))
    SLOTTED._d["beta"] = 4.0
    torch.testing.assert_close(fast(x), model(x))


class _OrderedConfig(collections.OrderedDict):
    pass


OCFG = _OrderedConfig(beta=1.0)
HQ: dict = {}
BIG = [1.0] * 20


def _make_scaled(cfg):
    def scaled(x):
        return x * cfg.beta
    return scaled


class _Smooth(nn.Module):
    def __init__(self):
        super().__init__()
        self.eps = 0.0

    def forward(self, x):
        return x + self.eps + SCALE


CRIT = _Smooth()


class _ScaleFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * SCALE

    @staticmethod
    def backward(ctx, g):
        return g * SCALE


def test_more_forms_of_reading_a_plain_value_follow_it():
    """Closures of one factory's functions (one label), a dict subclass, ``d.get(k, default)`` of a key added
    later, a global module instance's own attributes and forward, an autograd.Function's forward, a long list."""
    global SCALE
    first, second = _Config(), _Config()
    f1, f2 = _make_scaled(first), _make_scaled(second)

    class M(nn.Module):
        def forward(self, x):
            return (f1(x) + 10 * f2(x) + OCFG["beta"] + HQ.get("beta", 1.0) + CRIT(x) + _ScaleFn.apply(x)
                    + sum(BIG))
    model, x = M(), torch.ones(2)
    fast = fxla.compile(model)
    saved = SCALE
    try:
        torch.testing.assert_close(fast(x), model(x))
        for change in (lambda: setattr(second, "beta", 5.0), lambda: OCFG.__setitem__("beta", 3.0),
                       lambda: HQ.__setitem__("beta", 6.0), lambda: setattr(CRIT, "eps", 2.0),
                       lambda: globals().__setitem__("SCALE", 4.0), lambda: BIG.__setitem__(19, 11.0)):
            change()
            torch.testing.assert_close(fast(x), model(x))
    finally:
        SCALE, CRIT.eps, BIG[19] = saved, 0.0, 1.0
        OCFG["beta"] = 1.0
        HQ.clear()


_SUFFIX = "ta"


def _parameter(x, cfg=None):          # (a parameter assigned a default: the caller's own when given)
    if cfg is None:
        cfg = CONFIG
    return x * cfg.beta


def _computed_name(x, cfg=None):      # (getattr with a computed name: not CONFIG.be)
    return x * getattr(CONFIG, "be" + _SUFFIX)


def _missing_then_set(x, cfg=None):   # (getattr with a default, the attribute set later)
    return x * getattr(CONFIG, "gamma", 0.5)


def _genexpr(x, cfg=None):            # (an alias read in a comprehension)
    conf = CONFIG
    return sum(x * conf.beta for _ in range(2))


def _aliases(fn):
    """A model whose forward calls ``fn`` (a closure variable: followed)."""
    class Aliases(nn.Module):
        def forward(self, x, cfg=None):
            return fn(x, cfg)
    return Aliases()


@pytest.mark.parametrize("form", ["parameter", "computed_name", "missing_then_set", "genexpr"])
def test_aliases_and_getattr_forms(form):
    own = _Config()
    model, x = _aliases(globals()["_" + form]), torch.randn(3)
    fast = fxla.compile(model, concrete_args={"cfg": own} if form == "parameter" else None)
    saved = CONFIG.beta
    try:
        for value in range(10):                   # (more values than traces a changing value may have: a watch
            if form != "computed_name":           # of CONFIG.beta where forward reads own.beta, or of CONFIG.be
                CONFIG.beta = float(value)        # where it reads CONFIG.beta, is an error)
            CONFIG.be = value
            if form == "missing_then_set" and value == 3:
                CONFIG.gamma = 4.0
            if form in ("parameter", "computed_name"):
                torch.testing.assert_close(fast(x), model(x, own) if form == "parameter" else model(x))
            elif value < 8:
                torch.testing.assert_close(fast(x), model(x))
    finally:
        CONFIG.beta = saved
        for name in ("be", "gamma"):
            if hasattr(CONFIG, name):
                delattr(CONFIG, name)
