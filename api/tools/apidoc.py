"""Render the API reference from the code: ``python -m fxla.tools.apidoc > docs/api.md``.

The public API is what each package lists in ``__all__``; every entry is rendered from its signature
(:mod:`inspect`) and docstring, the error hierarchy from ``FxlaError.__subclasses__()`` (with the functions
whose code constructs each error, found in fxla's source), the CLI tools from their argparse ``--help``.
Constants are described by the ``#:`` comment above their assignment.  ``tests/test_api_docs.py`` checks that
docs/api.md is up to date and that every public name has a description.
"""
from __future__ import annotations

import ast
import enum
import importlib
import inspect
import os
import pathlib
import re
import sys
import types
from typing import Dict, List, Optional, Tuple

#: (package, title, what the section is for); the order of the reference
SECTIONS: Tuple[Tuple[str, str, str], ...] = (
    ("fxla", "fxla — the top level", "What most programs use: compile, trace, export/load, sharding, errors."),
    ("fxla.frontend", "fxla.frontend — tracing and the graph IR",
     "The FX-style tracer, the graph (`Graph`, `Node`, `GraphModule`), interpreters and shape propagation."),
    ("fxla.frontend.passes", "fxla.frontend.passes — graph passes", "Rewrites over GraphModules."),
    ("fxla.lowering", "fxla.lowering — graph → fxla → StableHLO",
     "Lowering entry points, the rule table and its registration decorator, the pass pipeline."),
    ("fxla.lowering.patterns", "fxla.lowering.patterns — fxla → StableHLO patterns",
     "The rewrite-pattern table and the builder patterns use; a new fxla op needs one pattern here."),
    ("fxla.dialects.fxla", "fxla.dialects.fxla — the op table API",
     "The schema of the `fxla` dialect and its verifier; the ops themselves are listed in "
     "[dialect.md](dialect.md)."),
    ("fxla.dialects.mlir", "fxla.dialects.mlir — the MLIR binding",
     "The one module that binds jaxlib's MLIR Python bindings."),
    ("fxla.runtime", "fxla.runtime — devices, buffers, executables",
     "PJRT devices, device buffers, compiled executables, the on-disk cache, sharding, JAX interop."),
    ("fxla.testing", "fxla.testing — FileCheck cases for lowering rules",
     "What the Python lit tests of a lowering rule are written with (`lit_tests/TorchToFxla/`; the tutorial's "
     "new-op walkthrough)."),
)
#: extra modules whose names are documented though they have no ``__all__`` of their own
EXTRA: Tuple[Tuple[str, str], ...] = (("fxla.backend", "fxla_backend"),)
#: the command-line tools: (command, module with ``_parser()``)
TOOLS: Tuple[Tuple[str, str], ...] = (("fxla-dump", "fxla.tools.dump"), ("fxla-explain", "fxla.tools.explain"),
                                      ("fxla-opt", "fxla.tools.opt"))
#: public exceptions that deliberately do not derive from FxlaError, with why
NOT_FXLA_ERRORS: Dict[str, str] = {
    "fxla.dialects.fxla.InferError": "internal to type inference: the verifier reports it as a "
                                     "`VerificationError` diagnostic and lowering as a `LoweringError`",
}
#: the module whose loggers the "Loggers" section lists: its ``__all__`` (``logging.Logger`` constants) and its
#: docstring's table (logger, level, what it records)
LOGGERS_MODULE = "fxla.base.logs"
#: the packages whose source files are searched for the places that construct each error
SOURCE_PACKAGES = ("fxla", "fxla.frontend", "fxla.dialects", "fxla.lowering", "fxla.runtime")
HELP_COLUMNS = "100"


# ---------------------------------------------------------------------------------------------------- text

