"""Lowering: unsupported-op and rule-level errors (with the user's file:line), the fxla and StableHLO text,
the strict StableHLO check, source locations in the IR and custom rules."""
from __future__ import annotations

import os
import re
import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import fxla
from fxla.frontend import symbolic_trace
from fxla.lowering import (RULES, ConversionError, LoweringError, UnsupportedOpError, coverage, lower_to_fxla,
                           register, verify_stablehlo)

from support import marker_line  # noqa: E402

THIS_FILE = __file__


def line_of(marker: str) -> int:
    return marker_line(THIS_FILE, marker)


def at(marker: str) -> str:
    return f"{THIS_FILE}:{line_of(marker)}:"


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        h = torch.relu(self.fc1(x))  # mlp-fc1
        return F.log_softmax(self.fc2(h), dim=-1)  # mlp-fc2


def mlp():
    torch.manual_seed(0)
    return MLP().eval(), torch.randn(3, 8)


# ---------------------------------------------------------------------------------------------------------------
# unsupported ops: every one listed at once, each with its source line
# ---------------------------------------------------------------------------------------------------------------
class UsesUnsupported(nn.Module):
    def forward(self, x):
        a = torch.relu(x)
        b = torch.special.bessel_j0(a)  # unsupported-j0
        c = torch.special.i0e(b)  # unsupported-i0e
        d = torch.special.erfcx(c) * 2  # unsupported-erfcx
        return d + x


def test_unsupported_ops_are_all_listed_with_locations():
    compiled = fxla.compile(UsesUnsupported())          # tracing works; lowering is per signature
    with pytest.raises(UnsupportedOpError) as info:
        compiled(torch.randn(4, 4))
    err = info.value
    msg = str(err)
    assert msg.startswith("fxla cannot lower 3 ops of this program:")
    assert [what for what, _ in err.ops] == ["function torch.special.bessel_j0",
                                             "function torch.special.i0e",
                                             "function torch.special.erfcx"]
    for marker in ("unsupported-j0", "unsupported-i0e", "unsupported-erfcx"):
        assert at(marker) in msg, marker
    assert "torch.special.bessel_j0(a)" in msg                       # the source line itself is shown
    assert [loc.line for _, loc in err.ops] == [line_of("unsupported-j0"), line_of("unsupported-i0e"),
                                                line_of("unsupported-erfcx")]
    assert "fix:" in msg and "fxla.lowering.register" in msg
    assert isinstance(err, LoweringError) and isinstance(err, fxla.FxlaError)
    assert compiled.cache_size == 0


def test_unsupported_method_and_module_are_named():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.FractionalMaxPool2d(2, output_size=2)

        def forward(self, x):
            y = self.norm(x)[0]  # unsupported-module
            return y.lgamma()  # unsupported-method

    with pytest.raises(UnsupportedOpError) as info:
        fxla.compile(M().eval()).lower(torch.randn(1, 4, 6, 6))
    msg = str(info.value)
    assert "module torch.nn.FractionalMaxPool2d (call_module 'norm')" in msg
    assert "method Tensor.lgamma" in msg
    assert at("unsupported-module") in msg and at("unsupported-method") in msg


# ---------------------------------------------------------------------------------------------------------------
# rule-level errors: a LoweringError at the user's line, with a fix
# ---------------------------------------------------------------------------------------------------------------
def _randint_huge_range(x):
    return torch.randint(0, 2 ** 60, x.shape)  # err-randint


def _antialias(x):
    return F.interpolate(x, scale_factor=0.5, mode="bilinear", antialias=True)  # err-antialias


def _softmax_no_dim(x):
    return F.softmax(x)  # err-softmax


def _conv_same_even(x, w):
    return F.conv2d(x, w, padding="same")  # err-conv-same


class _MaxNormEmbedding(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 3, max_norm=1.0)

    def forward(self, x):
        return self.embed(x)  # err-embedding-max-norm


