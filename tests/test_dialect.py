"""The fxla dialect on its own: op builders and type inference, the verifier's diagnostics, dtype promotion
and the generated docs.  Only the promotion tests use torch (as the reference)."""
from __future__ import annotations

import itertools

import pytest

from fxla.dialects.fxla import (ALL_OPS, BY_NAME, InferError, Sig, VerificationError, ops, promote_pair,
                                result_elem, sig_of, type_of, verify_module, verify_op)
from fxla.dialects.fxla import docs
from fxla.dialects.mlir import func, fxla_context, ir


# ---------------------------------------------------------------------------------------------------------------
# building ops: inference
# ---------------------------------------------------------------------------------------------------------------
class Fn:
    """A ``func.func`` in a fresh fxla context whose arguments have the given types; ops are built in its body."""

    def __init__(self, *arg_types: str):
        self.context = fxla_context()
        self.context.__enter__()
        self.loc = ir.Location.unknown()
        self.loc.__enter__()
        self.module = ir.Module.create()
        with ir.InsertionPoint(self.module.body):
            self.fn = func.FuncOp("main", ir.FunctionType.get([ir.Type.parse(t) for t in arg_types], []))
            self.block = self.fn.add_entry_block()
        self.ip = ir.InsertionPoint(self.block)
        self.ip.__enter__()
        self.args = list(self.block.arguments)

    def close(self):
        self.ip.__exit__(None, None, None)
        self.loc.__exit__(None, None, None)
        self.context.__exit__(None, None, None)


@pytest.fixture
def fn_factory():
    made = []

    def factory(*arg_types):
        made.append(Fn(*arg_types))
        return made[-1]
    yield factory
    for f in reversed(made):
        f.close()


def sig(value) -> str:
    return str(sig_of(value.type))


def const(value: float, elem: str, shape=()):
    t = ir.RankedTensorType.get(list(shape), ir.Type.parse(elem))
    attr = ir.FloatAttr.get(t.element_type, value) if elem.startswith(("f", "bf")) else \
        ir.IntegerAttr.get(t.element_type, int(value))
    return ops.constant(value=ir.DenseElementsAttr.get_splat(t, attr))


def test_elementwise_broadcasts_and_promotes(fn_factory):
    f = fn_factory("tensor<2x3xf32>", "tensor<3xf32>", "tensor<3xi64>", "tensor<3xi32>", "tensor<2x1xbf16>",
                   "tensor<3xf16>")
    a, b, i64, i32, bf, f16 = f.args
    assert sig(ops.add(a, b)) == "tensor<2x3xf32>"
    assert sig(ops.mul(i64, a)) == "tensor<2x3xf32>"
    assert sig(ops.sub(i32, i64)) == "tensor<3xi64>"
    assert sig(ops.maximum(bf, f16)) == "tensor<2x3xf32>"        # f16 with bf16 promotes to f32
    assert sig(ops.minimum(i32, f16)) == "tensor<3xf16>"
    # 0-d operands only raise the category
    assert sig(ops.add(i32, const(2, "i64"))) == "tensor<3xi32>"
    assert sig(ops.add(f16, const(0.5, "f32"))) == "tensor<3xf16>"
    assert sig(ops.add(i32, const(0.5, "f64"))) == "tensor<3xf64>"
    assert sig(ops.add(const(1, "i32"), const(2, "i64"))) == "tensor<i64>"


def test_comparisons_give_i1_and_division_floats(fn_factory):
    f = fn_factory("tensor<4xi64>", "tensor<4xi64>", "tensor<2x4xf16>")
    x, y, h = f.args
    for op in (ops.eq, ops.ne, ops.lt, ops.le, ops.gt, ops.ge):
        assert sig(op(x, h)) == "tensor<2x4xi1>"
    assert sig(ops.div(x, y)) == "tensor<4xf32>"
    assert sig(ops.div(h, x)) == "tensor<2x4xf16>"
    for op in (ops.exp, ops.log, ops.sqrt, ops.rsqrt, ops.tanh, ops.sigmoid):
        assert sig(op(x)) == "tensor<4xf32>"
        assert sig(op(h)) == "tensor<2x4xf16>"
    for op in (ops.neg, ops.abs, ops.relu):
        assert sig(op(x)) == "tensor<4xi64>"


