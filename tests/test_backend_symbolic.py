"""torch.compile(backend="fxla") on dynamo's symbolic graphs: SymInt placeholders, size arithmetic, torch.Size of
symbols, unspecialised numbers; every size's result against eager (the backend specialises per size)."""
import math
import operator

import pytest
import torch
import torch._dynamo
import torch.fx

from fxla import FxlaError
from fxla.backend import BackendError, fxla_backend
from fxla.compile import OptionError

SIZES = [(2, 6), (3, 8), (5, 10)]


pytestmark = pytest.mark.usefixtures("fresh_dynamo")      # (tests/conftest.py)


class Recorder:
    """A backend that compiles with fxla and keeps what dynamo handed over and what fxla returned."""

    def __init__(self, **options):
        self.options = options
        self.graphs, self.compiled = [], []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        fn = fxla_backend(gm, example_inputs, **self.options)
        self.compiled.append(getattr(fn, "compiled", fn))     # (the CompiledModule behind a number adapter)
        return fn

    def symbolic(self):
        """How many of the graphs had a SymInt placeholder."""
        return sum(any(isinstance(n.meta.get("example_value"), torch.SymInt) for n in gm.graph.nodes
                       if n.op == "placeholder") for gm in self.graphs)


def _check_sizes(fn, make_args, dynamic, sizes=SIZES, backend=None):
    backend = backend or Recorder()
    compiled = torch.compile(fn, backend=backend, dynamic=dynamic)
    for size in sizes:
        args = make_args(size)
        torch.testing.assert_close(compiled(*args), fn(*args), rtol=1e-5, atol=1e-5)
    assert backend.symbolic() >= 1, "no symbolic graph reached the backend"
    return backend


