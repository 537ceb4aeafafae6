"""TraceError: asking a symbolic value for a concrete one names the user's file:line:col."""
import pytest
import torch
import torch.nn as nn
import fxla

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


def _check(err: TraceError, marker: str, source_text: str, sizes: bool = False, concrete: bool = False):
    """The error names the line and the remedies in fxla.symbolic_trace's words (the default entry point), the one
    that fits first: concrete shapes for a value computed from sizes alone, else the data remedies."""
    msg = str(err)
    assert isinstance(err, FxlaError)
    assert f"{THIS_FILE}:{line_of(marker)}:" in msg, msg
    assert source_text in msg and "fix:" in msg
    assert "no concrete value during tracing" in msg
    fix = msg.split("fix:")[1]
    for hint in ("concrete_args={...}", "@fxla.wrap", "leaf"):
        assert hint in fix, hint
    assert "fxla.frontend.wrap" not in fix
    if sizes:
        assert fix.strip().startswith("the value comes from tensor sizes only, which a trace with concrete shapes "
                                      "knows: trace with concrete shapes: `fxla.symbolic_trace(model, "
                                      "example_inputs=(...))`, "), fix
        assert "torch.where" not in fix
    elif concrete:                      # shapes are concrete already: that remedy is not offered
        assert "torch.where" in fix and "example_inputs" not in fix and "concrete shapes" not in fix
    else:
        assert "torch.where" in fix and fix.index("concrete_args") < fix.index("example_inputs")
    assert msg.index("at ") < msg.index("fix:")


def test_if_on_tensor():
    with pytest.raises(TraceError) as info:
        symbolic_trace(Branchy())
    _check(info.value, "@if-line", "if x.sum() > 0:")
    assert str(info.value).split("fix:")[1].strip().startswith("replace data-dependent branching with `torch.where`")
    col = int(str(info.value).split(f"{THIS_FILE}:{line_of('@if-line')}:")[1].split()[0])
    assert col == 12  # column of `x.sum() > 0`, 1-based


def test_len_of_proxy():
    with pytest.raises(TraceError) as info:
        symbolic_trace(Length())
    _check(info.value, "@len-line", "return x * len(x)", sizes=True)


def test_iterating_proxy():
    with pytest.raises(TraceError) as info:
        symbolic_trace(Loop())
    _check(info.value, "@for-line", "for _ in x:", sizes=True)


@pytest.mark.parametrize("kind,source", [("int", "torch.zeros(int(n))"), ("float", "x * float(n)"),
                                         ("index", "x * [1, 2, 3][n]"), ("in", "x * (3 in x)")])
def test_conversions(kind, source):
    with pytest.raises(TraceError) as info:
        symbolic_trace(Conversions(kind))
    _check(info.value, f"@conv-{kind}", source, sizes=kind != "in")   # (`3 in x` asks about x's values)


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
    assert "fix the parameter at a value (concrete_args={'rest': ()})" in str(info.value)
    assert "fxla.symbolic_trace(model, example_inputs=(...))" in str(info.value)   # what Hugging Face models need
    gm = symbolic_trace(VarArgs(), concrete_args={"rest": ()})
    assert torch.equal(gm(torch.ones(2)), torch.ones(2))
    with pytest.raises(TraceError, match="variadic") as info:      # fxla.compile: its own spelling
        fxla.compile(VarArgs())
    assert "fxla.compile(model, concrete_shapes=True)" in str(info.value)
    with pytest.raises(TraceError, match="variadic") as info:      # dynamic=: concrete shapes keep the dims symbolic
        fxla.compile(VarArgs(), dynamic=True)
    assert "fxla.compile(model, concrete_shapes=True, dynamic=...)" in str(info.value)
    assert 'torch.compile(model, backend="fxla", dynamic=True)' in str(info.value)


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
    _check(info.value, "@if-line", "if x.sum() > 0:", concrete=True)
    assert "shapes, dtypes and devices are concrete" in str(info.value)


def test_concrete_shapes_item_names_the_failed_meta_op():
    with pytest.raises(TraceError) as info:
        symbolic_trace(ShapeThenData(), example_inputs=(torch.randn(3),))
    _check(info.value, "@item-line", "if x.max().item() > 3:", concrete=True)
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
    assert "objects whose attributes" in str(info.value) and "fix: return only such values" in str(info.value)


# ---- the fix speaks the entry point the user called (fxla.frontend.remedies) ----------------------
class SizeBranch(nn.Module):
    def forward(self, x):
        if x.shape[0] > 2:  # @size-branch
            return x * 2
        return x


