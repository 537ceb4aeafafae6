"""fxla.lowering.autodiff: every fxla op is declared (a VJP rule, a zero gradient or non-differentiable with a
reason), each family has FileCheck cases of its backward IR, and differentiate() saves only what the backward
reads (arguments are read, not saved; remat saves nothing)."""
from __future__ import annotations

import pathlib
import re

import pytest
import torch
import torch.nn as nn

import fxla
from fxla.dialects.fxla import ops
from fxla.lowering.autodiff import (NON_DIFFERENTIABLE, VJP_RULES, ZERO_GRADIENT, NotDifferentiableError,
                                    differentiable_args, differentiate)
from fxla.pipeline import Pipeline

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_every_op_is_declared_once():
    declared = {}
    for table in (VJP_RULES, ZERO_GRADIENT, NON_DIFFERENTIABLE):
        for op in table:
            declared.setdefault(op, 0)
            declared[op] += 1
    missing = [op.name for op in ops.ALL_OPS if op not in declared]
    twice = [op.name for op, n in declared.items() if n > 1]
    assert not missing, f"fxla ops without a VJP rule or declaration: {missing}\nfix: add @vjp_rule(ops.<op>) " \
        f"in lowering/autodiff/<family>.py, or zero_gradient / non_differentiable with the reason"
    assert not twice


def test_each_family_has_backward_filecheck_cases():
    for family, family_ops in ops.FAMILIES.items():
        differentiable = [op for op in family_ops if op in VJP_RULES]
        if not differentiable:
            continue
        text = (ROOT / "lit_tests" / "Transforms" / "vjp" / f"{family}.mlir").read_text() + \
            (ROOT / "lit_tests" / "Transforms" / "vjp" / "errors.mlir").read_text()    # (rules that refuse)
        used = set(re.findall(r'"(fxla\.\w+)"\(', text))
        untested = [op.name for op in differentiable if op.name not in used]
        assert not untested, f"{family}: VJP rules without a case in lit_tests/Transforms/vjp/{family}.mlir: " \
            f"{untested}"


def _program(fn, *inputs):
    pipeline = Pipeline()
    compiled = fxla.compile(fn)
    return pipeline.to_fxla(pipeline.prepare(compiled.graph_module, inputs))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc1, self.fc2 = nn.Linear(4, 8), nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x))).sum() * 2.0


def test_arguments_are_read_and_only_used_values_are_saved():
    program = _program(Net(), torch.randn(5, 4))
    d = differentiate(program, differentiable_args(program), [0])
    # tanh's result (for its own gradient and fc2's weight gradient) is the one saved value
    assert d.residuals == 1
    assert d.inputs == [0] and set(d.params) == {"fc1.weight", "fc2.weight"}
    assert "fxla.constant" in d.backward.text()               # the 2.0, re-emitted rather than saved


def test_remat_saves_nothing():
    program = _program(Net(), torch.randn(5, 4))
    d = differentiate(program, differentiable_args(program), [0], remat=True)
    assert d.residuals == 0 and "fxla.tanh" in d.backward.text()


def test_gradient_through_an_op_torch_cannot_differentiate_names_the_reason():
    program = _program(lambda x: torch.floor_divide(x * 3, 2.0), torch.randn(4))
    with pytest.raises(NotDifferentiableError) as info:
        differentiate(program, [0], [0])
    message = str(info.value)
    assert message.startswith("cannot differentiate fxla.floor_divide: fxla has no gradient for it")
    assert "torch has no derivative for floor_divide either" in message and "\nfix: " in message


def test_integer_arguments_are_refused_as_targets():
    program = _program(lambda x, i: x[i], torch.randn(4), torch.tensor([1, 2]))
    with pytest.raises(NotDifferentiableError, match="not floating point"):
        differentiate(program, [1], [0])
