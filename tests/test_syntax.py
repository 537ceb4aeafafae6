"""The fxla dialect's own syntax (fxla.dialects.fxla.syntax): every op of the table prints in the pretty form,
reads back to the same generic IR and prints again the same; malformed pretty text is an IRSyntaxError with a
line and column; misspelt op and pass names get "did you mean"."""
import itertools
import re

import pytest

from fxla.base.suggest import closest, did_you_mean
from fxla.dialects.fxla import ops
from fxla.dialects.fxla.opdef import BOOL, DENSE, F64, I64, I64_ARRAY, STR
from fxla.dialects.fxla.syntax import ATTR_SYNTAX, IRSyntaxError, print_module, to_generic
from fxla.dialects.mlir import fxla_context, ir
from fxla.lowering import LoweringError
from fxla.lowering.passes import check_pipeline
from fxla.tools.opt import main as opt_main

ALL = list(ops.ALL_OPS) + list(ops.LEGACY_BY_NAME.values())
SAMPLE = {I64: lambda a: -1, F64: lambda a: 1e-05, BOOL: lambda a: True, STR: lambda a: a.choices[0] if a.choices
          else 'say "hi"\n', I64_ARRAY: lambda a: (2, 0, -3),
          DENSE: lambda a: ir.DenseElementsAttr.get_splat(ir.RankedTensorType.get([2], ir.F32Type.get()),
                                                          ir.FloatAttr.get(ir.F32Type.get(), 1.5))}
T = "tensor<2x3xf32>"


def _forms(opdef):
    """(operands present per declared operand, attribute names) of the forms one op can take."""
    if opdef.is_variadic:
        presence = [[1], [3]]
    else:
        choices = [(0, 1) if o.optional else (1,) for o in opdef.operands]
        presence = [list(p) for p in itertools.product(*choices)]
    required = [a.name for a in opdef.attributes if a.required]
    every = [a.name for a in opdef.attributes]
    return [(p, names) for p in presence for names in ([required, every] if required != every else [every])]


def _module(opdef, present, attr_names):
    with ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            from fxla.dialects.mlir import func
            t = ir.RankedTensorType.get([2, 3], ir.F32Type.get())
            n = present[0] if opdef.is_variadic else sum(present)
            f = func.FuncOp("f", ir.FunctionType.get([t] * max(n, 1), [t] * len(opdef.results)))
            block = f.add_entry_block()
            with ir.InsertionPoint(block):
                attrs = {name: opdef.attr_index[name].kind.to_mlir(SAMPLE[opdef.attr_index[name].kind](
                    opdef.attr_index[name])) for name in attr_names}
                if opdef.has_optional:
                    attrs["operandSegmentSizes"] = ir.DenseI32ArrayAttr.get(present)
                op = ir.Operation.create(opdef.name, results=[t] * len(opdef.results),
                                         operands=list(block.arguments)[:n], attributes=attrs)
                func.ReturnOp(list(op.results))
    return module


@pytest.mark.parametrize("opdef", ALL, ids=lambda o: o.mnemonic)
def test_every_op_round_trips_in_the_pretty_form(opdef):
    with fxla_context():
        for present, names in _forms(opdef):
            module = _module(opdef, present, names)
            generic = module.operation.get_asm()
            pretty = print_module(module)
            op_line = next(ln for ln in pretty.splitlines() if opdef.name in ln).strip()
            assert op_line.startswith(("%0 = " + opdef.name, f"%0:{len(opdef.results)} = " + opdef.name)), pretty
            assert '"fxla.' not in pretty and "operandSegmentSizes" not in pretty
            for o, p in zip(opdef.operands, present):
                assert bool(re.search(rf"(?<!\w){o.name} %", op_line)) == bool(o.optional and p), op_line
            for name in opdef.attr_index:
                assert (f"{name} = " in op_line) == (name in names), op_line
            back = ir.Module.parse(to_generic(pretty))
            assert back.operation.get_asm() == generic            # pretty == generic after parsing
            assert print_module(back) == pretty                    # pretty -> parse -> print == pretty
            # with source locations too
            debug = print_module(module, debug_info=True)
            assert print_module(ir.Module.parse(to_generic(debug)), debug_info=True) == debug