class _TrainingBatchNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(4)

    def forward(self, x):
        return self.bn(x) + 1  # err-batch-norm-train


@pytest.mark.parametrize("fn,inputs,marker,what", [
    (_randint_huge_range, (torch.randn(3, 4),), "err-randint", "randint over a range of"),
    (_antialias, (torch.randn(1, 2, 4, 4),), "err-antialias", "interpolate(antialias=True) is not supported"),
    (_softmax_no_dim, (torch.randn(3, 4),), "err-softmax", "softmax without dim is not supported"),
    (_conv_same_even, (torch.randn(1, 2, 6, 6), torch.randn(3, 2, 2, 2)), "err-conv-same",
     "padding='same' with an even effective kernel is not supported yet"),
    (_MaxNormEmbedding(), (torch.tensor([1, 4]),), "err-embedding-max-norm", "embedding(max_norm=...) is not "
     "supported"),
    (_TrainingBatchNorm().train(), (torch.randn(1, 4),), "err-batch-norm-train",
     "Expected more than 1 value per channel when training"),
], ids=["randint-range", "interpolate-antialias", "softmax-no-dim", "conv-same-even", "embedding-max-norm",
        "batch-norm-one-value-train"])
def test_rule_errors_point_at_the_user_line(fn, inputs, marker, what):
    compiled = fxla.compile(fn)
    with warnings.catch_warnings(), pytest.raises(LoweringError) as info:
        warnings.simplefilter("ignore")         # torch warns about softmax's implicit dim
        compiled(*inputs)
    msg = str(info.value)
    assert not isinstance(info.value, UnsupportedOpError)
    assert what in msg
    assert at(marker) in msg, msg
    assert "\nfix: " in msg
    assert "(graph node '" in msg


def _scaled(x, scale=2.0):
    return x * scale


def _scaled_call(x):
    return fxla.wrap(_scaled)(x, scale=3.0)  # err-rule-signature


def _to_memory_format(x):
    return x.to(torch.float16, memory_format=torch.contiguous_format)  # err-to-kwargs


def test_rule_signature_mismatch_is_a_lowering_error(monkeypatch):
    """A form of an op that its rule does not take (a keyword it has no parameter for) is reported, not crashed
    on.  (The rule here is the test's own: every torch op fxla lowers takes the forms torch documents.)"""
    from fxla.lowering.registry import RULES
    from fxla.dialects.fxla import ops
    monkeypatch.setitem(RULES, _scaled, lambda ctx, x: ctx.emit(ops.add, x, x))
    with pytest.raises(LoweringError) as info:
        fxla.compile(_scaled_call)(torch.randn(2, 3))
    msg = str(info.value)
    assert "cannot lower this call" in msg and "scale" in msg
    assert at("err-rule-signature") in msg and "\nfix: " in msg


