"""fxla's loggers (fxla.base.logs): compiles with their reason and phases, phase times, cache hits/misses and
drops, the graphs dynamo hands the torch.compile backend -- and nothing printed unless logging is configured."""
from __future__ import annotations

import logging
import re
import subprocess
import sys

import torch
import torch.nn as nn

import fxla


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))


def messages(caplog, name):
    return [r.getMessage() for r in caplog.records if r.name == name]


def test_the_hierarchy_prints_nothing_unless_configured():
    root = logging.getLogger("fxla")
    assert any(isinstance(h, logging.NullHandler) for h in root.handlers)
    for name in ("fxla", "fxla.compile", "fxla.phases", "fxla.cache", "fxla.dynamo"):
        assert logging.getLogger(name).level == logging.NOTSET        # fxla sets no level of its own
    code = ("import torch, fxla; fast = fxla.compile(torch.nn.Linear(2, 2), cache_dir=None); "
            "fast(torch.ones(3, 2)); fast(torch.ones(4, 2))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    for fragment in ("compiled input signature", "took", "cache", "Linear"):
        assert fragment not in done.stderr + done.stdout, done.stderr


def test_recompile_reasons_eviction_and_mode(caplog):
    model = mlp()
    fast = fxla.compile(model, max_signatures=1)
    with torch.no_grad(), caplog.at_level(logging.INFO, logger="fxla"):
        fast(torch.randn(2, 4))
        fast(torch.randn(3, 4))
        fast(torch.randn(2, 4))                 # dropped by the one before: compiled again
        model.eval()
        fast(torch.randn(2, 4))                 # the other mode's trace
    compiled = messages(caplog, "fxla.compile")
    assert len(compiled) == 4
    assert "why: the first call" in compiled[0]
    assert "why: changed from signature #1: input float32[2, 4] -> float32[3, 4]" in compiled[1]
    assert "why: the same inputs as signature #1, which was dropped from the in-memory cache (max_signatures=1)" \
        in compiled[2]
    assert "why: the module's mode changed to eval (train()/eval())" in compiled[3]
    dropped = messages(caplog, "fxla.cache")
    assert dropped[0] == ("Sequential: in-memory cache full (max_signatures=1): dropped the least recently used "
                          "signature (float32[2, 4])")


def test_changed_inputs_are_named_old_and_new(caplog):
    fast = fxla.compile(lambda x, mask: x * mask)
    with caplog.at_level(logging.INFO, logger="fxla.compile"):
        fast(torch.ones(2, 3), torch.ones(2, 3))
        fast(torch.ones(2, 3), torch.ones(2, 3, dtype=torch.float64))
    assert "why: changed from signature #1: mask float32[2, 3] -> float64[2, 3]; phases: " \
        in messages(caplog, "fxla.compile")[1]


def test_phases_are_logged_with_their_times(caplog):
    with torch.no_grad(), caplog.at_level(logging.DEBUG, logger="fxla.phases"):
        fast = fxla.compile(mlp())
        fast(torch.randn(2, 4))
    phases = messages(caplog, "fxla.phases")
    assert [m.split(" took ")[0] for m in phases] == [f"Sequential: {stage}" for stage in
                                                      ("trace", "prepare", "fxla", "stablehlo", "layout", "compile")]
    assert phases[0].endswith(" s (5 nodes)")                     # input, 3 layers, output
    assert phases[1].endswith("(shape propagation, functionalization; 5 nodes)")
    assert phases[-1].endswith("(XLA compile)") or phases[-1].endswith("(executable from the on-disk cache)")


def test_disk_cache_hits_misses_and_writes(caplog, tmp_path):
    model = mlp()
    with torch.no_grad(), caplog.at_level(logging.DEBUG, logger="fxla.cache"):
        fxla.compile(model, cache_dir=tmp_path)(torch.randn(2, 4))
        first = messages(caplog, "fxla.cache")
        caplog.clear()
        fxla.compile(model, cache_dir=tmp_path)(torch.randn(2, 4))     # another module: from the disk
        second = messages(caplog, "fxla.cache")
    entry = next(p for p in tmp_path.iterdir() if p.suffix == ".fxlaexe")
    assert first[:2] == [f"on-disk cache miss: no entry {entry}",
                         f"on-disk cache write: {entry} ({entry.stat().st_size} bytes)"]
    assert second[0].startswith(f"on-disk cache hit: {entry} (")
    assert first[-1] == second[-1] == "Sequential: in-memory cache miss: compiled input signature #1"


def test_dynamo_graphs_and_their_compiles_are_logged(caplog):
    torch._dynamo.reset()

    def f(x):
        return torch.relu(x) * 2

    compiled = torch.compile(f, backend="fxla")
    with caplog.at_level(logging.INFO, logger="fxla"):
        compiled(torch.randn(2, 4))
        compiled(torch.randn(3, 4))          # dynamo recompiles with a symbolic size
        compiled(torch.randn(5, 4))          # the same graph: a new input signature of it
    graphs = messages(caplog, "fxla.dynamo")
    assert len(graphs) == 2
    assert re.match(r"dynamo graph #\d+ \(dynamo compile id \d+/0\): 4 nodes, ", graphs[0]), graphs[0]
    assert "1 placeholders: l_x_: float32[2, 4]" in graphs[0]
    second = graphs[1]
    number = second.split("#")[1].split(" ")[0]
    assert re.search(r"\(dynamo compile id (\d+)/1: recompile 1 of frame \1\): 5 nodes, 2 placeholders: ", second)
    symbol = second.split("placeholders: ")[1].split(":")[0]
    assert f"{symbol}: SymInt {symbol}; l_x_: float32[{symbol}, 4] (symbols {symbol})" in second
    compiles = [m for m in messages(caplog, "fxla.compile") if f"(dynamo graph #{number})" in m]
    assert len(compiles) == 2
    assert f"why: changed from signature #1: {symbol} 3 -> 5; l_x_ float32[3, 4] -> float32[5, 4]" in compiles[1]


def linear():
    torch.manual_seed(0)
    return nn.Linear(4, 2)


#: the compile phase as a compile record gives it
COMPILED = r"compile \d+\.\d{3} s \((XLA compile|executable from the on-disk cache)\)"


def test_each_gradient_program_of_a_training_step_is_a_compile_record(caplog):
    model = linear()
    fast = fxla.compile(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with caplog.at_level(logging.INFO, logger="fxla.compile"):
        for _ in range(2):                          # the second step compiles nothing
            fast(torch.randn(3, 4)).pow(2).sum().backward()
            opt.step()
            opt.zero_grad()
        x = torch.randn(3, 4, requires_grad=True)   # another set of tensors requiring grad: another program
        fast(x).sum().backward()
    compiled = messages(caplog, "fxla.compile")
    assert len(compiled) == 5, compiled
    assert compiled[0].startswith("Linear: compiled input signature #1 (input=float32[3, 4]) in ")
    assert re.fullmatch(r"Linear: compiled the forward with residuals for input signature #1 \(gradients of "
                        r"module\.bias, module\.weight\) in \d+\.\d\d s; why: the first call of input signature #1 "
                        r"that records gradients of these tensors; phases: prepare \d+\.\d{3} s, "
                        r"fxla \d+\.\d{3} s, vjp \d+\.\d{3} s, stablehlo \d+\.\d{3} s, "
                        rf"layout \d+\.\d{{3}} s, {COMPILED}", compiled[1]), compiled[1]
    assert re.fullmatch(r"Linear: compiled the backward for input signature #1 \(gradients of module\.bias, "
                        r"module\.weight\) in \d+\.\d\d s; why: the first backward through its forward; "
                        rf"phases: stablehlo \d+\.\d{{3}} s, layout \d+\.\d{{3}} s, {COMPILED}",
                        compiled[2]), compiled[2]
    assert compiled[3].startswith("Linear: compiled the forward with residuals for input signature #1 (gradients "
                                  "of input, module.bias, module.weight) in ")
    assert compiled[4].startswith("Linear: compiled the backward for input signature #1 (gradients of input, "
                                  "module.bias, module.weight) in ")


def test_torch_compile_training_step_logs_its_gradient_programs(caplog):
    torch._dynamo.reset()
    model = linear()
    compiled = torch.compile(model, backend="fxla")
    with caplog.at_level(logging.INFO, logger="fxla"):
        compiled(torch.randn(3, 4)).pow(2).sum().backward()
    assert model.weight.grad is not None
    (graph,) = messages(caplog, "fxla.dynamo")
    number = graph.split("#")[1].split(" ")[0]
    records = [m for m in messages(caplog, "fxla.compile") if m.startswith(f"DynamoGraph (dynamo graph #{number}): ")]
    assert [m.split(": ", 1)[1].split(" (")[0] for m in records] == [
        "compiled input signature #1", "compiled the forward with residuals for input signature #1",
        "compiled the backward for input signature #1"]
    sources = records[1].split("(gradients of ")[1].split(")")[0]
    assert "weight" in sources and "bias" in sources and "args" not in sources, sources   # (not the input x)
    assert records[2].endswith(")") and "; phases: stablehlo " in records[2]
