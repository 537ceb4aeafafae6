"""TraceError: asking a symbolic value for a concrete one names the user's file:line:col."""
import pytest
import torch
import torch.nn as nn

from fxla.errors import FxlaError
from fxla.frontend import TraceError, symbolic_trace

from support import marker_line  # noqa: E402

THIS_FILE = __file__


def line_of(marker: str) -> int:
    return marker_line(THIS_FILE, marker)


class Branchy(nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # @if-line
            return x
        return -x


class Length(nn.Module):
    def forward(self, x):
        return x * len(x)  # @len-line


class Loop(nn.Module):
    def forward(self, x):
        out = x
        for _ in x:  # @for-line
            out = out + 1
        return out


class Conversions(nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.kind = kind

    def forward(self, x):
        n = x.size(0)
        if self.kind == "int":
            return torch.zeros(int(n))  # @conv-int
        if self.kind == "float":
            return x * float(n)  # @conv-float
        if self.kind == "index":
            return x * [1, 2, 3][n]  # @conv-index
        return x * (3 in x)  # @conv-in


class Child(nn.Module):
    def forward(self, x):
        while x.max() < 10:  # @child-while
            x = x * 2
        return x


class Parent(nn.Module):
    def __init__(self):
        super().__init__()
        self.child = Child()

    def forward(self, x):
        return self.child(x)


def _check(err: TraceError, marker: str, source_text: str):
    msg = str(err)
    assert isinstance(err, FxlaError)
    assert f"{THIS_FILE}:{line_of(marker)}:" in msg, msg
    assert source_text in msg and "fix:" in msg
    assert "no concrete value during tracing" in msg
    for hint in ("concrete_args", "wrap", "leaf", "torch.where"):
        assert hint in msg.split("fix:")[1], hint
    assert msg.index("at ") < msg.index("fix:")


def test_if_on_tensor():
    with pytest.raises(TraceError) as info:
        symbolic_trace(Branchy())
    _check(info.value, "@if-line", "if x.sum() > 0:")
    col = int(str(info.value).split(f"{THIS_FILE}:{line_of('@if-line')}:")[1].split()[0])
    assert col == 12  # column of `x.sum() > 0`, 1-based


def test_len_of_proxy():
    with pytest.raises(TraceError) as info:
        symbolic_trace(Length())
    _check(info.value, "@len-line", "return x * len(x)")


def test_iterating_proxy():
    with pytest.raises(TraceError) as info:
        symbolic_trace(Loop())
    _check(info.value, "@for-line", "for _ in x:")


@pytest.mark.parametrize("kind,source", [("int", "torch.zeros(int(n))"), ("float", "x * float(n)"),
                                         ("index", "x * [1, 2, 3][n]"), ("in", "x * (3 in x)")])
def test_conversions(kind, source):
    with pytest.raises(TraceError) as info:
        symbolic_trace(Conversions(kind))
    _check(info.value, f"@conv-{kind}", source)


def test_error_inside_submodule_names_module():
    with pytest.raises(TraceError) as info:
        symbolic_trace(Parent())
    _check(info.value, "@child-while", "while x.max() < 10:")
    assert "in module 'child'" in str(info.value)


def test_patches_restored_after_error():
    call, getattr_ = nn.Module.__call__, nn.Module.__getattr__
    with pytest.raises(TraceError):
        symbolic_trace(Branchy())
    assert nn.Module.__call__ is call and nn.Module.__getattr__ is getattr_
    assert torch.equal(Parent()(torch.full((2,), 20.0)), torch.full((2,), 20.0))


def test_unpacking_known_length_is_allowed():
    class Unpack(nn.Module):
        def forward(self, pair):
            a, b = pair
            h, w = a.shape[-2:]
            return a * b + h * w

    gm = symbolic_trace(Unpack())
    x = (torch.randn(2, 3), torch.randn(2, 3))
    torch.testing.assert_close(gm(x), x[0] * x[1] + 6)


def test_bad_concrete_args_and_variadic():
    class VarArgs(nn.Module):
        def forward(self, x, *rest):
            return x

    with pytest.raises(TraceError, match="unknown parameter"):
        symbolic_trace(Branchy(), concrete_args={"y": 1})
    with pytest.raises(TraceError, match="variadic") as info:
        symbolic_trace(VarArgs())
    assert "fix: pass concrete_args={'rest': ()} (or its values)" in str(info.value)
    assert "concrete_shapes=True" in str(info.value)                 # what Hugging Face models need
    gm = symbolic_trace(VarArgs(), concrete_args={"rest": ()})
    assert torch.equal(gm(torch.ones(2)), torch.ones(2))


# ---- concrete_shapes mode: shapes are concrete, tensor values still are not --------------------
class ShapeThenData(nn.Module):
    def forward(self, x):
        if x.shape[0] > 1:  # fine: a Python int
            x = x * 2
        if x.max().item() > 3:  # @item-line
            return x
        return -x


def test_concrete_shapes_data_dependent_if_still_raises():
    with pytest.raises(TraceError) as info:
        symbolic_trace(Branchy(), example_inputs=(torch.randn(3),))
    _check(info.value, "@if-line", "if x.sum() > 0:")
    assert "shapes, dtypes and devices are concrete" in str(info.value)


def test_concrete_shapes_item_names_the_failed_meta_op():
    with pytest.raises(TraceError) as info:
        symbolic_trace(ShapeThenData(), example_inputs=(torch.randn(3),))
    _check(info.value, "@item-line", "if x.max().item() > 3:")
    text = str(info.value)
    assert "%item (aten._local_scalar_dense.default) has an output shape or value that depends on the tensor's data" \
        in text and "instead of .item()" in text
    assert "meta_nonzero_assume_all_nonzero" not in text and "cannot be called on meta tensors" not in text


def test_default_mode_error_suggests_concrete_shapes():
    with pytest.raises(TraceError) as info:
        symbolic_trace(ShapeThenData())
    assert "example_inputs" in str(info.value).split("fix:")[1]


def test_non_tensor_output_is_named():
    class ReturnsModule(nn.Module):
        def forward(self, x):
            return x, self

    with pytest.raises(TraceError, match="forward\\(\\) returned a value that cannot be a graph output") as info:
        symbolic_trace(ReturnsModule())
    assert "use_cache=False" in str(info.value)