def test_every_attribute_kind_has_a_syntax():
    kinds = {a.kind for op in ALL for a in op.attributes}
    assert kinds <= set(ATTR_SYNTAX)


PROGRAM = """\
func.func @f(%x: tensor<2x8xf32>, %w: tensor<4x8xf32> {fxla.param = "fc.weight"}, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  %0 = fxla.linear %x, %w, bias %b : tensor<2x8xf32>, tensor<4x8xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %1 = fxla.linear %x, %w : tensor<2x8xf32>, tensor<4x8xf32> -> tensor<2x4xf32>
  %2 = fxla.clamp %0, max %b : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %3 = fxla.layer_norm %2, bias %b {normalized_rank = 1, eps = 1e-5} : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %4:2 = fxla.sort %3 {dim = -1, descending = false} : tensor<2x4xf32> -> (tensor<2x4xf32>, tensor<2x4xi64>)
  %5 = fxla.constant {value = dense<1.5> : tensor<f32>} : () -> tensor<f32>
  %6 = "fxla.add"(%4#0, %5) : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %7 = fxla.concat %6, %1 {dim = 0} : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<4x4xf32>
  %8 = fxla.slice %7 {start = [0, 0], limit = [2, 4], stride = [1, 1]} : tensor<4x4xf32> -> tensor<2x4xf32>  // a comment
  %9 = fxla.pad %8 {low = [0, 0], high = [0, 0], value = 0} : tensor<2x4xf32> -> tensor<2x4xf32>
  return %9 : tensor<2x4xf32>
}
"""

EXPECTED = """\
    %0 = fxla.linear %arg0, %arg1, bias %arg2 : tensor<2x8xf32>, tensor<4x8xf32>, tensor<4xf32> -> tensor<2x4xf32>
    %1 = fxla.linear %arg0, %arg1 : tensor<2x8xf32>, tensor<4x8xf32> -> tensor<2x4xf32>
    %2 = fxla.clamp %0, max %arg2 : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
    %3 = fxla.layer_norm %2, bias %arg2 {normalized_rank = 1, eps = 1.000000e-05} : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
    %4:2 = fxla.sort %3 {dim = -1, descending = false} : tensor<2x4xf32> -> (tensor<2x4xf32>, tensor<2x4xi64>)
    %5 = fxla.constant {value = dense<1.500000e+00> : tensor<f32>} : () -> tensor<f32>
    %6 = fxla.add %4#0, %5 : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
    %7 = fxla.concat %6, %1 {dim = 0} : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<4x4xf32>
    %8 = fxla.slice %7 {start = [0, 0], limit = [2, 4], stride = [1, 1]} : tensor<4x4xf32> -> tensor<2x4xf32>
    %9 = fxla.pad %8 {low = [0, 0], high = [0, 0], value = 0.000000e+00} : tensor<2x4xf32> -> tensor<2x4xf32>
"""


def test_hand_written_pretty_text_with_generic_ops_parses_and_prints_back():
    with fxla_context():
        module = ir.Module.parse(to_generic(PROGRAM))
        text = print_module(module)
    assert EXPECTED in text
    assert '{fxla.param = "fc.weight"}' in text                 # an attribute named fxla.*, not an op


def test_the_generic_line_keeps_the_ops_location():
    with fxla_context():
        generic = to_generic(PROGRAM)
    assert generic.count("\n") == PROGRAM.count("\n")
    for pretty, converted in zip(PROGRAM.splitlines(), generic.splitlines()):
        if "fxla." in pretty and "=" in pretty:
            assert converted.split(" = ")[0] == pretty.split(" = ")[0]   # same column for %r = (the op's location)


def test_ops_the_pretty_form_cannot_state_stay_generic():
    text = ('func.func @f(%a: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {\n'
            '  %0 = "fxla.softmax"(%a) {dim = 0 : i32} : (tensor<2xf32>) -> tensor<2xf32>\n'
            '  %1 = "fxla.relu"(%a) {alpha = 1 : i64} : (tensor<2xf32>) -> tensor<2xf32>\n'
            '  %2 = "fxla.frobnicate"(%a) : (tensor<2xf32>) -> tensor<2xf32>\n'
            '  return %0, %1, %2 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>\n}')
    with fxla_context():
        printed = print_module(ir.Module.parse(text))
    for line in text.splitlines()[1:4]:
        assert line.strip().replace("%a", "%arg0") in printed


