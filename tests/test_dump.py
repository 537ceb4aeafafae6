"""fxla-dump on models outside the happy path (run in-process through main()): concrete shapes and concrete
arguments (Hugging Face, shape asserts), keyword and integer inputs, --run over any output structure, -v's
phases and total, --print-ir-after-all over every step fxla.compile runs, the HLO stage without XLA's tables,
--format svg (a stand-in `dot` on PATH), and Stages.hlo."""
import os
import stat
import subprocess
import sys
import textwrap
import time

import pytest
import torch

import fxla
from fxla.pipeline import Pipeline, StagesError, readable_hlo
from fxla.tools import dump
from fxla.tools.compare import compare, leaves

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.join(ROOT, "examples", "models.py")
GPT2 = os.path.join(ROOT, "lit_tests", "Tools", "fxla-dump", "Inputs", "tiny_gpt2.py")


def run_dump(capsys, *argv):
    rc = dump.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def factory(tmp_path, source: str, name: str = "m.py") -> str:
    f = tmp_path / name
    f.write_text("import torch\n" + textwrap.dedent(source))
    return str(f)


# -- concrete shapes and arguments -----------------------------------------------------------------------------------
@pytest.mark.slow
def test_hf_gpt2_dumps_and_runs_with_concrete_shapes(capsys):
    """A Hugging Face GPT-2 with int64 token ids from --input-shape: traced per signature (--concrete-shapes),
    use_cache fixed (--concrete-args); --run compares the CausalLMOutput leaf by leaf."""
    rc, out, err = run_dump(capsys, f"{GPT2}:gpt2", "--input-shape", "2x16:i64", "--concrete-shapes",
                            "--concrete-args", "use_cache=false", "--stage", "fxla", "--run")
    assert rc == 0, err
    assert "tensor<2x16xi64>" in out
    assert "// run: output.logits: float32[2, 16, 128], max |fxla - eager| = " in out
    assert "(match: 1 of 1 leaves match)" in out and "MISMATCH" not in out
    # without --concrete-shapes the trace fails, and the error names the flags that fix it
    rc, _, err = run_dump(capsys, f"{GPT2}:gpt2", "--input-shape", "2x16:i64", "--stage", "graph")
    assert rc == 1 and "Traceback" not in err
    assert "fxla-dump: --concrete-shapes is fxla.compile(model, concrete_shapes=True)" in err


@pytest.mark.slow
def test_hf_gpt2_dumps_its_polymorphic_program_with_concrete_shapes(capsys):
    """--concrete-shapes with --dynamic: the trace keeps the marked length symbolic, and the dump shows the
    polymorphic fxla program, then the program refined to the example's sizes."""
    rc, out, err = run_dump(capsys, f"{GPT2}:gpt2", "--input-shape", "2x16:i64", "--concrete-shapes",
                            "--concrete-args", "use_cache=false", "--dynamic", "input_ids:1", "--stage", "fxla",
                            "--run")
    assert rc == 0, err
    polymorphic, _, refined = out.partition("// refined to the example inputs' sizes (pipeline stage 'refine'):")
    assert "%arg0: tensor<2x?xi64>" in polymorphic and "fxla.dim_size %arg0 {dim = 1}" in polymorphic
    assert "tensor<2x16xi64>" in refined and "(match: 1 of 1 leaves match)" in out


@pytest.mark.slow
def test_hf_gpt2_run_compares_the_kv_cache(capsys):
    """use_cache left at its default: the output also holds a DynamicCache, compared tensor by tensor."""
    rc, out, err = run_dump(capsys, f"{GPT2}:gpt2", "--input-shape", "2x16:i64", "--concrete-shapes", "--stage",
                            "graph", "--run")
    assert rc == 0, err
    for layer in (0, 1):
        for part in ("keys", "values"):
            assert f"// run: output.cache.layers[{layer}].{part}: float32[2, 2, 16, 32], max |fxla - eager| = " in out
    assert "MISMATCH" not in out