def anchor(heading: str) -> str:
    """GitHub's anchor for a Markdown heading."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


_TABLE_BORDER = re.compile(r"^\s*=+(\s+=+)+\s*$")


def rst_to_md(text: str) -> str:
    """The reStructuredText of docstrings, as Markdown: roles and ````literals```` become code spans; simple
    tables (``===  ===`` borders) are kept verbatim in a text block."""
    lines, out, i = text.split("\n"), [], 0
    while i < len(lines):
        if _TABLE_BORDER.match(lines[i]):
            borders = [j for j in range(i, len(lines)) if _TABLE_BORDER.match(lines[j])][:3]
            if len(borders) == 3:
                indent = lines[i][:len(lines[i]) - len(lines[i].lstrip())]
                out.append("\n".join([indent + "```text", *lines[i:borders[2] + 1], indent + "```"]))
                i = borders[2] + 1
                continue
        start = i
        while i < len(lines) and not _TABLE_BORDER.match(lines[i]):
            i += 1
        out.append(_inline_rst("\n".join(lines[start:i])))
    return "\n".join(out)


def _inline_rst(text: str) -> str:
    text = re.sub(r":(?:class|func|mod|meth|attr|data|exc|obj):`~?([^`]+)`",
                  lambda m: f"`{m.group(1).split('.')[-1] if m.group(0).count('~') else m.group(1)}`", text)
    text = re.sub(r"``((?:(?!\n\s*\n).)+?)``", r"`\1`", text, flags=re.S)
    text = text.replace("`\\ s", "`s").replace("\\\\", "\\")
    text = re.sub(r"(\S)::\n", r"\1:\n", text)        # "Example::" introduces an indented literal block
    text = re.sub(r"\n::\n", "\n", text)
    return text


def docstring(obj) -> str:
    """The object's own docstring (not one inherited from a base class), cleaned; '' when it has none."""
    doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else getattr(obj, "__doc__", None)
    if not isinstance(doc, str) or not doc.strip():
        return ""
    return inspect.cleandoc(doc)


class _Raw:
    """An annotation or default printed verbatim."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _clean_repr(value) -> str:
    text = repr(value)
    text = re.sub(r" at 0x[0-9a-fA-F]+", "", text)
    return text


def signature(obj, bound: bool = False) -> Optional[str]:
    """``(a, b=1, *, c: int = 2) -> str`` with annotations as written in the source; None if unavailable.

    ``bound``: leave out the first parameter (``self`` / ``cls`` of a method).  A class shows its own
    ``__init__``'s parameters when an fxla class defines one (not ``__new__``'s, not ``-> None``).
    """
    if inspect.isclass(obj):
        init = next((c.__dict__["__init__"] for c in obj.__mro__
                     if "__init__" in c.__dict__ and c.__module__.split(".")[0] == "fxla"), None)
        if init is not None:
            text = signature(init, bound=True)
            return text[:-len(" -> None")] if text and text.endswith(" -> None") else text
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    params = []
    for i, p in enumerate(sig.parameters.values()):
        if bound and i == 0:
            continue
        changes = {}
        if p.annotation is not p.empty:
            changes["annotation"] = _Raw(p.annotation if isinstance(p.annotation, str)
                                         else inspect.formatannotation(p.annotation))
        if p.default is not p.empty:
            changes["default"] = _Raw(_clean_repr(p.default))
        params.append(p.replace(**changes))
    ret = sig.return_annotation
    if ret is not sig.empty:
        ret = _Raw(ret if isinstance(ret, str) else inspect.formatannotation(ret))
    text = str(inspect.Signature(params, return_annotation=ret, __validate_parameters__=False))
    return text[:-len(" -> None")] if inspect.isclass(obj) and text.endswith(" -> None") else text


def doc_comment(module_names: List[str], name: str) -> str:
    """The ``#:`` comment lines right above ``name = ...`` / ``name: T = ...`` in the first module that has one."""
    pattern = re.compile(rf"^((?:[ \t]*#:.*\n)+)[ \t]*{re.escape(name)}\s*(?::[^=\n]*)?=", re.M)
    for module_name in module_names:
        module = sys.modules.get(module_name)
        path = getattr(module, "__file__", None)
        if not path or not path.endswith(".py"):
            continue
        match = pattern.search(pathlib.Path(path).read_text(encoding="utf-8"))
        if match:
            return " ".join(line.strip()[2:].strip() for line in match.group(1).splitlines())
    return ""