# -- size constructs dynamo puts in its graphs ---------------------------------------------------------------------
CASES = {
    "view_by_sizes": lambda x: x.view(x.shape[0] * x.shape[1], -1).relu(),
    "reshape_floordiv": lambda x: x.reshape(x.shape[0], x.shape[1] // 2, 2).sum(-1),
    "torch_size": lambda x: x.view(torch.Size([x.shape[0], -1])) * 2,
    "arange": lambda x: x + torch.arange(x.shape[1], dtype=x.dtype),
    "zeros": lambda x: torch.zeros(x.shape[0], 3) + x[:, :3],
    "ones_of_size": lambda x: torch.ones(x.size()) * x,
    "expand": lambda x: x[:, :1].expand(x.shape[0], x.shape[1]) + x,
    "slice_by_size": lambda x: x[:, : x.shape[1] // 2] * 2,
    "narrow": lambda x: x.narrow(1, 1, x.shape[1] - 2),
    "full": lambda x: torch.full((x.shape[0], x.shape[1]), 2.0) + x,
    "split": lambda x: torch.cat(x.split(x.shape[1] // 2, dim=1)[::-1], 1),
    "tril_mask": lambda x: x.unsqueeze(1).masked_fill(~torch.ones(x.shape[1], x.shape[1], dtype=torch.bool).tril(),
                                                       0.0),
    "numel": lambda x: x.sum() / x.numel(),
    "times_size": lambda x: x * x.shape[0] - x.shape[1] % 3,
    "sqrt_of_size": lambda x: x / math.sqrt(x.shape[-1]),
    "ceil": lambda x: x * math.ceil(x.shape[1] / 3),
    "floor": lambda x: x * math.floor(x.shape[1] / 3),
    "trunc": lambda x: x * math.trunc(x.shape[1] / 4),
    "round": lambda x: x * round(x.shape[1] / 4),
    "min_max": lambda x: x[:, :max(2, x.shape[1] - 3)].sum() + min(x.shape[0], x.shape[1], 4),
    "float_of_size": lambda x: x * float(x.shape[-1]),
    "int_of_ratio": lambda x: x[:, :int(x.shape[-1] / 2)],
    "tensor_of_size": lambda x: x * torch.tensor(x.shape[1]),
    "tensor_of_sizes": lambda x: x * torch.tensor([[x.shape[0], x.shape[1]], [1, x.shape[0]]]).sum(),
    "as_tensor_of_ratio": lambda x: x * torch.as_tensor(x.shape[1] / 4),
    "scalar_tensor": lambda x: x * torch.scalar_tensor(x.shape[1]),
    "tensor_of_shape": lambda x: torch.tensor(x.shape, dtype=torch.float32).sum() + x,   # (a torch.Size node:
    "as_tensor_of_shape_slice": lambda x: torch.as_tensor(x.shape[1:]) * x.sum(),      # once a raw TypeError)
    "new_tensor_of_shape": lambda x: x.new_tensor(x.shape) + x.sum(),
    "tensor_of_empty_shape": lambda x: x + torch.tensor(x.shape[2:]).sum(),
    "pad_to_multiple": lambda x: torch.nn.functional.pad(x, (0, 8 - x.shape[1] % 8)),
    "size_returned": lambda x: (x * 2, x.shape[0], x.shape),
}


@pytest.mark.parametrize("name", list(CASES))
def test_size_construct_matches_eager_for_every_size(name):
    _check_sizes(CASES[name], lambda s: (torch.randn(*s),), dynamic=True)


def test_automatic_dynamic_shapes_recompile_into_one_symbolic_graph():
    """The default: the second size makes dynamo hand over a symbolic graph, which serves every later size."""
    backend = _check_sizes(CASES["view_by_sizes"], lambda s: (torch.randn(*s),), dynamic=None,
                           sizes=SIZES + [(7, 4)])
    assert len(backend.graphs) == 2 and backend.symbolic() == 1
    # one trace of the symbolic graph, one compiled signature per size it served
    assert backend.compiled[1].cache_size == 3


def test_int_and_float_arguments_are_bound_per_call():
    def fn(x, n, scale):
        return x[:, :n] * scale + n

    backend = Recorder()
    compiled = torch.compile(fn, backend=backend, dynamic=True)
    for (rows, cols), n, scale in zip(SIZES, (2, 3, 4), (0.5, 1.5, 0.5)):   # (not 0 or 1: specialised)
        x = torch.randn(rows, cols)
        torch.testing.assert_close(compiled(x, n, scale), fn(x, n, scale))
    assert len(backend.graphs) == 1
    assert backend.compiled[0].cache_size == 3        # (0.5 again, but with other sizes)


def test_module_numbers_dynamo_does_not_specialise_match_eager():
    """dynamic=True passes a module's float attributes (LayerNorm's eps, BatchNorm's momentum) as 0-d tensors
    read with .item(); the backend passes their values."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                                torch.nn.Flatten(), torch.nn.LayerNorm(4 * 6 * 6)).eval()
    compiled = torch.compile(model, backend="fxla", dynamic=True)
    with torch.no_grad():
        for batch in (2, 3, 5):
            x = torch.randn(batch, 3, 6, 6)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)


class Attention(torch.nn.Module):
    """Self-attention written with sizes read from the input (B, T, C = x.shape), as models are."""

    def __init__(self, width=16, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(width, 3 * width)
        self.out = torch.nn.Linear(width, width)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (y.view(b, t, self.heads, c // self.heads).transpose(1, 2) for y in (q, k, v))
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        att = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.heads)
        att = att.masked_fill(~mask, float("-inf")).softmax(-1)
        return self.out((att @ v).transpose(1, 2).reshape(b, t, c))


@pytest.mark.parametrize("dynamic", [None, True], ids=["automatic", "dynamic"])
def test_modules_match_eager_for_three_batch_and_sequence_sizes(dynamic):
    torch.manual_seed(0)
    model = Attention().eval()
    with torch.no_grad():
        _check_sizes(model, lambda s: (torch.randn(s[0], s[1], 16),), dynamic)


def test_sym_size_calls_are_size_reads():
    """``torch.ops.aten.sym_size.int`` (as make_fx and AOT graphs spell ``x.size(0)``) in a torch-level graph."""
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    rows = graph.call_function(torch.ops.aten.sym_size.int, (x, 0))
    view = graph.call_method("view", (x, rows, -1))
    graph.output(graph.call_function(torch.mul, (view, graph.call_function(operator.floordiv, (rows, 2)))))
    gm = torch.fx.GraphModule(torch.nn.Module(), graph)
    compiled = fxla_backend(gm, [torch.randn(4, 3)])
    for shape in [(4, 3), (6, 2, 2)]:
        x = torch.randn(*shape)
        torch.testing.assert_close(compiled(x), gm(x))
    assert compiled.cache_size == 2


def test_max_signatures_bounds_the_sizes_kept_compiled():
    backend = Recorder(max_signatures=2)
    _check_sizes(CASES["reshape_floordiv"], lambda s: (torch.randn(*s),), dynamic=True, backend=backend)
    assert backend.compiled[0].cache_size == 2


def test_unknown_backend_option_is_refused():
    with pytest.raises(OptionError, match="unknown option"):
        fxla_backend(torch.fx.symbolic_trace(torch.nn.ReLU()), [torch.randn(2)], devcie="cpu")


# -- errors: fxla's, at the user's line ----------------------------------------------------------------------------
def _cause(excinfo):
    """The fxla error behind dynamo's BackendCompilerFailed."""
    err = excinfo.value
    while not isinstance(err, FxlaError) and err.__cause__ is not None:
        err = err.__cause__
    return err


def test_unsupported_op_in_a_symbolic_graph_names_the_users_line():
    def fn(x):
        return torch.special.bessel_j0(x[:, : x.shape[1] // 2])

    compiled = torch.compile(fn, backend="fxla", dynamic=True)
    with pytest.raises(Exception) as excinfo:
        compiled(torch.randn(2, 6))
    err = _cause(excinfo)
    assert isinstance(err, FxlaError), repr(excinfo.value)
    assert f"{__file__}:{fn.__code__.co_firstlineno + 1}" in str(err)


def _hand_made_graph(make_call):
    """A dynamo-like graph of ``fn(x, n)`` whose call node (made by ``make_call(graph, x, n)``) has a
    ``stack_trace`` naming this file, and no example values (so the backend converts it as it is)."""
    graph = torch.fx.Graph()
    x, n = graph.placeholder("x"), graph.placeholder("n")
    call = make_call(graph, x, n)
    call.meta["stack_trace"] = f'  File "{__file__}", line 7, in fn\n    return x * round(n)\n'
    graph.output(graph.call_function(torch.mul, (x, call)))
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def test_python_that_cannot_run_on_symbols_is_a_backend_error_at_the_users_line():
    gm = _hand_made_graph(lambda g, x, n: g.call_method("__round__", (n,)))
    with pytest.raises(BackendError) as excinfo:
        fxla_backend(gm, [torch.randn(3), 2.5])
    err = excinfo.value
    assert err.where.file == __file__ and err.where.line == 7
    assert "AttributeError" in err.what and "@torch.compiler.disable" in err.fix


def test_trace_errors_in_dynamos_graph_point_at_the_users_line():
    gm = _hand_made_graph(lambda g, x, n: g.call_function(math.floor, (n,)))
    with pytest.raises(FxlaError) as excinfo:
        fxla_backend(gm, [torch.randn(3), 2.5])
    err = excinfo.value
    assert not isinstance(err, TypeError)
    assert err.where.file == __file__ and err.where.line == 7
    assert any(str(loc.file).startswith("<fxla-generated-") for loc in err.locations)


# -- Hugging Face generate: a second prompt length -----------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::fxla.recompile.RecompileWarning")    # (a dynamic cache: a size per token)
def test_gpt2_generate_with_prompts_of_other_lengths_matches_eager():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=100, bos_token_id=0,
                                     eos_token_id=0)
    model = transformers.GPT2LMHeadModel(config).eval()
    greedy = transformers.GenerationConfig(max_new_tokens=8, do_sample=False, pad_token_id=0)
    prompts = [torch.randint(1, 100, (1, n)) for n in (5, 7, 4)]
    with torch.no_grad():
        want = [model.generate(ids, generation_config=greedy).tolist() for ids in prompts]
        backend = Recorder()
        model.forward = torch.compile(model.forward, backend=backend)
        got = [model.generate(ids, generation_config=greedy).tolist() for ids in prompts]
    assert got == want
    assert backend.symbolic() >= 1