@pytest.mark.slow
def test_factory_gives_keyword_inputs(capsys):
    """A factory returning (model, example_args, example_kwargs): the attention_mask reaches the trace and the
    eager reference; concrete args as a JSON object."""
    rc, out, err = run_dump(capsys, f"{GPT2}:gpt2_with_mask", "--concrete-shapes", "--concrete-args",
                            '{"use_cache": false}', "--stage", "graph", "--run")
    assert rc == 0, err
    assert "%attention_mask" in out and "(match: 1 of 1 leaves match)" in out


ASSERTING = """
class Net(torch.nn.Module):          # nanoGPT-style: a size checked against a limit, then used as an int
    def __init__(self):
        super().__init__()
        self.pos = torch.nn.Embedding(8, 4)

    def forward(self, x, scale):
        b, t = x.shape
        assert t <= 8, f"sequence of {t} longer than 8"
        return x.unsqueeze(-1) * self.pos(torch.arange(t)) * scale

def make():
    return Net(), (torch.randn(2, 5), 3.0)
"""


def test_concrete_shapes_and_args_dump_a_model_with_a_shape_assert(capsys, tmp_path):
    spec = factory(tmp_path, ASSERTING) + ":make"
    rc, out, err = run_dump(capsys, spec, "--stage", "fxla", "--concrete-shapes", "--run")
    assert rc == 0, err and "tensor<2x5xf32>" in out and "(match: 1 of 1 leaves match)" in out
    # the Python float is a constant of the trace: with --concrete-args it is fixed, and eager gets it too
    rc, out, err = run_dump(capsys, spec.replace(":make", ":make"), "--stage", "graph", "--concrete-shapes",
                            "--input-shape", "2x5", "--concrete-args", "scale=2.5", "--run")
    assert rc == 0, err
    assert "%scale" not in out and "(match" in out
    rc, _, err = run_dump(capsys, spec, "--stage", "graph")
    assert rc == 1 and "Traceback" not in err and "--concrete-shapes" in err


@pytest.mark.parametrize("items,expected", [
    (["use_cache=false"], {"use_cache": False}),
    (["use_cache=False", "n=3", "mode=\"fast\"", "x=null"], {"use_cache": False, "n": 3, "mode": "fast", "x": None}),
    (['{"use_cache": false, "n": 2}', "n=4"], {"use_cache": False, "n": 4}),
])
def test_concrete_args_parse(items, expected):
    assert dump.parse_concrete_args(items) == expected


@pytest.mark.parametrize("item,needle", [("use_cache", "write NAME=VALUE"), ("mode=fast", "not a JSON value"),
                                         ("{use_cache: 1}", "not a JSON object"), ("2x=1", "write NAME=VALUE")])
def test_bad_concrete_args_are_clear_errors(capsys, item, needle):
    rc, _, err = run_dump(capsys, f"{MODELS}:mlp", "--concrete-args", item)
    assert rc == 1 and needle in err and "fix:" in err and "Traceback" not in err


def test_keyword_input_shape_and_integer_dtype(capsys, tmp_path):
    spec = factory(tmp_path, """
    class Emb(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(16, 4)

        def forward(self, ids, mask=None):
            return self.emb(ids) * mask.unsqueeze(-1)

    def make():
        return Emb()
    """) + ":make"
    rc, out, err = run_dump(capsys, spec, "--input-shape", "2x6:i64", "--input-shape", "mask=2x6", "--stage", "fxla",
                            "--run")
    assert rc == 0, err
    assert "tensor<2x6xi64>" in out and "tensor<2x6xf32>" in out and "(match" in out
    rc, _, err = run_dump(capsys, spec, "--input-shape", "2x6:i64", "--input-shape", "not-a-name=2x6")
    assert rc == 1 and "is not an argument name" in err