def test_structured_op_inference(fn_factory):
    f = fn_factory("tensor<2x3x4xf32>", "tensor<4x5xf32>", "tensor<4xf32>", "tensor<7x4xf32>", "tensor<7xf32>",
                   "tensor<1x3x8x8xf32>", "tensor<6x1x3x3xf32>", "tensor<6xf32>")
    x, w, v, lw, lb, img, k, kb = f.args
    assert sig(ops.matmul(x, w)) == "tensor<2x3x5xf32>"
    assert sig(ops.matmul(x, v)) == "tensor<2x3xf32>"
    assert sig(ops.matmul(v, w)) == "tensor<5xf32>"
    assert sig(ops.matmul(v, v)) == "tensor<f32>"
    assert sig(ops.linear(x, lw, lb)) == "tensor<2x3x7xf32>"
    assert sig(ops.linear(x, lw, None)) == "tensor<2x3x7xf32>"
    conv = ops.conv(img, k, kb, stride=(2, 2), padding=(1, 1), dilation=(1, 1), groups=3)
    assert sig(conv) == "tensor<1x6x4x4xf32>"
    conv = ops.conv(img, k, None, stride=(1, 2), padding=(0, 2), dilation=(2, 1), groups=3)
    assert sig(conv) == "tensor<1x6x4x5xf32>"        # H: 8 - 2*2 = 4; W: (8 + 4 - 3) // 2 + 1 = 5
    pool = dict(kernel_size=(3, 3), stride=(2, 2), padding=(0, 0), dilation=(1, 1))
    assert sig(ops.max_pool2d(img, **pool)) == "tensor<1x3x3x3xf32>"
    assert sig(ops.max_pool2d(img, **pool, ceil_mode=True)) == "tensor<1x3x4x4xf32>"
    assert sig(ops.reshape(x, shape=(6, 4))) == "tensor<6x4xf32>"
    assert sig(ops.permute(x, dims=(-1, 0, 1))) == "tensor<4x2x3xf32>"
    assert sig(ops.sum(x, dims=(1,), keepdim=True)) == "tensor<2x1x4xf32>"
    assert sig(ops.sum(x, dims=(-1, 0))) == "tensor<3xf32>"
    assert sig(ops.mean(x, dims=())) == "tensor<f32>"
    assert sig(ops.softmax(x, dim=-1)) == "tensor<2x3x4xf32>"
    assert sig(ops.log_softmax(x, dim=0)) == "tensor<2x3x4xf32>"
    assert sig(ops.layer_norm(x, v, v, normalized_rank=1)) == "tensor<2x3x4xf32>"
    assert sig(ops.layer_norm(x, None, None, normalized_rank=2, eps=1e-3)) == "tensor<2x3x4xf32>"
    assert sig(ops.gelu(x, approximate="tanh")) == "tensor<2x3x4xf32>"
    assert sig(ops.convert(x, result_type=type_of(Sig((2, 3, 4), "bf16")))) == "tensor<2x3x4xbf16>"
    assert sig(const(1.5, "f16", (2, 2))) == "tensor<2x2xf16>"


def test_sum_widens_integers(fn_factory):
    f = fn_factory("tensor<3x4xi1>", "tensor<3x4xi32>", "tensor<3x4xbf16>")
    b, i, h = f.args
    assert sig(ops.sum(b, dims=())) == "tensor<i64>"
    assert sig(ops.sum(i, dims=(0,))) == "tensor<4xi64>"
    assert sig(ops.sum(h, dims=(0,))) == "tensor<4xbf16>"


