"""Which device passes the pipeline's ``layout`` stage runs for which device (fxla.pipeline.Pipeline.layout).

CPU: ``fxla-grouped-conv``, ``fxla-pool-layout`` and ``fxla-channels-last`` (then ``fxla-param-layout``); any other platform:
``fxla-full-precision`` (float32 dots and convolutions in float32, as torch computes them; accelerators would use
TF32 or bfloat16 passes), then ``fxla-param-layout``; a partitioned program: ``fxla-full-precision`` alone, off the
CPU.  No accelerator is needed: the passes run on the StableHLO text.
"""
import pytest
import torch

import fxla
from fxla.lowering import verify_stablehlo
from fxla.lowering.precision import full_precision_pass
from fxla.pipeline import Pipeline


def _stages():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.Conv2d(4, 4, 3, groups=4),
                                torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 5)).eval()
    return fxla.compile(model).lower(torch.randn(2, 3, 8, 8))


def test_cpu_gets_the_grouped_conv_rewrite_and_no_precision():
    target = Pipeline().layout(_stages(), "cpu")
    assert "HIGHEST" not in target.text and "feature_group_count = 4" not in target.text


@pytest.mark.parametrize("platform", ["gpu", "cuda", "tpu"])
def test_accelerators_get_full_float32_precision_and_keep_xla_convolutions(platform):
    target = Pipeline().layout(_stages(), platform)
    assert target.text.count("HIGHEST") == 2 * 3            # two convolutions and one dot, two operands each
    assert "feature_group_count = 4" in target.text          # the grouped-conv rewrite is for the CPU only


@pytest.mark.parametrize("platform, highest", [("gpu", 6), ("cpu", 0)])
def test_partitioned_programs_get_precision_alone(platform, highest):
    stages = _stages()
    target = Pipeline().layout(stages, platform, partitioned=True)
    assert target.text.count("HIGHEST") == highest and target.layouts == {}
    assert "feature_group_count = 4" in target.text


def test_full_precision_pass_is_idempotent_and_keeps_chosen_precisions():
    module = verify_stablehlo(_stages().stablehlo_debug)
    assert full_precision_pass(module) == 3 and full_precision_pass(module) == 0