BAD = [
    ("%0 = fxla.lienar %a, %a : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>", 1, 6,
     "'fxla.lienar' is not an op of the fxla dialect; did you mean 'fxla.linear'?"),
    ("%0 = fxla.softmax %a {dimm = 0} : tensor<2xf32> -> tensor<2xf32>", 1, 23,
     "'fxla.softmax' has no attribute 'dimm'; did you mean 'dim'?"),
    ("%0 = fxla.softmax %a {dim = 0.5} : tensor<2xf32> -> tensor<2xf32>", 1, 29, "bad value for 'dim' (i64)"),
    ("%0 = fxla.reshape %a {shape = [2, x]} : tensor<2xf32> -> tensor<2xf32>", 1, 31,
     "bad value for 'shape' (array<i64>)"),
    ("%0 = fxla.softmax %a {dim = 0, dim = 1} : tensor<2xf32> -> tensor<2xf32>", 1, 32, "'dim' is given twice"),
    ("%0 = fxla.linear %a, %a, %a : tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>", 1, 26,
     "one too many (optional ones are written with their name: bias)"),
    ("%0 = fxla.linear %a, %a, baias %a : tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>", 1, 26,
     "has no optional operand 'baias'; did you mean 'bias'?"),
    ("%0 = fxla.clamp %a, max %a, min %a : tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>", 1, 29,
     "optional operand 'min' of 'fxla.clamp' is out of order or repeated"),
    ("%0 = fxla.add %a : tensor<2xf32> -> tensor<2xf32>", 1, 18, "expects its operand 'rhs' here"),
    ("%0 = fxla.add %a, %a : tensor<2xf32> -> tensor<2xf32>", 1, 24, "2 operand(s) but 1 operand type(s)"),
    ("%0 = fxla.add %a, %a tensor<2xf32> -> tensor<2xf32>", 1, 22, "expected ':' and the op's type signature"),
    ("%0 = fxla.add %a, %a : tensor<2xf32>, tensor<2xf32>", 1, 52, "expected '->' and the result types"),
    ("%0 = fxla.add %a, %a : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32> junk", 1, 70,
     "unexpected 'junk' after the type signature"),
    ("%0 = fxla.add %a, %a : tensor<2xf32>, tensr<2xf32> -> tensor<2xf32>", 1, 39, "'tensr<2xf32>' is not a type"),
    ("%0:2 = fxla.sort %a : tensor<2xf32> -> tensor<2xf32>", 1, 40, "'fxla.sort' has 2 result(s)"),
    ("%0 = fxla.sort %a : tensor<2xf32> -> tensor<2xf32>, tensor<2xi64>", 1, 38,
     "several result types go in parentheses"),
    ("%0 = fxla.gelu %a {approximate = \"tanh} : tensor<2xf32> -> tensor<2xf32>", 1, 34,
     "unterminated string literal"),
    ("%0 = fxla.softmax %a {dim = 0 : tensor<2xf32> -> tensor<2xf32>", 1, 29,
     "bad value for 'dim'"),
]


@pytest.mark.parametrize("line,row,col,message", BAD, ids=[b[3][:40] for b in BAD])
def test_malformed_pretty_text_is_an_irsyntaxerror_with_line_and_column(line, row, col, message):
    with fxla_context():
        with pytest.raises(IRSyntaxError) as info:
            to_generic(line)
    err = info.value
    assert message in err.message, err.message
    assert (err.line, err.col) == (row, col), (err.line, err.col, err.message)
    assert str(err).startswith(f"{row}:{col}: ") and "fix: " in str(err)