@pytest.mark.parametrize("build,message", [
    (lambda a, b, i: ops.matmul(a, b), "contracting dimensions differ"),
    (lambda a, b, i: ops.matmul(a, i), "does not promote"),
    (lambda a, b, i: ops.add(a, b), "do not broadcast"),
    (lambda a, b, i: ops.softmax(a, dim=2), "dim 2 is out of range for a rank-2 operand"),
    (lambda a, b, i: ops.permute(a, dims=(0, 0)), "not a permutation"),
    (lambda a, b, i: ops.reshape(a, shape=(5,)), "cannot reshape"),
    (lambda a, b, i: ops.reshape(a, shape=(-1, 2)), "fully static"),
    (lambda a, b, i: ops.mean(i, dims=()), "expects a floating-point operand"),
    (lambda a, b, i: ops.layer_norm(a, b, None, normalized_rank=1), "weight shape [4, 2]"),
    (lambda a, b, i: ops.linear(a, b, None), "input features 3 do not match"),
])
def test_inference_errors(fn_factory, build, message):
    f = fn_factory("tensor<2x3xf32>", "tensor<4x2xf32>", "tensor<3x2xi64>")
    with pytest.raises(InferError, match=message.replace("[", r"\[").replace("]", r"\]")):
        build(*f.args)


def test_builder_rejects_bad_attributes(fn_factory):
    f = fn_factory("tensor<2x3xf32>")
    (a,) = f.args
    with pytest.raises(ValueError, match="requires attribute 'dim'"):
        ops.softmax(a)
    with pytest.raises(ValueError, match=r"no attribute\(s\) \['axis'\]"):
        ops.softmax(a, dim=0, axis=1)
    with pytest.raises(ValueError, match="pass result_types"):
        ops.convert(a)
    with pytest.raises(ValueError, match="takes 2 operands, got 1"):
        ops.add.build([a])


def test_built_ops_verify_and_print_generic_form(fn_factory):
    f = fn_factory("tensor<2x3xf32>", "tensor<4x3xf32>")
    x, w = f.args
    y = ops.linear(x, w, None)
    z = ops.softmax(ops.relu(y), dim=-1)
    func.ReturnOp([z])
    f.fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get([x.type, w.type], [z.type]))
    verify_module(f.module)
    assert verify_op(y.owner) == []
    text = str(f.module)
    assert '"fxla.linear"' in text and "operandSegmentSizes = array<i32: 1, 1, 0>" in text
    assert '"fxla.softmax"' in text and "dim = -1 : i64" in text


# ---------------------------------------------------------------------------------------------------------------
# the verifier on parsed modules
# ---------------------------------------------------------------------------------------------------------------
def verify_text(body: str, args: str = "%a: tensor<2x3xf32>, %b: tensor<2x3xf32>") -> VerificationError:
    """Parse ``body`` as the ops of ``func.func @main(args)`` and return the verifier's error."""
    text = f"func.func @main({args}) {{\n{body}\n  return\n}}\n"
    with fxla_context():
        module = ir.Module.parse(text)
        with pytest.raises(VerificationError) as info:
            verify_module(module)
    return info.value


