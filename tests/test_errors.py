"""fxla's error object (layer 0, fxla.base.errors): parts kept as fields, the house format rendered from them,
legacy one-string errors split into the same fields, context lines placed before ``fix:``."""
import pickle

import pytest

from fxla.base.errors import FxlaError, format_message, split_message
from fxla.base.source import SourceLocation

LOC = SourceLocation("model.py", 12, 9, "    y = x.nonzero()", "block.0")


def test_fields_round_trip():
    err = FxlaError("cannot trace it", where=LOC, why="it depends on data", fix="do not")
    assert (err.what, err.where, err.why, err.fix) == ("cannot trace it", LOC, "it depends on data", "do not")
    assert str(err) == ("cannot trace it\n"
                        "  at model.py:12:9 (in module 'block.0')\n"
                        "      y = x.nonzero()\n"
                        "it depends on data\n"
                        "fix: do not")
    assert str(err) == format_message("cannot trace it", LOC, "it depends on data", "do not")
    assert err.args == (str(err),)


@pytest.mark.parametrize("kwargs", [dict(), dict(fix="f"), dict(why="w"), dict(where=LOC, why="", fix=""),
                                    dict(where=LOC, locations=[LOC], why="w", fix="f"), dict(where=None, fix="f")])
def test_same_text_as_format_message(kwargs):
    loc = kwargs.get("where")
    expected = format_message("what", loc, kwargs.get("why"), kwargs.get("fix"), kwargs.get("locations", ()))
    assert str(FxlaError("what", **kwargs)) == expected


def test_assigning_a_part_re_renders():
    err = FxlaError("what", why="why", fix="old")
    err.fix = "new"
    assert str(err).endswith("\nfix: new") and err.args == (str(err),)


@pytest.mark.parametrize("text", [
    "just one line",
    "what\nfix: do this",
    "what\nwhy: because\nfix: do this",
    "what\n  at f.py:1:2\n      x = y\nsecond why line\nfix: a\nfix: b",
    "what\n  at f.py:1:2\n  at g.py:3:4 (in module 'm')\n      z\nwhy",
    "what\n",
    "",
    "\nfix: only a fix",
    "what\nfix:without space",
])
def test_legacy_string_is_split_losslessly(text):
    err = FxlaError(text)
    assert str(err) == text and err.args == (text,)
    assert split_message(text) == (err.what, err.where, err.why, err.fix)


def test_legacy_string_fields():
    err = FxlaError("cannot use 'tpu'\n  at m.py:3:1\n      run()\nwhy: none here\nfix: pass 'cpu'")
    assert err.what == "cannot use 'tpu'"
    assert err.where == "  at m.py:3:1\n      run()"
    assert err.why == "why: none here"
    assert err.fix == "pass 'cpu'"
    assert FxlaError("no fix here").fix is None and FxlaError("no fix here").why is None


def test_non_string_arguments_keep_exception_behaviour():
    assert str(FxlaError()) == "" and FxlaError().what == ""
    assert str(FxlaError(3)) == "3"


@pytest.mark.parametrize("err", [FxlaError("what", why="why", fix="do it"), FxlaError("what\nwhy\nfix: do it")])
def test_add_context_goes_before_fix(err):
    assert err.add_context("while compiling Net") is err
    err.add_context("second note")
    assert str(err) == "what\nwhy\nwhile compiling Net\nsecond note\nfix: do it"
    assert err.context == ("while compiling Net", "second note") and err.fix == "do it"


def test_add_context_without_fix_goes_last():
    err = FxlaError("what", where=LOC)
    err.add_context("note")
    assert str(err).splitlines()[-1] == "note"


def test_subclass_with_own_init_sets_fields():
    from fxla.lowering import UnsupportedOpError
    err = UnsupportedOpError([("aten.foo", LOC), ("aten.bar", None)])
    assert err.what.startswith("fxla cannot lower 2 ops of this program:\n- aten.foo\n")
    assert err.fix.startswith("rewrite them with supported ops")
    err.add_context("while compiling Net")
    assert str(err).splitlines()[-2:] == ["while compiling Net", "fix: " + err.fix]


def test_pickle_keeps_the_parts():
    err = FxlaError("what", where=LOC, why="why", fix="fix")
    err.add_context("note")
    back = pickle.loads(pickle.dumps(err))
    assert str(back) == str(err) and back.where == LOC and back.context == ("note",) and back.fix == "fix"


def test_public_names_are_layer_0():
    import fxla
    import fxla.errors
    import fxla.frontend.source
    import fxla.base.source
    assert fxla.FxlaError is fxla.errors.FxlaError is FxlaError
    assert fxla.errors.format_message is format_message
    assert fxla.frontend.source.SourceLocation is SourceLocation
    assert fxla.frontend.source.user_frame_location is fxla.base.source.user_frame_location


def test_every_stage_error_derives_from_the_base():
    import fxla.dialects.fxla as fxla_dialect
    import fxla.dialects.mlir as mlir
    import fxla.frontend as frontend
    import fxla.lowering as lowering
    import fxla.runtime as runtime
    from fxla.frontend.errors import DataDependentError
    stage_errors = [frontend.TraceError, frontend.GraphError, frontend.InterpreterError, frontend.PassError,
                    frontend.SerializationError, frontend.AutocastError, frontend.SpecializationError,
                    DataDependentError, fxla_dialect.VerificationError, mlir.NestingError,
                    lowering.LoweringError, lowering.UnsupportedOpError, lowering.ConversionError,
                    lowering.PassFailure, lowering.PipelineError,
                    runtime.DeviceError, runtime.InputError, runtime.CacheError, runtime.CompileError,
                    runtime.ShardingError, runtime.ArtifactError, runtime.InteropError]
    for cls in stage_errors:
        assert issubclass(cls, FxlaError), cls
    for module in (frontend, lowering, runtime):
        for name in module.__all__:
            value = getattr(module, name)
            if isinstance(value, type) and issubclass(value, Exception) and name.endswith("Error"):
                assert issubclass(value, FxlaError), f"{module.__name__}.{name}"