def test_compile_names_fxla_compile_and_fxla_wrap():
    import fxla
    assert fxla.wrap is fxla.frontend.wrap                      # the public name the fixes use
    with pytest.raises(TraceError) as info:
        fxla.compile(SizeBranch())
    fix = str(info.value).split("fix:")[1]
    assert fix.strip().startswith("the value comes from tensor sizes only, which a trace with concrete shapes "
                                  "knows: compile with concrete shapes: `fxla.compile(model, concrete_shapes=True)`")
    assert "`fxla.compile(model, concrete_args={...})`" in fix and "`@fxla.wrap`" in fix
    assert "symbolic_trace" not in fix and "example_inputs" not in fix and "fxla.frontend.wrap" not in fix
    with pytest.raises(TraceError) as info:
        fxla.compile(Branchy())
    fix = str(info.value).split("fix:")[1]
    assert fix.strip().startswith("replace data-dependent branching with `torch.where`")
    assert fix.rstrip().endswith("if it depends only on shapes, compile with concrete shapes: "
                                 "`fxla.compile(model, concrete_shapes=True)` (one trace per input signature)")
    assert "symbolic_trace" not in fix


class RandomBranch(nn.Module):
    def forward(self, x):
        if torch.rand(()) > 0.5:    # (a branch on data fxla.compile decides per call; on random numbers it cannot)
            return x
        return -x


def test_compile_with_concrete_shapes_does_not_offer_them_again():
    import fxla
    fast = fxla.compile(RandomBranch(), concrete_shapes=True)
    with pytest.raises(TraceError) as info:
        fast(torch.randn(3))
    fix = str(info.value).split("fix:")[1]
    assert "`fxla.compile(model, concrete_args={...})`" in fix
    assert "concrete_shapes" not in fix and "symbolic_trace" not in fix


def test_export_and_compile_step_name_their_own_options(tmp_path):
    import fxla
    with pytest.raises(TraceError) as info:
        fxla.export(SizeBranch(), (torch.randn(3),), tmp_path / "a")
    fix = str(info.value).split("fix:")[1]
    assert "`fxla.export(model, example_inputs, path, concrete_shapes=True)`" in fix
    assert "fxla.compile(" not in fix and "symbolic_trace" not in fix
    assert not (tmp_path / "a").exists()
    model = nn.Linear(3, 1)
    step = fxla.compile_step(model, torch.optim.SGD(model.parameters(), lr=0.1),
                             lambda m, x: m(x).sum() * (2 if x.shape[0] > 2 else 1))
    with pytest.raises(TraceError) as info:
        step(torch.randn(4, 3))
    fix = str(info.value).split("fix:")[1]
    assert "`fxla.compile_step(model, optimizer, loss_fn, concrete_shapes=True)`" in fix
    assert "concrete_args" not in fix and "symbolic_trace" not in fix


def test_unrecordable_argument_fix_names_the_entry_point():
    import fxla

    class Thing:
        pass

    class AddsThing(nn.Module):
        def forward(self, x):
            return x + Thing()

    with pytest.raises(TraceError, match="cannot record an argument of type Thing") as info:
        fxla.compile(AddsThing())
    assert str(info.value).split("fix:")[1].strip() == (
        "pass the value as a constant with `fxla.compile(model, concrete_args={...})`, or move this code into a "
        "function decorated with `@fxla.wrap` and give it a lowering rule (`@fxla.lowering.register(fn)`)")
    with pytest.raises(TraceError) as info:
        symbolic_trace(AddsThing())
    assert "`fxla.symbolic_trace(model, concrete_args={...})`" in str(info.value)


def test_an_error_of_the_traced_code_names_the_none_defaults_traced_as_inputs():
    class ExactlyOne(nn.Module):          # Hugging Face's check of input_ids / inputs_embeds
        def forward(self, ids=None, embeds=None, scale=2):
            if (ids is None) == (embeds is None):
                raise ValueError("You must specify exactly one of ids or embeds")
            return (ids if ids is not None else embeds) * scale

    with pytest.raises(ValueError, match="exactly one") as info:
        symbolic_trace(ExactlyOne())
    note = "\n".join(info.value.__notes__)
    assert "symbolic tensors for the parameter(s) ['ids', 'embeds'] although their default is None" in note
    assert "concrete_args={'ids': None, 'embeds': None}" in note
    gm = symbolic_trace(ExactlyOne(), concrete_args={"embeds": None})      # the fix works
    assert torch.equal(gm(torch.ones(2)), torch.full((2,), 2.0))

    class Plain(nn.Module):               # nothing traced from a None default: no note
        def forward(self, x):
            raise ValueError("bad")

    with pytest.raises(ValueError, match="bad") as info:
        symbolic_trace(Plain())
    assert not getattr(info.value, "__notes__", [])

    class TooLong(nn.Module):             # concrete shapes: the given arguments are the caller's, not defaults
        def forward(self, x=None, mask=None):
            if x.shape[0] > 100:
                raise ValueError("too long")
            return x * mask

    with pytest.raises(ValueError, match="too long") as info:
        fxla.compile(TooLong(), concrete_shapes=True)(x=torch.ones(200), mask=torch.ones(200))
    assert not getattr(info.value, "__notes__", [])


def test_a_builtin_without_a_python_signature_is_a_trace_error():
    with pytest.raises(fxla.frontend.TraceError, match=r"cannot trace 'fmod'(.|\n)*fix: wrap it in a Python function"):
        fxla.compile(torch.fmod)
