"""The command-line tools: fxla-dump and fxla-opt (run in-process through their main())."""
import os
import textwrap

import pytest

from fxla.tools import dump, opt

MLP_SPEC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "models.py")


def run_dump(capsys, *argv):
    rc = dump.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("stage,needle", [("graph", "call_module[target=fc1]"), ("code", "def forward(self, x)"),
                                          ("fxla", "= fxla.linear %"), ("stablehlo", "stablehlo.dot_general"),
                                          ("hlo", "HloModule")])
def test_dump_each_stage(capsys, stage, needle):
    rc, out, _ = run_dump(capsys, f"{MLP_SPEC}:mlp", "--stage", stage)
    assert rc == 0 and needle in out


def test_dump_all_with_run_and_locations(capsys):
    rc, out, _ = run_dump(capsys, f"{MLP_SPEC}:small_cnn", "--stage", "all", "--run", "--debug-locations")
    assert rc == 0
    for stage in dump.STAGES:
        assert f"// ===== {stage} =====" in out
    assert "models.py" in out and "(match)" in out


def test_dump_with_input_shape(capsys, tmp_path):
    f = tmp_path / "m.py"
    f.write_text("import torch\ndef make():\n    return torch.nn.Linear(4, 2)\n")
    rc, out, _ = run_dump(capsys, f"{f}:make", "--input-shape", "3x4", "--stage", "fxla")
    assert rc == 0 and "tensor<3x4xf32>" in out


@pytest.mark.parametrize("argv,needle", [
    (["nope.py:f"], "no such file"),
    (["no_colon"], "is not a model spec"),
    ([f"{MLP_SPEC}:missing"], "defines no 'missing'"),
    ([f"{MLP_SPEC}:mlp", "--input-shape", "2xq"], "bad --input-shape"),
])
def test_dump_bad_spec_is_a_clear_error(capsys, argv, needle):
    rc, out, err = run_dump(capsys, *argv)
    assert rc == 1 and needle in err and "Traceback" not in err and "fix:" in err


def run_opt(capsys, tmp_path, text, *passes):
    f = tmp_path / "in.mlir"
    f.write_text(textwrap.dedent(text))
    rc = opt.main([str(f), *passes])
    out, err = capsys.readouterr()
    return rc, out, err, str(f)


GOOD = """
func.func @f(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = "fxla.add"(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = "fxla.relu"(%0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}
"""


def test_opt_converts_fully(capsys, tmp_path):
    rc, out, err, _ = run_opt(capsys, tmp_path, GOOD, "--convert-fxla-to-stablehlo", "--canonicalize")
    assert rc == 0 and err == ""
    assert "stablehlo.broadcast_in_dim" in out and "stablehlo.maximum" in out and "fxla." not in out


def test_opt_roundtrips_fxla(capsys, tmp_path):
    rc, out, _, _ = run_opt(capsys, tmp_path, GOOD)
    assert rc == 0 and "= fxla.add %arg0, %arg1 : " in out and "= fxla.relu %0 : " in out


def test_opt_malformed_input_gives_diagnostics_not_traceback(capsys, tmp_path):
    rc, out, err, path = run_opt(capsys, tmp_path, "func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
                                 "  %0 = stablehlo.add %a, %nope : tensor<2xf32>\n  return %0 : tensor<2xf32>\n}\n")
    assert rc == 1 and f"{path}:2:" in err and "error: use of undeclared SSA value name" in err
    assert "Traceback" not in err


def test_opt_verifier_error_names_line(capsys, tmp_path):
    bad = GOOD.replace('"fxla.relu"(%0) : (tensor<2x3xf32>) -> tensor<2x3xf32>',
                       '"fxla.relu"(%0, %0) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>')
    rc, _, err, path = run_opt(capsys, tmp_path, bad, "--convert-fxla-to-stablehlo")
    assert rc == 1 and f"{path}:4:" in err and "'fxla.relu' op expects 1 operand, but got 2" in err


def test_opt_unknown_pass(capsys, tmp_path):
    rc, _, err, _ = run_opt(capsys, tmp_path, GOOD, "--pass-pipeline=frobnicate")
    assert rc == 1 and "frobnicate" in err and "Traceback" not in err


def test_dump_verbose_reports_phases_with_timings(capsys):
    rc, _, err = run_dump(capsys, f"{MLP_SPEC}:mlp", "--stage", "hlo", "-v")
    assert rc == 0
    for phase in ("tracing", "prepare graph (shape propagation", "lowering to fxla", "fxla -> StableHLO",
                  "device layout passes", "XLA compile"):
        assert f"[fxla] {phase}" in err
    assert err.count(" ms") >= 4