# ------------------------------------------------------------------------------------------- collecting

def import_everything() -> None:
    """Import every public package and tool, and every fxla source module, so all names and errors exist."""
    for package, _, _ in SECTIONS:
        module = importlib.import_module(package)
        for name in getattr(module, "__all__", ()):
            getattr(module, name)                              # resolves lazy names
    for module, _ in EXTRA:
        importlib.import_module(module)
    for _, module in TOOLS:
        importlib.import_module(module)
    for module_name, _ in source_files():
        importlib.import_module(module_name)


def source_files() -> List[Tuple[str, pathlib.Path]]:
    """(module name, path) of every tracked-looking ``.py`` file of fxla's packages, sorted."""
    found = []
    for package in SOURCE_PACKAGES:
        root = pathlib.Path(importlib.import_module(package).__path__[0])
        for path in sorted(root.rglob("*.py")):
            rel = path.relative_to(root).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            if any(p.startswith((".", "_")) and p != "__init__" for p in rel.parts) or "__pycache__" in rel.parts:
                continue
            name = ".".join([package, *parts])
            if package == "fxla" and parts and parts[0] in ("frontend", "dialects", "lowering", "runtime"):
                continue
            found.append((name, path))
    return sorted(set(found))


def constructions(classes: Dict[str, type]) -> Dict[type, List[str]]:
    """class -> sorted names of the modules whose code calls it (``raise X(...)``, ``err = X(...)``).

    Modules, not functions: the reference should not go stale with every renamed private helper."""
    sites: Dict[type, set] = {cls: set() for cls in classes.values()}
    for module_name, path in source_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        module = sys.modules.get(module_name)

        def visit(node, scope):
            for child in ast.iter_child_nodes(node):
                inner = scope
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    inner = scope + [child.name]
                if isinstance(child, ast.Call):
                    func = child.func
                    called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(
                        func, ast.Attribute) else None
                    cls = classes.get(called)
                    if cls is not None and module is not None and _resolves(module, func, cls):
                        sites[cls].add(module_name)
                visit(child, inner)

        visit(tree, [])
    return {cls: sorted(s) for cls, s in sites.items()}


def _resolves(module, func, cls) -> bool:
    """Whether the called name in ``module`` is (probably) ``cls``: a module-level binding of that name, or an
    attribute access spelled like it."""
    if isinstance(func, ast.Name):
        return vars(module).get(func.id) is cls
    return True


def public_names() -> Dict[int, str]:
    """id(object) -> the first public dotted name it has, in the order of SECTIONS."""
    names: Dict[int, str] = {}
    for package, _, _ in SECTIONS:
        module = sys.modules[package]
        for name in module.__all__:
            names.setdefault(id(getattr(module, name)), f"{package}.{name}")
    return names


def all_errors(base) -> List[Tuple[int, type]]:
    """(depth, class) for every subclass of ``base`` defined in fxla, depth first, sorted by name."""
    out = []

    def walk(cls, depth):
        for sub in sorted(cls.__subclasses__(), key=lambda c: (c.__name__, c.__module__)):
            if sub.__module__.split(".")[0] == "fxla":
                out.append((depth, sub))
                walk(sub, depth + 1)

    walk(base, 0)
    return out


# ----------------------------------------------------------------------------------------------- rendering