@pytest.mark.parametrize("body,message", [
    ('%0 = "fxla.add"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>',
     "'fxla.add' op expects 2 operands, but got 1"),
    ('%0 = "fxla.relu"(%a, %b) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>',
     "'fxla.relu' op expects 1 operand, but got 2"),
    ('%0 = "fxla.add"(%a, %b) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf16>',
     "'fxla.add' op result #0 has type tensor<2x3xf16>, but the operands imply tensor<2x3xf32>"),
    ('%0 = "fxla.sum"(%a) {dims = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>',
     "result #0 has type tensor<2x3xf32>, but the operands imply tensor<2xf32>"),
    ('%0 = "fxla.convert"(%a) : (tensor<2x3xf32>) -> tensor<3x2xi32>',
     "result #0 has type tensor<3x2xi32>, but the operands imply tensor<2x3x?>"),
    ('%0:2 = "fxla.relu"(%a) : (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>)',
     "expects 1 result(s), but got 2"),
    ('%0 = "fxla.softmax"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>',
     "'fxla.softmax' op requires attribute 'dim' (i64)"),
    ('%0 = "fxla.relu"(%a) {alpha = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>',
     "'fxla.relu' op has unknown attribute 'alpha'"),
    ('%0 = "fxla.softmax"(%a) {dim = "last"} : (tensor<2x3xf32>) -> tensor<2x3xf32>',
     "attribute 'dim' must be i64"),
    ('%0 = "fxla.gelu"(%a) {approximate = "fast"} : (tensor<2x3xf32>) -> tensor<2x3xf32>',
     "attribute 'approximate' must be one of ['none', 'tanh'], got 'fast'"),
    ('%0 = "fxla.frobnicate"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>',
     "'fxla.frobnicate' op is not an op of the fxla dialect (its "),
    ('%0 = "fxla.linear"(%a, %b) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x2xf32>',
     "requires attribute 'operandSegmentSizes' (it has optional operands)"),
    ('%0 = "fxla.linear"(%a, %b) {operandSegmentSizes = array<i32: 1, 0, 1>} : '
     '(tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x2xf32>', "operand 'weight' is required"),
    ('%0 = "fxla.softmax"(%a) {dim = 5 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>',
     "dim 5 is out of range for a rank-2 operand"),
])
def test_verifier_messages(body, message):
    err = verify_text("  " + body)
    assert len(err.diagnostics) == 1
    assert message in str(err)
    assert ":2:" in str(err) and "error: " in str(err)        # file:line:col of the op (line 2 of the text)


def test_verifier_checks_operand_element_types():
    err = verify_text('  %0 = "fxla.gelu"(%a) : (tensor<2x3xi64>) -> tensor<2x3xi64>', args="%a: tensor<2x3xi64>")
    assert "operand 'input' must have element type in {f16, bf16, f32, f64}, got i64" in str(err)


def test_verifier_reports_every_bad_op_in_order():
    err = verify_text('  %0 = "fxla.add"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>\n'
                      '  %1 = "fxla.exp"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>\n'
                      '  %2 = "fxla.nope"(%b) : (tensor<2x3xf32>) -> tensor<2x3xf32>')
    assert [d.op_name for d in err.diagnostics] == ["fxla.add", "fxla.nope"]
    lines = str(err).splitlines()
    assert ":2:" in lines[0] and ":4:" in lines[1]


def test_verifier_accepts_a_valid_module():
    text = ('func.func @main(%a: tensor<2x3xf32>, %b: tensor<3xi64>) -> tensor<2x3xi1> {\n'
            '  %0 = "fxla.add"(%a, %b) : (tensor<2x3xf32>, tensor<3xi64>) -> tensor<2x3xf32>\n'
            '  %1 = "fxla.convert"(%0) : (tensor<2x3xf32>) -> tensor<2x3xbf16>\n'
            '  %2 = "fxla.gt"(%1, %a) : (tensor<2x3xbf16>, tensor<2x3xf32>) -> tensor<2x3xi1>\n'
            '  return %2 : tensor<2x3xi1>\n}\n')
    with fxla_context():
        verify_module(ir.Module.parse(text))


def test_verifier_reports_mlir_structural_errors(fn_factory):
    f = fn_factory("tensor<2x3xf32>")
    func.ReturnOp([ops.exp(f.args[0])])          # the function type says it returns nothing
    with pytest.raises(VerificationError, match="'builtin' op .*returns 0"):
        verify_module(f.module)