def test_dump_print_ir_after_all(capfd):
    assert dump.main([f"{MLP_SPEC}:mlp", "--stage", "stablehlo", "--print-ir-after-all"]) == 0
    err = capfd.readouterr().err
    for name in ("verify-fxla", "convert-fxla-to-stablehlo", "canonicalize", "cse"):
        assert f"IR Dump After {name}" in err


def test_dump_html_is_the_report(capsys):      # the report itself: tests/test_report*.py
    rc, out, _ = run_dump(capsys, f"{MLP_SPEC}:mlp", "--format", "html")
    assert rc == 0 and out.startswith("<!doctype html>") and "<title>MLP · fxla report</title>" in out
    for stage in ("graph", "functional", "code", "fxla", "stablehlo", "hlo"):
        assert f'"id":"{stage}"' in out


@pytest.mark.skipif(__import__("shutil").which("dot") is None, reason="Graphviz `dot` is not installed")
def test_dump_graph_as_svg(capsys):
    rc, out, _ = run_dump(capsys, f"{MLP_SPEC}:mlp", "--stage", "graph", "--format", "svg")
    assert rc == 0 and "<svg" in out and "fc1" in out


def test_dump_svg_without_a_stage_draws_the_graph(capsys):
    rc, out, err = run_dump(capsys, f"{MLP_SPEC}:mlp", "--format", "svg")
    assert "draws the graph only" not in err            # the graph is what an SVG shows: no --stage needed
    if __import__("shutil").which("dot") is None:       # (no Graphviz here: the error says that, nothing else)
        assert rc == 1 and "dot" in err
    else:
        assert rc == 0 and "<svg" in out and "// =====" not in out


def test_dump_svg_needs_graph_stage(capsys):
    rc, _, err = run_dump(capsys, f"{MLP_SPEC}:mlp", "--stage", "fxla", "--format", "svg")
    assert rc == 1 and "--format svg draws the graph only" in err


def test_dump_functional_stage_and_run_of_a_mutating_model(capsys, tmp_path):
    f = tmp_path / "mut.py"
    f.write_text("import torch\n\n\nclass M(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                 "        self.register_buffer('steps', torch.zeros(()))\n\n    def forward(self, x):\n"
                 "        y = x * 2\n        y[0] = 5\n        self.steps += 1\n        self.last = y\n"
                 "        return y + self.steps\n\n\n"
                 "def make():\n    return M(), (torch.randn(3, 4),)\n")
    rc, out, _ = run_dump(capsys, f"{f}:make", "--stage", "functional", "--run")
    assert rc == 0 and "fxla.frontend.passes.functionalize.setitem" in out
    assert "// written back after each call: steps <- %" in out
    assert "// set after each call: attribute last <- %" in out
    assert "(match)" in out          # eager ran on a copy: both started from steps = 0
    rc, out, _ = run_dump(capsys, f"{MLP_SPEC}:mlp", "--stage", "functional")
    assert rc == 0 and "no in-place ops" in out


def test_dump_run_compares_non_tensor_outputs(capsys, tmp_path):
    """--run compares outputs leaf by leaf: tuples, dicts and Python numbers (it called .float() on them)."""
    f = tmp_path / "multi.py"
    f.write_text("import torch\n\n\ndef make():\n    def fn(x):\n"
                 "        return {'y': x * 2, 'pair': (x.sum(), 3), 'n': x.shape[0]}\n"
                 "    return fn, (torch.randn(3, 4),)\n")
    rc, out, _ = run_dump(capsys, f"{f}:make", "--stage", "graph", "--run")
    assert rc == 0 and "(match)" in out


@pytest.mark.slow
def test_jaxlib_info_logging_stays_off_when_fxla_loads_jaxlib_first():
    """fxla.dialects.mlir loads jaxlib before jax does (fxla-opt never imports jax): it sets jaxlib's C++ log
    level as `import jax` would, so creating the PJRT client prints no INFO lines on stderr."""
    import subprocess
    import sys
    code = "import fxla.dialects.mlir, jax; jax.devices(); print('ok')"
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
    assert "pjrt_client" not in done.stderr and "PjRt-IFRT" not in done.stderr, done.stderr


@pytest.mark.parametrize("tool", [dump, opt])
def test_help_has_no_restructuredtext_markup(tool, capsys):
    with pytest.raises(SystemExit):
        tool.main(["--help"])
    assert "``" not in capsys.readouterr().out