def test_out_arguments_are_written():
    """out= (a form the rules do not take) is an in-place write of its tensor (functionalization)."""
    x, y, z = torch.randn(2, 3), torch.randn(3, 4), torch.empty(2, 4)
    result = fxla.compile(lambda x, y, z: torch.matmul(x, y, out=z) * 2)(x, y, z)
    torch.testing.assert_close(z, x @ y, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(result, 2 * (x @ y), rtol=1e-5, atol=1e-6)


def _view_dtype(x):
    return x.view(torch.int32)  # err-view-dtype


def _matmul_mixed(x, y):
    return x @ y  # err-matmul-mixed


def test_view_dtype_is_reported_not_an_internal_error():
    with pytest.raises(LoweringError) as info:
        fxla.compile(_view_dtype)(torch.randn(3))
    msg = str(info.value)
    assert "Tensor.view(dtype) is not supported yet" in msg and "internal error" not in msg
    assert at("err-view-dtype") in msg and "\nfix: " in msg


def test_op_table_rejection_becomes_a_lowering_error():
    """The fxla op's own checks (here: matmul does not promote) surface as a LoweringError at the user line."""
    with pytest.raises(LoweringError) as info:
        fxla.compile(_matmul_mixed)(torch.randn(2, 3), torch.randn(3, 2).half())
    msg = str(info.value)
    assert "torch.matmul does not promote" in msg and at("err-matmul-mixed") in msg and "\nfix: " in msg


def test_unknown_keyword_of_a_rule_is_reported():
    with pytest.raises(LoweringError) as info:
        fxla.compile(_to_memory_format)(torch.randn(2, 3))
    msg = str(info.value)
    assert "memory_format" in msg and at("err-to-kwargs") in msg and "\nfix: " in msg


# ---------------------------------------------------------------------------------------------------------------
# the IR text of each stage
# ---------------------------------------------------------------------------------------------------------------
def test_mlp_fxla_and_stablehlo_text():
    model, x = mlp()
    stages = fxla.compile(model).lower(x)
    assert "= fxla.linear " in stages.fxla and "= fxla.relu " in stages.fxla and "= fxla.log_softmax " in stages.fxla
    assert '"fxla.' not in stages.fxla and "operandSegmentSizes" not in stages.fxla        # the dialect's syntax
    assert 'fxla.param = "fc1.weight"' in stages.fxla
    assert "func.func @main" in stages.fxla
    assert "fxla." not in stages.stablehlo and "fxla." not in stages.stablehlo_debug
    assert "stablehlo.dot_general" in stages.stablehlo
    module = verify_stablehlo(stages.stablehlo)           # strict context: unregistered dialects rejected
    assert "stablehlo.dot_general" in str(module)
    verify_stablehlo(stages.stablehlo_debug)


def test_strict_context_rejects_fxla_ops():
    model, x = mlp()
    stages = fxla.compile(model).lower(x)
    with pytest.raises(ConversionError) as info:
        verify_stablehlo(stages.fxla)
    assert "fxla" in str(info.value)


def test_source_locations_in_the_ir():
    model, x = mlp()
    gm = symbolic_trace(model)
    program = lower_to_fxla(gm, (x,))
    plain, debug = program.text(), program.text(debug_info=True)
    assert THIS_FILE not in plain
    for marker in ("mlp-fc1", "mlp-fc2"):
        assert f'"{THIS_FILE}":{line_of(marker)}:' in debug, marker
    # each op's location is named after its graph node and wraps the file location
    assert re.search(r'loc\("fc1"\(#loc\d+\)\)', debug), debug
    # the StableHLO that is compiled keeps them too
    stages = fxla.compile(model).lower(x)
    assert f'"{THIS_FILE}":{line_of("mlp-fc2")}:' in stages.stablehlo_debug


def test_program_metadata():
    model, x = mlp()
    program = lower_to_fxla(symbolic_trace(model), (x,))
    assert sorted(program.param_names) == ["fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight"]
    assert program.params["fc2.bias"] is model.fc2.bias
    assert program.output_static == [None]


# ---------------------------------------------------------------------------------------------------------------
# the rule table
# ---------------------------------------------------------------------------------------------------------------
def test_coverage_groups_rules():
    cov = coverage()
    assert "Tensor.view" in cov["methods"] and "Tensor.float" in cov["methods"]
    assert "torch.nn.Linear" in cov["modules"]
    assert "torch.matmul" in cov["functions"] and "operator.add" in cov["functions"]
    assert "torch.nn.functional.gelu" in cov["functions"]
    assert sum(map(len, cov.values())) <= len(RULES)


def test_register_a_custom_rule():
    from fxla.dialects.fxla import ops

    def fn(x):
        return torch.exp2(x) + 1

    x = torch.randn(3, 4)
    with pytest.raises(UnsupportedOpError, match="torch.exp2"):
        fxla.compile(fn)(x)
    assert torch.exp2 not in RULES
    try:
        @register(torch.exp2)
        def _exp2(ctx, input):
            return ctx.emit(ops.pow, ctx.tensor(2.0, like=input), input)

        torch.testing.assert_close(fxla.compile(fn)(x), fn(x))
    finally:
        RULES.pop(torch.exp2, None)


# ---------------------------------------------------------------------------------------------------------------
# a failing pipeline leaves a reproducer and the fxla-opt command that re-runs it
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_failing_pipeline_writes_reproducer(tmp_path, monkeypatch):
    import subprocess
    import sys

    from fxla.dialects.fxla import ops
    from fxla.dialects.mlir import hlo
    from fxla.lowering import PipelineError, lower_to_fxla, lower_to_stablehlo
    from fxla.lowering.patterns import PATTERNS

    def broken_relu(b, x):     # an injected bug: emits a type-incorrect StableHLO op
        return hlo.AddOp(x, b.splat(0, "i32", b.result.shape)).result

    monkeypatch.setitem(PATTERNS, ops.relu, broken_relu)
    program = lower_to_fxla(fxla.compile(lambda x: torch.relu(x) + 1).graph_module, (torch.randn(2, 3),))
    with pytest.raises(PipelineError) as info:
        lower_to_stablehlo(program.module, reproducer_dir=str(tmp_path))
    err = info.value
    assert os.path.exists(err.reproducer) and err.reproducer.startswith(str(tmp_path))
    written = open(err.reproducer).read()
    assert "fxla.relu %arg0 : tensor<2x3xf32> -> tensor<2x3xf32> loc(" in written     # the dialect's syntax
    assert '"fxla.' not in written
    assert f"reproduce with: {err.command}" in str(err) and "fix:" in str(err)
    monkeypatch.undo()
    # with the bug gone, the recorded command lowers the same IR cleanly
    argv = err.command.split()
    opt = os.path.join(os.path.dirname(sys.executable), argv[0])
    done = subprocess.run([opt] + argv[1:], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "stablehlo.maximum" in done.stdout and "fxla." not in done.stdout


# -- the layout of the rule files ---------------------------------------------------------------------------------
def _rule_files():
    import pathlib
    import fxla.lowering.rules as rules
    return sorted(p for p in pathlib.Path(rules.__file__).parent.glob("*.py") if p.name != "__init__.py")


def test_rule_files_share_helpers_through_the_context_or_emit():
    """Rule files never import from one another (helpers live on the lowering context or in fxla.lowering.emit;
    one rule reuses another through ctx.lower(op, ...)), and import no private name from fxla.lowering."""
    import ast
    offenders = []
    for path in _rule_files():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            sibling = node.level == 1 or (node.module or "").startswith("fxla.lowering.rules")
            private = [a.name for a in node.names if a.name.startswith("_")]
            lowering = node.level == 2 or (node.module or "").startswith("fxla.lowering")
            if sibling or (lowering and private):
                offenders.append(f"{path.name}:{node.lineno}: from {'.' * node.level}{node.module or ''} import "
                                 f"{', '.join(a.name for a in node.names)}")
    assert not offenders, "rule files importing from each other or private lowering names:\n" + "\n".join(offenders)


def test_declared_module_rules_forward_to_registered_rules():
    forwarding = {key: rule.forwards_to for key, rule in RULES.items() if hasattr(rule, "forwards_to")}
    assert len(forwarding) > 50
    missing = [f"{key.__name__} -> {op}" for key, op in forwarding.items() if op not in RULES]
    assert not missing, missing


def test_meta_fallbacks_are_registered_next_to_rules():
    from fxla.frontend import shape_prop
    for key in list(shape_prop._META_FUNCTIONS) + list(shape_prop._META_MODULES) + list(shape_prop._META_OF_ARGUMENT):
        assert key in RULES, key
    assert F.ctc_loss in shape_prop._META_FUNCTIONS and nn.Transformer in shape_prop._META_OF_ARGUMENT