def homes() -> Dict[int, str]:
    """id(function or class) -> the one public name under which it is documented: the top level's if ``fxla``
    exports it, else the exporting package that defines it (longest prefix of its ``__module__``)."""
    found: Dict[int, List[str]] = {}
    objects: Dict[int, object] = {}
    for package, _, _ in SECTIONS:
        for name in sys.modules[package].__all__:
            obj = getattr(sys.modules[package], name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                found.setdefault(id(obj), []).append(package)
                objects[id(obj)] = obj
    home = {}
    for key, packages in found.items():
        obj = objects[key]
        module = getattr(obj, "__module__", "") or ""
        owners = [p for p in packages if module == p or module.startswith(p + ".")]
        package = "fxla" if "fxla" in packages else max(owners, key=len) if owners else packages[0]
        home[key] = f"{package}.{obj.__name__}"
    return home


class Renderer:
    def __init__(self):
        self.lines: List[str] = []
        self.home: Dict[int, str] = homes()      # id(object) -> its documented public name
        self.elsewhere: List[str] = []           # "also exported" entries of the current section

    def add(self, *lines: str) -> None:
        self.lines.extend(lines)

    def text(self, doc: str) -> None:
        if doc:
            self.add(rst_to_md(doc), "")

    def heading(self, level: int, text: str) -> str:
        self.add("#" * level + " " + text, "")
        return anchor(text)

    def entry(self, package: str, name: str, obj) -> None:
        qualified = f"{package}.{name}"
        home = self.home.get(id(obj), qualified)
        if home != qualified:
            self.elsewhere.append(f"[`{name}`](#{anchor(f'`{home}`')}) (`{home}`)")
            return
        self.add("")
        self.heading(3, f"`{qualified}`")
        if isinstance(obj, types.ModuleType):
            self.module_entry(obj)
        elif inspect.isclass(obj):
            self.class_entry(qualified, obj)
        elif callable(obj):
            self.function_entry(qualified, obj)
        else:
            self.constant_entry(package, name, obj)

    def module_entry(self, module) -> None:
        if module.__name__.startswith("fxla"):
            own = [s for s in SECTIONS if s[0] == module.__name__]
            self.add(f"Module `{module.__name__}`" + (f" (see [below](#{anchor(own[0][1])}))." if own else "."), "")
            if not own:
                self.text(docstring(module))
        else:
            self.add(f"Re-export of the module `{module.__name__}` (jaxlib's MLIR Python bindings).", "")

    def function_entry(self, qualified: str, fn) -> None:
        sig = signature(fn)
        self.add("```python", f"{qualified}{sig or '(...)'}", "```", "")
        self.text(docstring(fn))

    def class_entry(self, qualified: str, cls) -> None:
        kind = "exception" if issubclass(cls, BaseException) else "enum" if issubclass(cls, enum.Enum) else "class"
        sig = None if kind != "class" else signature(cls)
        bases = [b for b in cls.__bases__ if b is not object]
        self.add("```python", f"{kind} {qualified}{sig or ''}", "```", "")
        if bases:
            self.add("Bases: " + ", ".join(self.type_link(b) for b in bases) + ".", "")
        self.text(docstring(cls))
        if kind == "enum":
            self.add("Members: " + ", ".join(f"`{m.name}`" for m in cls) + ".", "")
            return
        if kind == "exception":
            return
        attributes = list(class_attributes(cls))
        if attributes:
            self.add("Attributes:", "")
            for name, annotation, doc in attributes:
                head = f"* **`{name}`**" + (f": `{annotation}`" if annotation else "")
                self.add(f"{head} — {rst_to_md(doc)}" if doc else head)
            self.add("")
        members = list(class_members(cls))
        if members:
            self.add("Members:", "")
            for member, what, value in members:
                self.member(cls, member, what, value)

    def type_link(self, cls) -> str:
        home = self.home.get(id(cls))
        if home:
            return f"[`{home}`](#{anchor(f'`{home}`')})"
        return f"`{_type_name(cls)}`"

    def member(self, cls, name: str, what: str, value) -> None:
        if what == "property" and name == "__call__":   # a call routed through a property (CompiledModule)
            head = "* **`__call__(*args, **kwargs)`**"
        elif what == "property":
            head = f"* **`{name}`** (property)"
        else:
            sig = signature(value, bound=what != "staticmethod")
            head = f"* **`{name}{sig or '(...)'}`**" + (f" ({what})" if what != "method" else "")
        doc = member_doc(cls, name, value)
        if not doc:
            self.add(head)
            return
        body = rst_to_md(doc).splitlines()
        self.add(f"{head} — {body[0]}" if body else head)
        self.add(*[("  " + line) if line.strip() else "" for line in body[1:]])

    def constant_entry(self, package: str, name: str, value) -> None:
        shown = ""
        if isinstance(value, (str, int, float)) or (isinstance(value, tuple) and all(
                isinstance(v, str) for v in value) and len(repr(value)) < 200):
            shown = f" = {value!r}"
        self.add("```python", f"{package}.{name}: {type(value).__name__}{shown}", "```", "")
        modules = [m for m in sorted(sys.modules) if m == package or m.startswith(package + ".")]
        self.text(rst_to_md(doc_comment(modules, name)))


def member_doc(cls, name: str, value) -> str:
    """A member's docstring, or that of the member it overrides in an fxla base class (not ``object``'s)."""
    for owner in cls.__mro__:
        if owner.__module__.split(".")[0] != "fxla" or name not in owner.__dict__:
            continue
        member = owner.__dict__[name]
        # a property's own doc: its getter's, or the doc= it was given (property(attrgetter(...), doc=...))
        member = member if isinstance(member, property) else getattr(member, "__func__", member)
        doc = docstring(member) if member is not None else ""
        if doc:
            return doc
    return ""


def class_attributes(cls):
    """(name, annotation, doc) of the public attributes ``cls`` declares in its own body with a type annotation
    (dataclass fields; instance attributes declared ``name: T``), in declaration order.  The doc is the ``#:``
    comment lines right above the declaration, else a ``#`` comment at the end of its line."""
    annotations = cls.__dict__.get("__annotations__", {})
    names = [n for n, a in annotations.items() if not n.startswith("_") and "ClassVar" not in str(a)]
    if not names:
        return
    try:
        lines, _ = inspect.getsourcelines(cls)
    except (OSError, TypeError):
        lines = []
    indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0      # (a class defined in a function)
    lines = [line[indent:] for line in lines]
    docs: Dict[str, str] = {}
    for i, line in enumerate(lines):
        match = _DECLARATION.match(line)
        if not match or match.group(1) not in names or match.group(1) in docs:
            continue
        above, j = [], i - 1
        while j >= 0 and lines[j].strip().startswith("#:"):
            above.insert(0, lines[j].strip()[2:].strip())
            j -= 1
        docs[match.group(1)] = " ".join(above) or (match.group(2) or "").strip()
    for name in names:
        annotation = annotations[name]
        annotation = getattr(annotation, "__forward_arg__", annotation)       # ForwardRef("Node"): its text
        yield name, annotation if isinstance(annotation, str) else inspect.formatannotation(annotation), \
            docs.get(name, "")


#: an annotated attribute in a class body (one indentation level), with its end-of-line comment
_DECLARATION = re.compile(r"^    ([A-Za-z]\w*)\s*:.*?(?:\s{2}#(?!:)\s?(.*))?$")


def class_members(cls):
    """(name, kind, value) of the public members ``cls`` defines itself, in definition order (plus
    ``__call__``)."""
    for name, value in cls.__dict__.items():
        if name.startswith("_") and name != "__call__":
            continue
        if isinstance(value, property):
            yield name, "property", value
        elif isinstance(value, classmethod):
            yield name, "classmethod", value.__func__
        elif isinstance(value, staticmethod):
            yield name, "staticmethod", value.__func__
        elif inspect.isfunction(value):
            yield name, "method", value


def _type_name(cls) -> str:
    """The shortest importable spelling of a class: ``torch.nn.Module``, not ``torch.nn.modules.module.Module``."""
    module = cls.__module__
    if module == "builtins":
        return cls.__qualname__
    parts = module.split(".")
    for i in range(1, len(parts) + 1):
        prefix = ".".join(parts[:i])
        if getattr(sys.modules.get(prefix), cls.__qualname__, None) is cls:
            return f"{prefix}.{cls.__qualname__}"
    return f"{module}.{cls.__qualname__}"


def simple_table(doc: str) -> List[List[str]]:
    """The rows of the first reStructuredText simple table in ``doc`` (``===  ===`` borders): the header row
    first, a line whose first column is blank continuing the row above; ``[]`` when ``doc`` has none."""
    lines = doc.split("\n")
    borders = [i for i, line in enumerate(lines) if _TABLE_BORDER.match(line)][:3]
    if len(borders) < 3:
        return []
    starts = [m.start() for m in re.finditer(r"=+", lines[borders[0]])]
    cut = lambda line: [line[a:b].strip() for a, b in zip(starts, starts[1:] + [None])]    # noqa: E731
    rows = [cut(lines[i]) for i in range(borders[0] + 1, borders[1])]
    for line in lines[borders[1] + 1:borders[2]]:
        cells = cut(line)
        if cells[0] or not rows[1:]:
            rows.append(cells)
        else:
            rows[-1] = [" ".join(filter(None, (a, b))) for a, b in zip(rows[-1], cells)]
    return rows


def logger_rows() -> List[Tuple[str, str, str]]:
    """``(logger name, level, what it records)`` of every logger :data:`LOGGERS_MODULE` exports but the root
    ``fxla`` (which only carries the NullHandler): the level and records from the module docstring's table, or,
    for a logger the table leaves out, the ``#:`` comment of its constant."""
    import logging

    module = importlib.import_module(LOGGERS_MODULE)
    rows = simple_table(docstring(module))
    table = {row[0].strip("`"): row[1:] for row in rows[1:]}
    out = []
    for name in module.__all__:
        logger = getattr(module, name)
        if not isinstance(logger, logging.Logger) or logger.name == "fxla":
            continue
        level, records = table.get(logger.name) or ("", doc_comment([LOGGERS_MODULE], name))
        out.append((logger.name, level, records))
    return out


def first_paragraph(doc: str) -> str:
    return " ".join(rst_to_md(doc).split("\n\n")[0].split())


def help_text(module_name: str) -> str:
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_COLUMNS                 # argparse wraps at the terminal width
    try:
        return importlib.import_module(module_name)._parser().format_help()
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved


def render_markdown() -> str:
    import_everything()
    import fxla
    from fxla.errors import FxlaError

    out = Renderer()
    out.add("# fxla API reference", "",
            "Generated from the code by `python -m fxla.tools.apidoc` (`make docs`); do not edit by hand.", "",
            "The public API is what each package lists in `__all__`: the entries below are their signatures and "
            "docstrings.  `import fxla` is cheap — the top-level names are imported from their stage on first "
            "use — and the stages import one way: `fxla.frontend` → `fxla.lowering` (with `fxla.dialects`) → "
            "`fxla.runtime`.  Guides: [tutorial.md](tutorial.md), [tracing.md](tracing.md), "
            "[runtime.md](runtime.md); the op set: [dialect.md](dialect.md), [ops.md](ops.md).", "")
    out.add("## Contents", "")
    for package, title, _ in SECTIONS:
        out.add(f"* [{title}](#{anchor(title)})")
    extra = ["torch.compile backend", "Loggers", "Errors", "Command-line tools"]
    out.add(*[f"* [{t}](#{anchor(t)})" for t in extra], "")

    for package, title, about in SECTIONS:
        module = sys.modules[package]
        out.heading(2, title)
        out.add(about, "")
        out.text(docstring(module))
        for name in module.__all__:
            out.entry(package, name, getattr(module, name))
        out.add("")
        if out.elsewhere:
            out.add("Also exported here, documented under their main name: " + ", ".join(out.elsewhere) + ".", "")
            out.elsewhere = []

    out.heading(2, "torch.compile backend")
    for module_name, name in EXTRA:
        module = sys.modules[module_name]
        out.text(docstring(module))
        out.entry(module_name, name, getattr(module, name))
    out.add("")

    out.heading(2, "Loggers")
    out.add("fxla reports what it compiles through the standard `logging` module, one logger per kind of "
            f"record, all under `fxla` (declared in `{LOGGERS_MODULE}`; how to turn them on and what the records "
            "look like: [debugging.md](debugging.md)).  `dump_dir=` (`fxla.compile`, or the backend's "
            "`options={\"dump_dir\": ...}`) writes every stage of every compiled graph to a folder instead "
            "(`fxla.dumps`, same guide).", "")
    out.add("| logger | level | records |", "|---|---|---|")
    for name, level, records in logger_rows():
        out.add(f"| `{name}` | {level} | {rst_to_md(records)} |")
    out.add("", "They are silent until the application configures logging (`fxla` carries a `logging.NullHandler` "
            "and no level of its own): `logging.basicConfig(level=logging.INFO)`, or "
            "`logging.getLogger(\"fxla.compile\").setLevel(logging.INFO)` plus a handler, turns records on.", "")

    out.heading(2, "Errors")
    out.text(docstring(sys.modules["fxla.errors"]))
    out.add("Every error fxla raises derives from `fxla.FxlaError`; the tree below lists each class, where it is "
            "exported, what it means and the functions whose code raises (constructs) it.", "")
    errors = all_errors(FxlaError)
    by_name = {cls.__name__: cls for _, cls in errors}
    by_name[FxlaError.__name__] = FxlaError
    sites = constructions(by_name)
    names = public_names()
    for depth, cls in [(-1, FxlaError)] + errors:
        public = names.get(id(cls))
        where = f"[`{public}`](#{anchor(f'`{public}`')})" if public else f"`{cls.__module__}.{cls.__name__}` (not exported)"
        line = "  " * (depth + 1) + f"* **{cls.__name__}** — {where}: {first_paragraph(docstring(cls))}"
        if sites.get(cls):
            line += " Raised in: " + ", ".join(f"`{s}`" for s in sites[cls]) + "."
        out.add(line)
    out.add("")
    if NOT_FXLA_ERRORS:
        out.add("Public exceptions that are not `FxlaError`s:", "")
        for qualified, why in NOT_FXLA_ERRORS.items():
            out.add(f"* `{qualified}` — {why}.")
        out.add("")

    out.heading(2, "Command-line tools")
    out.add("Installed as console scripts (see `[project.scripts]` in pyproject.toml).", "")
    for command, module_name in TOOLS:
        out.heading(3, f"`{command}`")
        out.text(docstring(sys.modules[module_name]))
        out.add("```text", f"$ {command} --help", help_text(module_name).rstrip(), "```", "")
    del fxla
    return "\n".join(out.lines).rstrip() + "\n"


def undocumented_members() -> List[str]:
    """``package.Class.member`` for every public member (method, property) of a public fxla class that has no
    docstring of its own or inherited (``__call__`` is exempt: the class docstring says how to call it)."""
    import_everything()
    missing = []
    for package, _, _ in SECTIONS:
        for name in sys.modules[package].__all__:
            cls = getattr(sys.modules[package], name)
            if inspect.isclass(cls) and cls.__module__.split(".")[0] == "fxla" and not issubclass(
                    cls, (BaseException, enum.Enum)):
                missing += [f"{package}.{name}.{m}" for m, _, value in class_members(cls)
                            if m != "__call__" and not member_doc(cls, m, value)]   # the class says how to call
    return sorted(set(missing))


def undocumented() -> List[str]:
    """Public names (``__all__`` entries of fxla's own objects) without a docstring or ``#:`` comment."""
    import_everything()
    missing = []
    for package, _, _ in SECTIONS:
        module = sys.modules[package]
        for name in module.__all__:
            obj = getattr(module, name)
            if isinstance(obj, types.ModuleType):
                ok = not obj.__name__.startswith("fxla") or bool(docstring(obj))
            elif inspect.isclass(obj) or callable(obj):
                ok = bool(docstring(obj))
            else:
                modules = [m for m in sorted(sys.modules) if m == package or m.startswith(package + ".")]
                ok = bool(doc_comment(modules, name))
            if not ok:
                missing.append(f"{package}.{name}")
    return missing


if __name__ == "__main__":
    sys.stdout.write(render_markdown())