# -- --run over any output ---------------------------------------------------------------------------------------------
OUTPUTS = """
import collections
import dataclasses

Pair = collections.namedtuple("Pair", "first second")

@dataclasses.dataclass
class Out:
    hidden: torch.Tensor
    extra: object = None

def make():
    def fn(x):
        return {"seq": [x * 2, (x.sum(), None)], "pair": Pair(x + 1, 7), "obj": Out(x.relu()), "n": x.shape[0],
                "od": collections.OrderedDict(a=x - 1)}
    return fn, (torch.randn(3, 4),)
"""


def test_run_compares_every_leaf_of_any_output(capsys, tmp_path):
    rc, out, err = run_dump(capsys, factory(tmp_path, OUTPUTS) + ":make", "--stage", "graph", "--run")
    assert rc == 0, err
    for line in ("// run: output['seq'][0]: float32[3, 4], max |fxla - eager| = ",
                 "// run: output['seq'][1][0]: float32[], max",
                 "// run: output['seq'][1][1]: None (match)",
                 "// run: output['pair'].first: float32[3, 4]",
                 "// run: output['pair'].second: int 7 (match)",
                 "// run: output['obj'].hidden: float32[3, 4]",
                 "// run: output['obj'].extra: None (match)",
                 "// run: output['n']: int 3 (match)",
                 "// run: output['od']['a']: float32[3, 4]",
                 "(match: 9 of 9 leaves match)"):
        assert line in out, line


def test_compare_reports_each_mismatch():
    want = {"logits": torch.ones(2, 3), "ids": torch.arange(4), "n": 3, "gone": torch.zeros(1)}
    got = {"logits": torch.ones(2, 3) + 1e-3, "ids": torch.tensor([0, 1, 2, 4]), "n": 4, "new": 1.0}
    results = {r.path: r for r in compare(got, want)}
    assert not results["output['logits']"].ok and "6 of 6 values off" in results["output['logits']"].problem
    assert results["output['logits']"].diff == pytest.approx(1e-3, rel=1e-3)
    assert not results["output['ids']"].ok and "1 of 4 values differ" in results["output['ids']"].problem
    assert not results["output['n']"].ok and "fxla gave int 4" in results["output['n']"].problem
    assert "fxla's output has no such leaf" in results["output['gone']"].problem
    assert "eager's output has no such leaf" in results["output['new']"].problem
    close = compare((torch.ones(3) + 1e-7, float("nan")), (torch.ones(3), float("nan")))
    assert close[0].ok and not close[1].ok                # (nan == nan is False for Python floats)
    assert compare(torch.tensor([float("nan")]), torch.tensor([float("nan")]))[0].ok


def test_leaves_walk_objects_holding_tensors():
    class Cache:                    # a KV cache: tensors in the attributes of plain objects
        def __init__(self):
            self.layers = [type("Layer", (), {})(), ]
            self.layers[0].keys = torch.zeros(1)
            self._private = torch.ones(1)
    paths = [p for p, _ in leaves({"cache": Cache()})]
    assert paths == ["output['cache'].layers[0].keys"]


# -- -v ------------------------------------------------------------------------------------------------------------
FXLA_DUMP = os.path.join(os.path.dirname(sys.executable), "fxla-dump")     # the installed entry script


def _phases(err: str) -> dict:
    """``{phase: seconds}`` of ``-v``'s lines."""
    times = {}
    for line in err.splitlines():
        if line.startswith("[fxla] ") and " ... " in line:
            what, _, ms = line[len("[fxla] "):].rpartition(" ... ")
            times[what] = float(ms.split()[0]) / 1e3
    return times