def test_fxla_opt_reports_syntax_errors_at_the_users_line(capsys, tmp_path):
    src = tmp_path / "bad.mlir"
    src.write_text("func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
                   "  %0 = fxla.softmax %a {dimm = 0} : tensor<2xf32> -> tensor<2xf32>\n"
                   "  return %0 : tensor<2xf32>\n}\n")
    assert opt_main([str(src)]) == 1
    err = capsys.readouterr().err
    assert err == (f"{src}:2:25: error: 'fxla.softmax' has no attribute 'dimm'; did you mean 'dim'?\n"
                   "  %0 = fxla.softmax %a {dimm = 0} : tensor<2xf32> -> tensor<2xf32>\n"
                   "                        ^\n"
                   "fix: write one of the attributes of 'fxla.softmax': dim\n")


def test_fxla_opt_prints_the_whole_syntax_error(capsys, tmp_path):
    """what (at file:line:col), the source line with a caret (tabs kept so it lines up), why and fix."""
    from fxla.tools.opt import syntax_error_lines
    from fxla.dialects.fxla.syntax import IRSyntaxError
    src = tmp_path / "bad.mlir"
    src.write_text("func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
                   "\t%0 = fxla.lienar %a : tensor<2xf32> -> tensor<2xf32>\n"
                   "  return %0 : tensor<2xf32>\n}\n")
    assert opt_main([str(src)]) == 1
    assert capsys.readouterr().err.split("\n") == [
        f"{src}:2:7: error: 'fxla.lienar' is not an op of the fxla dialect; did you mean 'fxla.linear'?",
        "\t%0 = fxla.lienar %a : tensor<2xf32> -> tensor<2xf32>",
        "\t     ^",
        "fix: see docs/dialect.md for the ops of the fxla dialect", ""]
    err = IRSyntaxError("bad", 1, 3, "do this")
    err.why = "because"
    assert syntax_error_lines(err, "ab cd", "f.mlir") == ["f.mlir:1:3: error: bad", "ab cd", "  ^", "because",
                                                         "fix: do this"]


def test_fxla_opt_output_is_its_own_input(capsys, tmp_path):
    src = tmp_path / "p.mlir"
    src.write_text(PROGRAM)
    assert opt_main([str(src), "-o", str(tmp_path / "once.mlir")]) == 0
    assert opt_main([str(tmp_path / "once.mlir"), "-o", str(tmp_path / "twice.mlir")]) == 0
    once = (tmp_path / "once.mlir").read_text()
    assert once == (tmp_path / "twice.mlir").read_text() and "fxla.linear %arg0, %arg1, bias %arg2" in once


def test_unknown_op_suggests_the_closest_names_without_listing_all():
    from fxla.dialects.fxla import VerificationError, verify_module
    with fxla_context():
        module = ir.Module.parse('func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n'
                                 '  %0 = "fxla.softmx"(%a) : (tensor<2xf32>) -> tensor<2xf32>\n'
                                 '  return %0 : tensor<2xf32>\n}')
        with pytest.raises(VerificationError) as info:
            verify_module(module)
    message = info.value.diagnostics[0].message
    assert message.startswith("is not an op of the fxla dialect; did you mean 'fxla.softmax'? (its ")
    assert "docs/dialect.md" in message and "fxla.abs" not in message and len(message) < 120


def test_unknown_pass_suggests_the_closest_name():
    with pytest.raises(LoweringError, match=r"unknown pass 'canonicalise'; did you mean 'canonicalize'\?"):
        check_pipeline(["canonicalise"])
    with pytest.raises(LoweringError, match=r"unknown pass 'fxla-fold-constant'; did you mean "
                                             r"'fxla-fold-constants'\?"):
        check_pipeline(["fxla-fold-constant"])


def test_suggestions_keep_only_the_close_names():
    assert closest("reluu", ["relu", "elu", "gelu"]) == ["relu"]
    assert closest("argmx", ["argmax", "argmin", "amax"]) == ["argmax"]
    assert closest("frobnicate", ["concat", "relu"]) == []
    assert did_you_mean("lienar", ["linear"]) == "; did you mean 'linear'?"
    assert did_you_mean("zzz", ["linear"]) == ""
    assert did_you_mean("maxpool", ["max_pool", "max_pool2d"]) == "; did you mean 'max_pool'?"
    assert did_you_mean("relu6", ["relu", "relu8", "gelu"]) == "; did you mean 'relu' or 'relu8'?"
