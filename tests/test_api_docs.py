"""The public API: ``import fxla`` stays light (no torch for MLIR-only tools), every public name is documented,
and docs/api.md is what ``python -m fxla.tools.apidoc`` generates."""
import json
import subprocess
import sys

import pytest


def run_python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("imports", ["import fxla.tools.opt", "import fxla.dialects",
                                     "import fxla.dialects.fxla, fxla.lowering.passes",
                                     "import fxla; fxla.FxlaError, fxla.LoweringError"])
def test_mlir_only_imports_do_not_import_torch(imports):
    out = run_python(f"import sys\n{imports}\nprint(sorted(m for m in sys.modules if m.split('.')[0] == 'torch'))")
    assert out.strip() == "[]"


def test_lazy_names_resolve_as_eager_imports_did():
    # importing the submodules fxla.compile / fxla.export first must not shadow the functions of the same name
    out = run_python(
        "import json, types\n"
        "from fxla.compile import CompiledModule\n"
        "import fxla.export\n"
        "import fxla\n"
        "from fxla.lowering.registry import RULES as table\n"
        "import fxla.lowering\n"
        "ns = {}\n"
        "exec('from fxla import *', ns)\n"
        "print(json.dumps({'compile': type(fxla.compile).__name__, 'export': type(fxla.export).__name__,\n"
        "    'star': sorted(k for k in ns if not k.startswith('__')), 'all': sorted(fxla.__all__),\n"
        "    'rules': len(fxla.lowering.RULES) > 100 and fxla.lowering.RULES is table,\n"
        "    'stages': [type(getattr(fxla, s)).__name__ for s in ('frontend', 'lowering', 'dialects', 'runtime')],\n"
        "    'cm': fxla.CompiledModule is CompiledModule}))")
    got = json.loads(out)
    assert got["compile"] == got["export"] == "function"
    assert got["star"] == got["all"]
    assert got["rules"] and got["cm"]
    assert got["stages"] == ["module"] * 4
    import fxla
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        fxla.nope