# ---------------------------------------------------------------------------------------------------------------
# promotion against torch
# ---------------------------------------------------------------------------------------------------------------
def _dtypes():
    from fxla.lowering.dtypes import TORCH_TO_ELEM
    return list(TORCH_TO_ELEM.items())


def test_promote_pair_matches_torch():
    import torch
    table = _dtypes()
    to_elem = dict(table)
    wrong = []
    for (ta, ea), (tb, eb) in itertools.product(table, table):
        want = to_elem[torch.promote_types(ta, tb)]
        if promote_pair(ea, eb) != want:
            wrong.append(f"{ea}+{eb}: fxla {promote_pair(ea, eb)}, torch {want}")
    assert not wrong, wrong


@pytest.mark.parametrize("shapes", [((3,), (3,)), ((3,), ()), ((), (3,)), ((), ())], ids=str)
def test_result_elem_matches_torch_result_type(shapes):
    import torch
    table = _dtypes()
    to_elem = dict(table)
    wrong = []
    for (ta, ea), (tb, eb) in itertools.product(table, table):
        want = to_elem[torch.result_type(torch.zeros(shapes[0], dtype=ta), torch.zeros(shapes[1], dtype=tb))]
        got = result_elem([Sig(shapes[0], ea), Sig(shapes[1], eb)])
        if got != want:
            wrong.append(f"{ea}{list(shapes[0])}+{eb}{list(shapes[1])}: fxla {got}, torch {want}")
    assert not wrong, wrong


def test_python_scalar_element_types_match_torch():
    """fxla.lowering's wrapped-number rule + result_elem give torch.result_type(tensor, scalar)."""
    import torch
    from fxla.lowering.context import scalar_elem
    to_elem = dict(_dtypes())
    wrong = []
    for dtype, elem in _dtypes():
        for scalar in (True, 3, 2.5):
            for shape in ((3,), ()):
                want = to_elem[torch.result_type(torch.zeros(shape, dtype=dtype), scalar)]
                got = result_elem([Sig(shape, elem), Sig((), scalar_elem(scalar, elem))])
                if got != want:
                    wrong.append(f"{elem}{list(shape)} with {scalar!r}: fxla {got}, torch {want}")
    assert not wrong, wrong


# ---------------------------------------------------------------------------------------------------------------
# the op table and its docs
# ---------------------------------------------------------------------------------------------------------------
def test_op_table_is_consistent():
    assert len(BY_NAME) == len(ALL_OPS)
    for op in ALL_OPS:
        assert BY_NAME[op.name] is op and op.name == f"fxla.{op.mnemonic}"
        assert op.summary and op.infer is not None


def test_docs_mention_every_op_and_attribute():
    md = docs.render_markdown()
    assert md.startswith("# The `fxla` dialect")
    for op in ALL_OPS:
        assert f"## `{op.name}`" in md, op.name
        for a in op.attributes:
            assert f"`{a.name}`" in md
        for o in op.operands:
            assert f"`{o.name}`" in md


def test_docs_dialect_md_is_up_to_date():
    import pathlib

    from fxla.dialects.fxla import docs
    path = pathlib.Path(__file__).resolve().parent.parent / "docs" / "dialect.md"
    assert path.read_text() == docs.render_markdown(), "regenerate with `make docs`"


