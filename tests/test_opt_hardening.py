"""Untrusted MLIR never crashes fxla (issue #16 items 12 and 15): fxla-opt answers deep nesting, non-UTF-8 bytes,
attributes the bindings cannot read and unregistered ops with regions with ``file:line:col: error:`` diagnostics
and exit status 1; fxla.load reads only MLIR bytecode, on a large stack, nesting bounded.

Inputs that used to kill the process (SIGSEGV) run in a subprocess, so a regression fails the test instead of
killing pytest."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from fxla.dialects import mlir
from fxla.tools import opt

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_opt_process(path, *args, timeout=180):
    """fxla-opt in a fresh interpreter: (exit status, stdout, stderr)."""
    code = "import sys; from fxla.tools.opt import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.run([sys.executable, "-c", code, str(path), *args], capture_output=True, timeout=timeout,
                          cwd=ROOT)
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def deep_regions(n, registered=True):
    if registered:
        body = "scf.execute_region {\n" * n + "scf.yield\n" + "}\nscf.yield\n" * (n - 1) + "}\n"
    else:
        body = '"x.op"() ({\n' * n + '"x.end"() : () -> ()\n' + "}) : () -> ()\n" * n
    return "func.func @f() {\n" + body + "return\n}\n"


def deep_type(n):
    t = "tuple<" * n + "tensor<2xf32>" + ">" * n
    return f"func.func @f(%a: {t}) -> {t} {{\n  return %a : {t}\n}}\n"


def deep_attr(n):
    return "func.func @f() attributes {x = " + "[" * n + "1" + "]" * n + "} {\n  return\n}\n"


# ---------------------------------------------------------------------------------------------------------------
# item 12: nesting
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text,where", [(deep_regions(3000, registered=False), "501:11:"),
                                        (deep_regions(3000), "1001:20:"),
                                        (deep_type(50000), "1:"), (deep_attr(20000), "1:")],
                         ids=["regions", "scf-regions", "type", "attribute"])
@pytest.mark.slow
def test_deep_nesting_is_a_diagnostic_not_a_crash(tmp_path, text, where):
    path = tmp_path / "deep.mlir"
    path.write_text(text)
    rc, out, err = run_opt_process(path, "--canonicalize")
    assert rc == 1, (rc, err[-2000:])
    assert f"deep.mlir:{where}" in err and "nest more than 1000 deep" in err and "Traceback" not in err


@pytest.mark.parametrize("passes", [[], ["--inline", "--canonicalize", "--cse", "--convert-fxla-to-stablehlo",
                                         "--symbol-dce", "--fxla-dce", "--fxla-fold-constants"]])
@pytest.mark.slow
def test_nesting_up_to_the_limit_runs_every_pass(tmp_path, passes):
    # 499 nested regions overflow an 8 MiB stack in MLIR's inliner/verifier; fxla-opt works on a large one
    path = tmp_path / "ok.mlir"
    path.write_text(deep_regions(499))
    rc, out, err = run_opt_process(path, *passes)
    assert rc == 0, err[-2000:]
    assert out.count("scf.execute_region") == 499 or (passes and out.count("func.func") == 1)


@pytest.mark.slow
def test_deep_type_below_the_limit_round_trips(tmp_path):
    path = tmp_path / "ok.mlir"
    path.write_text(deep_type(990))
    rc, out, err = run_opt_process(path, "--canonicalize", "--mlir-print-debuginfo")
    assert rc == 0 and out.count("tuple<") == 2 * 990 + 990, err[-2000:]


def test_nesting_scan_skips_strings_comments_and_arrows():
    text = 'func.func @f(%a: tensor<4xf32>) -> tuple<i32> { "x"() {s = "((((<<"} : () -> () } // ((((('
    assert mlir.nesting_depth(text) == (2, -1)
    assert mlir.nesting_depth("[" * (mlir.MAX_NESTING + 1))[1] == mlir.MAX_NESTING


def test_parse_untrusted_raises_nesting_error_with_position():
    text = "\n\n  " + "[" * (mlir.MAX_NESTING + 5)
    with pytest.raises(mlir.NestingError) as info:
        mlir.parse_untrusted(text, mlir.fxla_context())
    assert (info.value.line, info.value.col) == (3, 3 + mlir.MAX_NESTING)


def test_parse_untrusted_passes_mlir_errors_through():
    with pytest.raises(mlir.ir.MLIRError):
        mlir.parse_untrusted("func.func @f(", mlir.fxla_context())
    module = mlir.parse_untrusted(deep_type(900), mlir.fxla_context())
    assert "tuple<" in str(module)


_DEEP_BYTECODE = textwrap.dedent("""
    import sys, threading
    from jax.interpreters import mlir as jax_mlir
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import stablehlo
    n, out = int(sys.argv[1]), sys.argv[2]
    def build():
        t = "tuple<" * n + "tensor<2xf32>" + ">" * n
        with jax_mlir.make_ir_context():
            m = ir.Module.parse(f"module {{ func.func @main(%a: {t}) -> {t} {{ return %a : {t} }} }}")
            data = stablehlo.serialize_portable_artifact(m, stablehlo.get_minimum_version())
        open(out, "wb").write(data)
    threading.stack_size(1 << 30)
    t = threading.Thread(target=build); t.start(); t.join()
