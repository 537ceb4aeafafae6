"""fxla-param-layout: parameters that dots/convolutions consume are stored in the layout those want
(nn.Linear's weight as [in, out], conv kernels as HWIO), so XLA does not transpose them on every call."""
import json
import re

import pytest
import torch
import torch.nn.functional as F

import fxla
from fxla.dialects.mlir import fxla_context, ir
from fxla.lowering.param_layout import param_layout_pass, permute_param_layouts


def _param_shapes(compiled, *args):
    """The parameter shapes of XLA's entry computation (what is resident on the device)."""
    hlo = compiled.executable_for(*args).hlo_text()
    entry = hlo[hlo.index("ENTRY"):]
    return re.findall(r"parameter\(\d+\)", entry), entry


def _check(model, *inputs, atol=1e-5, rtol=1e-5):
    model = model.eval()
    fast = fxla.compile(model)
    with torch.no_grad():
        want = model(*inputs)
    torch.testing.assert_close(fast(*inputs), want, atol=atol, rtol=rtol)
    return fast


def test_linear_weight_is_stored_in_out():
    fast = _check(torch.nn.Linear(144, 5), torch.randn(2, 144))
    _, entry = _param_shapes(fast, torch.randn(2, 144))
    assert re.search(r"f32\[144,5\]\{[0-9,]+\} parameter", entry), entry
    assert not re.search(r"f32\[5,144\]\{[0-9,]+\} parameter", entry)


def test_conv_kernel_is_stored_hwio():
    fast = _check(torch.nn.Conv2d(3, 4, 3), torch.randn(2, 3, 8, 8))
    _, entry = _param_shapes(fast, torch.randn(2, 3, 8, 8))
    assert re.search(r"f32\[3,3,3,4\]\{[0-9,]+\} parameter", entry), entry


@pytest.mark.parametrize("make, shape", [
    (lambda: torch.nn.Conv1d(3, 6, 3, padding=1), (2, 3, 9)),
    (lambda: torch.nn.Conv3d(2, 4, 3, stride=2), (1, 2, 7, 7, 7)),
    (lambda: torch.nn.Conv2d(4, 8, 3, groups=2, dilation=2), (2, 4, 10, 10)),
    (lambda: torch.nn.Sequential(torch.nn.ConvTranspose2d(3, 5, 3, stride=2)), (2, 3, 6, 6)),
    (lambda: torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Flatten(), torch.nn.Linear(144, 5)),
     (2, 3, 8, 8)),
    (lambda: torch.nn.Bilinear(4, 5, 3), None),
])
def test_layouts_keep_numerics(make, shape):
    torch.manual_seed(0)
    model = make()
    inputs = (torch.randn(2, 4), torch.randn(2, 5)) if shape is None else (torch.randn(shape),)
    _check(model, *inputs)


class _Uses(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(8, 16))
        self.t = torch.nn.Parameter(torch.randn(16, 8))

    def forward(self, x):
        a = F.linear(x, self.w)                  # 3-D input: still rhs contracting dim 1
        b = x @ self.t                           # already [in, out]: no change
        c = x @ self.w.T                         # transpose folded into the stored layout
        return a + b + c, self.w.sum()           # w also feeds a reduction: mixed uses, left alone


def test_mixed_and_transposed_uses():
    _check(_Uses(), torch.randn(3, 2, 16))


def test_tied_weight_and_several_signatures_share_buffers():
    emb = torch.nn.Embedding(10, 16)
    head = torch.nn.Linear(16, 10, bias=False)
    head.weight = emb.weight                       # tied: a gather and a dot use it -> stored as is
    model = torch.nn.Sequential(emb, head).eval()
    fast = fxla.compile(model)
    for n in (3, 5):
        idx = torch.randint(0, 10, (2, n))
        torch.testing.assert_close(fast(idx), model(idx).detach(), atol=1e-5, rtol=1e-5)
    lin = fxla.compile(torch.nn.Linear(6, 4).eval())
    for b in (1, 7):
        lin(torch.randn(b, 6))
    assert lin.cache_size == 2
    permuted = [k for k in lin._params if k[1]]
    assert permuted == [("module.weight", (1, 0))]    # one resident permuted copy for both signatures


def test_jax_interop_uses_the_stored_layout():
    import jax
    import numpy as np
    model = torch.nn.Linear(6, 4).eval()
    fast = fxla.compile(model, output="jax")
    x = torch.randn(3, 6)
    fn = jax.jit(fast.as_jax_function(x))
    np.testing.assert_allclose(np.asarray(fn(jax.numpy.asarray(x.numpy()))), model(x).detach().numpy(),
                               atol=1e-5, rtol=1e-5)


def test_export_keeps_torch_layout_and_load_lays_the_weights_out(tmp_path):
    """The artifact is portable (torch's layout); fxla.load runs the device passes, as fxla.compile does."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Flatten(), torch.nn.Linear(144, 5)).eval()
    x = torch.randn(2, 3, 8, 8)
    fxla.export(model, (x,), tmp_path / "net")
    params = json.loads((tmp_path / "net" / "metadata.json").read_text())["params"]
    assert sorted(p["shape"] for p in params) == [[4], [4, 3, 3, 3], [5], [5, 144]]
    loaded = fxla.load(tmp_path / "net")
    with torch.no_grad():
        torch.testing.assert_close(loaded(x), model(x), atol=1e-5, rtol=1e-5)
    hlo = loaded.executable.hlo_text()
    entry = hlo[hlo.index("ENTRY"):]
    assert re.search(r"f32\[3,3,3,4\]\{[0-9,]+\} parameter", entry), entry
    assert re.search(r"f32\[144,5\]\{[0-9,]+\} parameter", entry), entry


_MAIN = """
func.func @main(%x: tensor<2x16xf32>, %w: tensor<8x16xf32> {fxla.param = "w"}, %b: tensor<8x16xf32>)
    -> tensor<2x8xf32> {
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [1] : (tensor<2x16xf32>, tensor<8x16xf32>) -> tensor<2x8xf32>
  %1 = stablehlo.dot_general %x, %b, contracting_dims = [1] x [1] : (tensor<2x16xf32>, tensor<8x16xf32>) -> tensor<2x8xf32>
  %2 = stablehlo.add %0, %1 : tensor<2x8xf32>
  return %2 : tensor<2x8xf32>
}"""


def test_pass_only_touches_marked_arguments():
    with fxla_context() as ctx:
        module = ir.Module.parse(_MAIN, ctx)
        param_layout_pass(module)
        text = str(module)
    assert "tensor<16x8xf32> {fxla.layout = array<i64: 1, 0>, fxla.param = \"w\"}" in text
    assert "%arg2: tensor<8x16xf32>" in text and text.count("contracting_dims = [1] x [1]") == 1


def test_explicit_indices_and_function_type():
    with fxla_context() as ctx:
        module = ir.Module.parse(_MAIN, ctx)
        chosen = permute_param_layouts(module, {1: "w", 2: "b"})
        text = str(module)
    assert chosen == {"w": (1, 0), "b": (1, 0)}
    assert "-> tensor<2x8xf32>" in text and text.count("contracting_dims = [1] x [0]") == 2
    assert "%arg1: tensor<16x8xf32> {fxla.param = \"w\"}, %arg2: tensor<16x8xf32>)" in text