# ---------------------------------------------------------------------------------------------------------------
# indexing, shape (joining) and creation ops (dialects/fxla/ops_indexing.py, ops_shape.py, ops_creation.py)
# ---------------------------------------------------------------------------------------------------------------
def test_indexing_op_inference(fn_factory):
    f = fn_factory("tensor<4x6xf32>", "tensor<4x2xi64>", "tensor<3xi32>", "tensor<4x6xi1>", "tensor<6xf16>",
                   "tensor<4x1xi64>")
    x, i2, i1, c, h, col = f.args
    assert sig(ops.slice(x, start=(1, 0), limit=(3, 6), stride=(1, 4))) == "tensor<2x2xf32>"
    assert sig(ops.concat([x, x, col], dim=-1)) == "tensor<4x13xf32>"         # variadic, promotes like torch.cat
    assert sig(ops.gather(x, i2, dim=1)) == "tensor<4x2xf32>"
    assert sig(ops.index_select(x, i1, dim=0)) == "tensor<3x6xf32>"
    assert sig(ops.scatter(x, i2, x, dim=1, reduce="add")) == "tensor<4x6xf32>"
    assert sig(ops.where(c, h, x)) == "tensor<4x6xf32>"
    assert sig(ops.where(c, col, const(0.5, "f32"))) == "tensor<4x6xf32>"
    assert sig(ops.expand(col, shape=(2, 4, 3))) == "tensor<2x4x3xi64>"
    assert sig(ops.flip(x, dims=(0, -1))) == "tensor<4x6xf32>"
    assert sig(ops.pad(x, low=(1, -2), high=(0, 3), value=1.0)) == "tensor<5x7xf32>"
    assert sig(ops.arange(start=0.0, step=1.0, length=5, result_type=type_of(Sig((5,), "i64")))) == "tensor<5xi64>"
    assert sig(ops.tril(x, diagonal=-1)) == "tensor<4x6xf32>" and sig(ops.triu(x)) == "tensor<4x6xf32>"
    assert verify_op(ops.concat([x, col], dim=1).owner) == []


@pytest.mark.parametrize("build,message", [
    (lambda x, i, c: ops.slice(x, start=(0, 0), limit=(5, 6), stride=(1, 1)), "is not a forward slice of size 4"),
    (lambda x, i, c: ops.slice(x, start=(0,), limit=(4,), stride=(1,)), "need 2 entries each"),
    (lambda x, i, c: ops.concat([x, i], dim=0), "differ outside dim 0"),
    (lambda x, i, c: ops.gather(x, c, dim=0), "index rank 1 != input rank 2"),
    (lambda x, i, c: ops.expand(x, shape=(4, 7)), "cannot expand [4, 6] to [4, 7]"),
    (lambda x, i, c: ops.flip(x, dims=(1, -1)), "repeat a dimension"),
    (lambda x, i, c: ops.tril(c), "rank >= 2"),
    (lambda x, i, c: ops.pad(x, low=(-5, 0), high=(0, 0)), "crops [4, 6] below zero"),
])
def test_indexing_inference_errors(fn_factory, build, message):
    f = fn_factory("tensor<4x6xf32>", "tensor<4x2xi64>", "tensor<3xi64>")
    with pytest.raises(InferError, match=message.replace("[", r"\[").replace("]", r"\]")):
        build(*f.args)


def test_variadic_concat_verifies_and_round_trips():
    text = ('func.func @main(%a: tensor<2x3xf32>, %b: tensor<2x1xi64>) -> tensor<2x4xf32> {\n'
            '  %0 = "fxla.concat"(%a, %b) {dim = 1 : i64} : (tensor<2x3xf32>, tensor<2x1xi64>) -> tensor<2x4xf32>\n'
            '  return %0 : tensor<2x4xf32>\n}\n')
    with fxla_context():
        module = ir.Module.parse(text)
        verify_module(module)
        op = module.body.operations[0].regions[0].blocks[0].operations[0]
        (inputs,), attrs = ops.concat.read(op)
        assert len(inputs) == 2 and attrs == {"dim": 1}
    err = verify_text('  %0 = "fxla.concat"() {dim = 0 : i64} : () -> tensor<2x3xf32>')
    assert "expects at least one 'inputs' operand" in str(err)