""")

_READ = textwrap.dedent("""
    import sys
    from fxla.runtime.artifact import parse_program
    try:
        parse_program(open(sys.argv[1], "rb").read())
    except Exception as err:
        print(type(err).__name__, err)
    else:
        print("read")
""")


@pytest.mark.slow
def test_deeply_nested_bytecode_is_refused_not_a_crash(tmp_path):
    # a 50,000-deep tuple type in bytecode (what fxla.export writes) crashed MLIR's reader on the main stack
    path = tmp_path / "deep.mlirbc"
    subprocess.run([sys.executable, "-c", _DEEP_BYTECODE, "50000", str(path)], check=True, timeout=300, cwd=ROOT)
    assert path.read_bytes().startswith(mlir.BYTECODE_MAGIC)
    proc = subprocess.run([sys.executable, "-c", _READ, str(path)], capture_output=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert proc.stdout.decode().startswith("NestingError"), proc.stdout


def test_program_text_is_refused_before_mlir_reads_it():
    from fxla.runtime.artifact import parse_program
    with pytest.raises(ValueError, match="not MLIR bytecode"):
        parse_program(deep_type(50000).encode())      # text: MLIR's parser would have crashed on it
    with pytest.raises(ValueError, match="not MLIR bytecode"):
        parse_program(b"module {\n}\n")


# ---------------------------------------------------------------------------------------------------------------
# item 15: bytes that are not UTF-8, attributes of other element types, regions where none belong
# ---------------------------------------------------------------------------------------------------------------
def _run(capsys, tmp_path, data: bytes, *args):
    path = tmp_path / "in.mlir"
    path.write_bytes(data)
    rc = opt.main([str(path), *args])
    out, err = capsys.readouterr()
    return rc, out, err, str(path)


def test_non_utf8_input_is_a_diagnostic(capsys, tmp_path):
    rc, out, err, path = _run(capsys, tmp_path, b"func.func @f() {\n  // caf\xe9\n  return\n}\n")
    assert rc == 1 and out == ""
    assert err.strip() == f"{path}:2:9: error: byte 0xe9 is not valid UTF-8 (invalid continuation byte); " \
                          "MLIR text must be UTF-8"


@pytest.mark.slow
def test_non_utf8_stdin_is_a_diagnostic(tmp_path):
    code = "import sys; from fxla.tools.opt import main; sys.exit(main([]))"
    proc = subprocess.run([sys.executable, "-c", code], input=b"\xff\xfe", capture_output=True, timeout=120,
                          cwd=ROOT)
    assert proc.returncode == 1 and proc.stderr.decode().startswith("<stdin>:1:1: error: byte 0xff")


PERMUTE = """func.func @f(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %0 = "fxla.permute"(%a) {dims = DIMS} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}
"""


@pytest.mark.parametrize("dims", ["array<bf16: 1.0, 0.0>", "array<f16>", "array<f8E4M3FN>", "array<f8E5M2: 1.0>",
                                  "array<i32: 1, 0>", "5 : i64", "100000000000000000000000000 : i128"])
def test_attribute_of_another_kind_is_a_diagnostic(capsys, tmp_path, dims):
    rc, out, err, path = _run(capsys, tmp_path, PERMUTE.replace("DIMS", dims).encode(),
                              "--convert-fxla-to-stablehlo")
    assert rc == 1 and "Traceback" not in err
    assert err.startswith(f"{path}:2:8: error: 'fxla.permute' op attribute 'dims' must be array<i64>, got ")


@pytest.mark.parametrize("sizes", ["array<i64: 1, 0>", "array<bf16: 1.0, 0.0>", "1 : i32"])
def test_operand_segment_sizes_of_another_kind_is_a_diagnostic(sizes):
    from fxla.dialects.fxla import verify_fxla
    from fxla.dialects.fxla.ops import BY_NAME
    name = next(n for n, d in sorted(BY_NAME.items()) if d.has_optional)
    with mlir.fxla_context():
        module = mlir.ir.Module.parse(
            f'func.func @f(%a: tensor<2xf32>) {{\n  "{name}"(%a) {{operandSegmentSizes = {sizes}}} : '
            '(tensor<2xf32>) -> tensor<2xf32>\n  return\n}\n')
        found = verify_fxla(module.operation)
    assert len(found) == 1 and "operandSegmentSizes' must be array<i32>" in found[0].message


def test_fxla_op_with_a_region_is_a_diagnostic(capsys, tmp_path):
    text = ('func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n  %0 = "fxla.neg"(%a) ({\n  }) : '
            "(tensor<4xf32>) -> tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n")
    rc, _, err, path = _run(capsys, tmp_path, text.encode())
    assert rc == 1 and err.strip() == f"{path}:2:8: error: 'fxla.neg' op expects no regions, but has 1"


@pytest.mark.parametrize("depth", [1, 3])
@pytest.mark.slow
def test_passes_over_unregistered_ops_with_regions_are_refused(tmp_path, depth):
    # MLIR's inliner dereferenced the missing dialect of such an op: SIGSEGV at any depth
    path = tmp_path / "x.mlir"
    path.write_text(deep_regions(depth, registered=False))
    rc, out, err = run_opt_process(path, "--inline")
    assert rc == 1, (rc, err[-2000:])
    assert "x.mlir:2:1: error: 'x.op' op is not in a registered dialect and has regions" in err
    rc, out, err = run_opt_process(path)          # no passes: printed as parsed
    assert rc == 0 and out.count('"x.op"') == depth


def test_cpp_exception_in_a_dialect_parser_is_a_diagnostic(capsys, tmp_path):
    # fuzz finding (utils/fuzz_opt.py --seed 2 --only 1988): StableHLO's dim_numbers parser asks SmallVector for
    # 2**63 entries; the bindings raised ValueError out of fxla-opt
    text = ("func.func @f(%x: tensor<2x3x8x8xf32>, %k: tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32> {\n"
            "  %0 = stablehlo.convolution(%x, %k) dim_numbers = [b, f, 0, 1]x[o, i, 0x7fffffffffffffff, 1]->"
            "[b, f, 0, 1], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], rhs_dilate = [1, 1]} "
            "{batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x3x8x8xf32>, "
            "tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32>\n  return %0 : tensor<2x4x6x6xf32>\n}\n")
    rc, out, err, path = _run(capsys, tmp_path, text.encode())
    assert rc == 1 and out == ""
    assert err.startswith(f"{path}: error: MLIR's parser failed on the input (ValueError: SmallVector")