@pytest.mark.slow
def test_verbose_phases_cover_the_wall_time_of_a_fresh_process(tmp_path):
    """fxla-dump run as a real process (a fresh interpreter: torch, JAX and fxla not imported yet): the phases
    (importing torch, JAX and fxla among them) add up to the reported total, and the total is the process's wall
    time less what -v does not count, Python's start-up before main() and its exit after the total line (both
    measured: the start-up as a process that only imports fxla.tools.dump, the exit from the total line's
    arrival)."""
    spec = factory(tmp_path, """
    import time
    time.sleep(0.3)                       # a slow import (transformers ...)

    def make():
        time.sleep(0.4)                   # a slow model construction
        return torch.nn.Linear(4, 2), (torch.randn(3, 4),)
    """, name="slow.py") + ":make"
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import fxla.tools.dump"], check=True, timeout=60)
    start_up = time.perf_counter() - started          # start-up, the entry script's import, a bare exit
    started = time.perf_counter()
    process = subprocess.Popen([FXLA_DUMP, spec, "--stage", "hlo", "-v", "--run"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    lines, total_seen = [], None
    for line in process.stderr:
        lines.append(line)
        if line.startswith("[fxla] total "):
            total_seen = time.perf_counter()
    assert process.wait(timeout=300) == 0, "".join(lines)
    ended = time.perf_counter()
    wall, exit_time = ended - started, ended - total_seen
    err = "".join(lines)
    times = _phases(err)
    for phase in ("import torch", "import JAX", "import fxla (MLIR bindings, frontend, lowering, runtime)",
                  f"import {spec[:-5]}", "call make() (model construction)", "tracing", "XLA compile",
                  "write the output", "eager run (PyTorch)"):
        assert phase in times, (phase, err)
    assert list(times)[:2] == ["import torch", "import JAX"], err       # nothing imported torch before
    assert times["import torch"] >= 0.2, err                             # (a fresh process imports it here)
    assert times[f"import {spec[:-5]}"] >= 0.3 and times["call make() (model construction)"] >= 0.4
    total = float(err.split("[fxla] total ")[1].split()[0]) / 1e3
    assert sum(times.values()) >= 0.95 * total - 0.1, err                # the phases account for the total
    assert total <= wall - exit_time
    # only start-up is left out (the bound scales with the measured start-up, so a loaded machine does not make
    # it fail; an uncounted torch import, >= 1 s, still does)
    assert wall - exit_time - total <= 2 * start_up + 0.3, (wall, exit_time, total, start_up)


def test_verbose_in_process(capsys, tmp_path):
    """-v through main() in this process (torch already imported): every phase, a total within the call's time."""
    start = time.perf_counter()
    rc, _, err = run_dump(capsys, f"{MODELS}:mlp", "--stage", "stablehlo", "-v")
    wall = time.perf_counter() - start
    assert rc == 0, err
    times = _phases(err)
    assert "import torch" in times and "lowering to fxla" in times and "write the output" in times
    total = float(err.split("[fxla] total ")[1].split()[0]) / 1e3
    rounding = 0.05e-3 * (len(times) + 1)            # (each time is printed to 0.1 ms)
    assert sum(times.values()) <= total + rounding and total <= wall + 0.05e-3


# -- --print-ir-after-all --------------------------------------------------------------------------------------------
def ir_dumps(capfd, *argv):
    """``{step: the IR printed after it}`` of ``fxla-dump --print-ir-after-all``, in order."""
    assert dump.main([*argv, "--print-ir-after-all"]) == 0
    err = capfd.readouterr().err        # MLIR prints from C++, straight to file descriptor 2
    dumps = {}
    for part in err.split("// -----// IR Dump After ")[1:]:
        banner, _, text = part.partition(" //----- //\n")
        dumps[banner.split(":")[0].split(" (")[0]] = text
    return dumps


def test_print_ir_after_all_shows_every_step_fxla_compile_runs(capfd):
    dumps = ir_dumps(capfd, f"{MODELS}:small_cnn", "--stage", "hlo")
    assert list(dumps) == ["functionalize", "lower-to-fxla", "verify-fxla", "fxla-fold-constants", "fxla-dce",
                           "convert-fxla-to-stablehlo", "canonicalize", "cse", "fxla-grouped-conv",
                           "fxla-pool-layout", "fxla-channels-last", "fxla-param-layout"]
    # the IR after each device layout pass: conv2 (2 x 4x4 output positions) as im2col from fxla-grouped-conv on,
    # the pool channels-last between transposes from fxla-pool-layout on
    assert dumps["cse"].count("stablehlo.convolution") == 2
    assert dumps["fxla-grouped-conv"].count("stablehlo.convolution") == 1
    assert "stablehlo.concatenate" not in dumps["cse"] and "stablehlo.concatenate" in dumps["fxla-grouped-conv"]
    assert "stablehlo.reduce_window" in dumps["fxla-pool-layout"]
    assert "stablehlo.transpose" in dumps["fxla-pool-layout"]
    dumps = ir_dumps(capfd, f"{MODELS}:mlp", "--stage", "hlo")
    main_before = dumps["fxla-pool-layout"].split("func.func @main")[1].split("{")[0]
    main_after = dumps["fxla-param-layout"].split("func.func @main")[1].split("{")[0]
    assert "tensor<128x64xf32>" in main_before and "tensor<64x128xf32>" in main_after   # fc1.weight as [in, out]


def test_print_ir_after_all_shows_functionalization(capfd, tmp_path):
    spec = factory(tmp_path, """
    def make():
        def fn(x):
            y = x * 2
            y.add_(1)
            return y
        return fn, (torch.randn(3),)
    """) + ":make"
    after = ir_dumps(capfd, spec, "--stage", "stablehlo")["functionalize"]
    assert "target=add_]" not in after and "call_method[target=add]" in after


# -- the HLO stage and Stages.hlo ------------------------------------------------------------------------------------
def test_hlo_stage_without_xla_source_tables(capsys):
    rc, out, _ = run_dump(capsys, f"{MODELS}:mlp", "--stage", "hlo")
    assert rc == 0 and out.startswith("HloModule")
    for table in ("FileNames", "FunctionNames", "FileLocations", "StackFrames", "stack_frame_id"):
        assert table not in out
    assert 'source_file="' + MODELS + '" source_line=' in out      # the frames, as each instruction's source
    assert "fusion(" in out or "dot(" in out                         # the HLO is kept


def test_readable_hlo_resolves_frames():
    text = ('HloModule m\n\nFileNames\n1 "a.py"\n2 "b.py"\n\nFunctionNames\n1 "f"\n\nFileLocations\n'
            '1 {file_name_id=2 function_name_id=1 line=7 end_line=7 column=1 end_column=2}\n\n'
            'StackFrames\n1 {file_location_id=1 parent_frame_id=1}\n\n\n'
            'ENTRY %main {\n  ROOT %x = f32[] add(%a, %b), metadata={op_name="x" stack_frame_id=1}\n}\n')
    assert readable_hlo(text) == ('HloModule m\n\nENTRY %main {\n  ROOT %x = f32[] add(%a, %b), '
                                  'metadata={op_name="x" source_file="b.py" source_line=7}\n}\n')
    assert readable_hlo("HloModule m\n\nENTRY %main {}\n") == "HloModule m\n\nENTRY %main {}\n"


def test_stages_hlo():
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU())
    compiled = fxla.compile(model)
    x = torch.randn(2, 4)
    stages = compiled.lower(x)
    assert stages.executable is None                     # lowering compiles nothing
    hlo = stages.hlo
    assert hlo.startswith("HloModule") and "StackFrames" not in hlo and "f32[2,8]" in hlo
    assert hlo == readable_hlo(compiled.executable_for(x).hlo_text())
    concrete = fxla.compile(model, concrete_shapes=True)
    assert "f32[3,8]" in concrete.lower(torch.randn(3, 4)).hlo
    with pytest.raises(StagesError, match="fix:"):
        Pipeline().lower(compiled.graph_module, (x,)).hlo


# -- --format svg, Graphviz ------------------------------------------------------------------------------------------
def fake_dot(tmp_path, script: str) -> str:
    """A folder holding a stand-in `dot` (the tests do not need Graphviz installed)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    dot = folder / "dot"
    dot.write_text("#!/bin/sh\n" + script)
    dot.chmod(dot.stat().st_mode | stat.S_IEXEC)
    return str(folder)


def test_svg_without_a_stage_draws_the_graph(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", fake_dot(tmp_path, "grep -c call_module >/dev/null; echo '<svg>drawn</svg>'\n"))
    rc, out, err = run_dump(capsys, f"{MODELS}:mlp", "--format", "svg")
    assert rc == 0, err
    assert out.strip() == "<svg>drawn</svg>"


def test_svg_without_graphviz_is_a_clear_error_without_a_location(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))                # no `dot` there
    rc, _, err = run_dump(capsys, f"{MODELS}:mlp", "--format", "svg", "-v")
    assert rc == 1 and "the Graphviz `dot` program is not installed" in err and "fix: install Graphviz" in err
    assert "  at " not in err and "[fxla] tracing" not in err      # no location; failed before any tracing
    monkeypatch.setenv("PATH", fake_dot(tmp_path, "echo broken >&2; exit 3\n"))
    rc, _, err = run_dump(capsys, f"{MODELS}:mlp", "--format", "svg")
    assert rc == 1 and "`dot` exited with status 3" in err and "broken" in err
    assert "  at " not in err and "dot -V" in err


def test_help_is_plain_text(capsys):
    with pytest.raises(SystemExit):
        dump.main(["--help"])
    out = capsys.readouterr().out
    assert "`" not in out and "--concrete-shapes" in out and "example_kwargs" in out


def test_dump_and_explain_share_their_model_options():
    """fxla-dump and fxla-explain take a model alike: the spec, --input-shape, --concrete-args and --device come
    from one helper (add_model_options), with the same flags, help and defaults, and parse to the same values."""
    import argparse

    from fxla.tools import explain

    shared = argparse.ArgumentParser()
    dump.add_model_options(shared)

    def described(parser):
        return {a.dest: (a.option_strings, a.help, a.metavar, a.default, a.nargs) for a in parser._actions
                if a.dest != "help"}

    common = described(shared)
    assert set(common) == {"spec", "input_shape", "concrete_args", "device"}
    for parser in (dump._parser(), explain._parser()):
        assert {dest: d for dest, d in described(parser).items() if dest in common} == common
    argv = ["m.py:f", "--input-shape", "2x16:i64", "--concrete-args", "use_cache=false", "--device", "cpu"]
    values = [vars(p.parse_args(argv)) for p in (dump._parser(), explain._parser())]
    assert [{k: v[k] for k in common} for v in values] == [vars(shared.parse_args(argv))] * 2


def test_dynamic_dims_show_the_polymorphic_program_and_its_refinement(capsys):
    spec = os.path.join(ROOT, "lit_tests", "Tools", "fxla-dump", "Inputs", "split_heads.py")   # (x.view(b, s // 2, 2 * d))
    rc, out, err = run_dump(capsys, f"{spec}:model", "--dynamic", "x:1", "--stage", "fxla", "--run")
    assert rc == 0, err
    polymorphic, _, refined = out.partition("// refined to the example inputs' sizes (pipeline stage 'refine'):")
    assert "%arg0: tensor<2x?x3xf32>" in polymorphic and "fxla.dim_size %arg0 {dim = 1}" in polymorphic
    assert 'fxla.sym = ["shape.1", "shape.2", "result0.1", "result0.2"]' in polymorphic
    assert "fxla.reshape %arg0 {shape = [2, 4, 6]}" in refined and "?" not in refined
    rc, _, err = run_dump(capsys, f"{spec}:model", "--dynamic", "x1")
    assert rc == 1 and "--dynamic 'x1': expected NAME:DIM" in err


def test_a_module_spec_that_cannot_be_imported_is_a_clear_error(capsys):
    rc, _, err = run_dump(capsys, "no_such_module_here:model")
    assert rc == 1 and "no module named 'no_such_module_here'" in err and "fix:" in err