def test_math_op_inference(fn_factory):
    f = fn_factory("tensor<2x3xf16>", "tensor<3xi64>", "tensor<3xi1>", "tensor<3xi32>")
    h, i, b, i32 = f.args
    assert sig(ops.floor(i)) == "tensor<3xi64>" and sig(ops.round(h, decimals=2)) == "tensor<2x3xf16>"
    assert sig(ops.sin(i)) == "tensor<3xf32>" and sig(ops.erf(h)) == "tensor<2x3xf16>"
    assert sig(ops.logical_and(h, i)) == "tensor<2x3xi1>" and sig(ops.logical_not(i)) == "tensor<3xi1>"
    assert sig(ops.bitwise_or(b, i32)) == "tensor<3xi32>"
    assert sig(ops.floor_divide(i, h)) == "tensor<2x3xf16>" and sig(ops.remainder(i, i32)) == "tensor<3xi64>"
    assert sig(ops.clamp(i, const(0.5, "f32"), None)) == "tensor<3xf32>"      # a float bound raises the category
    assert sig(ops.clamp(h, None, const(1.0, "f32"))) == "tensor<2x3xf16>"
    assert sig(ops.leaky_relu(h, negative_slope=0.2)) == "tensor<2x3xf16>"
    with pytest.raises(InferError, match="do not broadcast"):
        ops.clamp(h, const(1.0, "f16", (2,)), None)
    assert verify_op(ops.silu(h).owner) == []
    err = verify_text('  %0 = "fxla.silu"(%a) : (tensor<2x3xi64>) -> tensor<2x3xi64>', args="%a: tensor<2x3xi64>")
    assert "operand 'input' must have element type in {f16, bf16, f32, f64}, got i64" in str(err)
    err = verify_text('  %0 = "fxla.bitwise_not"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>')
    assert "must have element type in {ui8, i8, i16, i32, i64, i1}, got f32" in str(err)


def test_reduction_op_inference(fn_factory):
    f = fn_factory("tensor<3x4x5xf32>", "tensor<3x4xi32>", "tensor<3x4xui8>")
    x, i, u = f.args
    assert sig(ops.amax(x, dims=(1,), keepdim=True)) == "tensor<3x1x5xf32>"
    assert sig(ops.argmax(x, dim=-1)) == "tensor<3x4xi64>" and sig(ops.argmin(x)) == "tensor<i64>"
    assert sig(ops.argmax(x, keepdim=True)) == "tensor<1x1x1xi64>"
    assert sig(ops.prod(i, dims=())) == "tensor<i64>" and sig(ops.cumsum(i, dim=1)) == "tensor<3x4xi64>"
    assert sig(ops.var(x, dims=(0, 2), correction=0)) == "tensor<4xf32>"
    assert sig(ops.any(i, dims=(0,))) == "tensor<4xi1>" and sig(ops.all(u, dims=())) == "tensor<ui8>"
    assert sig(ops.logsumexp(i, dims=(1,))) == "tensor<3xf32>"
    values, indices = ops.topk(x, k=2, dim=1)
    assert (sig(values), sig(indices)) == ("tensor<3x2x5xf32>", "tensor<3x2x5xi64>")
    values, indices = ops.sort(i, dim=0, descending=True)
    assert (sig(values), sig(indices)) == ("tensor<3x4xi32>", "tensor<3x4xi64>")
    with pytest.raises(InferError, match="k=6 is out of range"):
        ops.topk(x, k=6)
    with pytest.raises(InferError, match="expects a floating-point operand"):
        ops.var(i, dims=())
    err = verify_text('  %0 = "fxla.sort"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>')
    assert "expects 2 result(s), but got 1" in str(err)


def test_a_misspelt_op_name_gets_a_suggestion():
    from fxla.dialects.fxla.verifier import verify_module
    from fxla.dialects.mlir import fxla_context, ir
    with fxla_context():
        module = ir.Module.parse('func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n'
                                 '  %0 = "fxla.reluu"(%a) : (tensor<2xf32>) -> tensor<2xf32>\n'
                                 '  return %0 : tensor<2xf32>\n}')
        with pytest.raises(Exception, match=r"did you mean 'fxla.relu'\?"):
            verify_module(module)
