"""The ``fxla`` dialect's own textual syntax: a printer and a parser driven by the op table (:mod:`.ops`).

fxla ops are unregistered MLIR ops (jaxlib's MLIR has no IRDL), so MLIR prints them in its generic form.
:func:`print_module` prints a module with every ``fxla.*`` op in the pretty form below and everything else
(``func``, ``stablehlo``, locations) exactly as MLIR prints it; :func:`to_generic` turns text that may hold
pretty ops back into generic form, which ``ir.Module.parse`` reads.  Generic-form ops pass through unchanged,
so both forms parse, and printing the parse of printed text gives the same text.

The pretty form of one op occupies one line::

    %2 = fxla.linear %0, %1, bias %b : tensor<2x8xf32>, tensor<4x8xf32>, tensor<4xf32> -> tensor<2x4xf32>
    %3 = fxla.softmax %2 {dim = 1} : tensor<2x4xf32> -> tensor<2x4xf32>
    %4:2 = fxla.sort %x {dim = -1, descending = false} : tensor<5xf32> -> (tensor<5xf32>, tensor<5xi64>)
    %5 = fxla.constant {value = dense<1.5> : tensor<f32>} : () -> tensor<f32>

Grammar (``[x]`` optional, ``x*`` repeated)::

    op         ::= [results '='] 'fxla.' mnemonic [operand (',' operand)*] [attr-dict] ':' signature [loc]
    operand    ::= [operand-name] value-use
    attr-dict  ::= '{' attr (',' attr)* '}'
    attr       ::= attr-name '=' value
    signature  ::= ('()' | type (',' type)*) '->' (type | '(' type (',' type)* ')')

* ``results`` (``%0``, ``%0:2``) and a trailing ``loc(...)`` are MLIR's own, copied as they are;
* operands come in the op table's order.  A required operand is its value alone; an **optional** operand is
  written only when present, prefixed by its table name (``bias %b``, ``min %lo``), so an absent one is
  never ambiguous.  A variadic op (``fxla.concat``) lists one or more values.  The ``operandSegmentSizes``
  attribute of the generic form is derived from those names and never written;
* ``attr-dict`` holds the attributes the op carries, in the op table's order, and is left out when there are
  none.  Values are written by kind (:class:`~.opdef.AttrKind`): ``i64`` as an integer (``dim = -1``), ``f64``
  as a decimal or MLIR hexadecimal float (``eps = 1.000000e-05``; ``0``, ``1e-5`` and ``inf`` are read too),
  ``bool`` as ``true``/``false``, ``string`` as an MLIR string literal, ``array<i64>`` as ``[1, 2]`` (``[]``
  when empty) and ``dense elements`` as MLIR prints them (``dense<[1, 2]> : tensor<2xi64>``);
* the signature lists the operand types in order (``()`` when the op has none), then the result types (in
  parentheses when there are several).

An op that the pretty form cannot state exactly keeps MLIR's generic form when printed: a name that is not in
the op table, a region, an attribute the table does not declare for the op or one of another kind (an ``i32``
``dim``), a missing or malformed ``operandSegmentSizes``.  Such IR does not verify; printing it generically
shows what is there.

Text is read line by line: a line whose first token after the optional ``results =`` is a bare ``fxla.``
name (not followed by ``=``, which would be an attribute) is a pretty op; every other line is left as it
is.  Malformed pretty text raises :class:`IRSyntaxError` with the line and column of the problem; the
generic line that replaces a pretty one keeps its ``results =`` prefix, so the op's name, where MLIR locates
the op (what the verifier reports), starts at the same line and column in both forms.
"""
from __future__ import annotations

import re
import struct
from typing import Callable, Dict, List, NamedTuple, Optional, Tuple

from fxla.base.errors import FxlaError
from fxla.base.suggest import did_you_mean

from ..mlir import ir
from .opdef import BOOL, DENSE, F64, I64, I64_ARRAY, SEGMENTS, STR, AttrKind, OpDef
from .ops import ALL_OPS, LEGACY_BY_NAME, lookup

__all__ = ["IRSyntaxError", "print_module", "prettify", "to_generic", "pretty_op", "synopsis"]


class IRSyntaxError(FxlaError):
    """Pretty ``fxla`` op text that does not follow the syntax of :mod:`fxla.dialects.fxla.syntax`;
    ``line``/``col`` (1-based) locate the problem in the text given to :func:`to_generic`."""

    def __init__(self, message: str, line: int, col: int, fix: str):
        super().__init__(f"{line}:{col}: {message}", fix=fix)
        self.line, self.col, self.message = line, col, message


# -- attribute values by kind ------------------------------------------------------------------------------------
_INT = re.compile(r"[-+]?\d+\Z")
_HEX = re.compile(r"0x[0-9a-fA-F]{1,16}\Z")
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"\Z')


def _f64_text(attr: ir.Attribute) -> str:
    text = str(attr)
    return text[:-len(" : f64")] if text.endswith(" : f64") else text


def _f64_generic(text: str) -> str:
    if _HEX.match(text):
        return f"{text} : f64"
    try:
        value = float(text)
    except ValueError:
        raise ValueError("expected a float (1.5, 1e-05, inf or an MLIR hexadecimal float such as "
                         "0x7FF0000000000000)") from None
    return f"0x{struct.unpack('<Q', struct.pack('<d', value))[0]:016X} : f64"   # exact, whatever the spelling


def _i64_generic(text: str) -> str:
    if not _INT.match(text) or not -2**63 <= int(text) < 2**63:
        raise ValueError("expected a 64-bit integer")
    return f"{int(text)} : i64"


def _bool_generic(text: str) -> str:
    if text not in ("true", "false"):
        raise ValueError("expected true or false")
    return text


def _string_generic(text: str) -> str:
    if not _STRING.match(text):
        raise ValueError('expected a string literal in double quotes ("tanh")')
    return text


def _array_generic(text: str) -> str:
    if not (text.startswith("[") and text.endswith("]")):
        raise ValueError("expected a list of integers in brackets ([1, 2], or [] when empty)")
    items = [t.strip() for t in text[1:-1].split(",")] if text[1:-1].strip() else []
    if not all(_INT.match(t) and -2**63 <= int(t) < 2**63 for t in items):
        raise ValueError("expected a list of 64-bit integers in brackets ([1, 2], or [] when empty)")
    return f"array<i64: {', '.join(str(int(t)) for t in items)}>" if items else "array<i64>"


def _same(text: str) -> str:
    return text


class ValueSyntax(NamedTuple):
    """How the values of one attribute kind are written in the pretty form."""

    pretty: Callable[[ir.Attribute], str]     # the pretty text of an attribute of the kind
    generic: Callable[[str], str]             # the generic (MLIR) text of a pretty text; raises ValueError
    template: str                             # how the docs show a value of the kind


#: the pretty syntax of every attribute kind of the op table
ATTR_SYNTAX: Dict[AttrKind, ValueSyntax] = {
    I64: ValueSyntax(lambda a: str(I64.to_python(a)), _i64_generic, "<int>"),
    F64: ValueSyntax(_f64_text, _f64_generic, "<float>"),
    BOOL: ValueSyntax(lambda a: "true" if BOOL.to_python(a) else "false", _bool_generic, "<bool>"),
    STR: ValueSyntax(str, _string_generic, '"<string>"'),
    I64_ARRAY: ValueSyntax(lambda a: "[" + ", ".join(str(v) for v in I64_ARRAY.to_python(a)) + "]", _array_generic,
                           "[<int>, …]"),
    DENSE: ValueSyntax(str, _same, "dense<…> : <type>"),
}


# -- printing ----------------------------------------------------------------------------------------------------
_GENERIC_LINE = re.compile(r'(\s*)((?:%[^\s=]+ = )?)"(fxla\.[^"]*)"\(([^)]*)\)(.*)\Z')


def _attr_texts(opdef: OpDef, op: ir.Operation) -> Optional[List[str]]:
    """``name = value`` per attribute in table order, or ``None`` when one cannot be written exactly."""
    try:
        present = {name: op.attributes[name] for name in op.attributes}
    except TypeError:                       # an attribute the bindings cannot represent (array<bf16> ...)
        return None
    present.pop(SEGMENTS, None)
    if set(present) - set(opdef.attr_index):
        return None
    texts = []
    for a in opdef.attributes:
        if a.name not in present:
            continue
        attr = present[a.name]
        try:
            exact = a.kind.to_mlir(a.kind.to_python(attr)) == attr     # e.g. not an i32 where i64 is declared
        except (TypeError, ValueError):
            exact = False
        if not exact:
            return None
        texts.append(f"{a.name} = {ATTR_SYNTAX[a.kind].pretty(attr)}")
    return texts


def _operand_texts(opdef: OpDef, op: ir.Operation, names: List[str]) -> Optional[List[str]]:
    if opdef.is_variadic or not opdef.has_optional:
        return names if (opdef.is_variadic and names) or len(names) == len(opdef.operands) else None
    try:
        sizes = list(ir.DenseI32ArrayAttr(op.attributes[SEGMENTS]))
    except (KeyError, TypeError, ValueError):
        return None
    if len(sizes) != len(opdef.operands) or any(s not in (0, 1) for s in sizes) or sum(sizes) != len(names):
        return None
    given = iter(names)
    return [(f"{o.name} " if o.optional else "") + next(given)
            for o, size in zip(opdef.operands, sizes) if size]


def _types(types: List[str], *, results: bool) -> str:
    if results:
        return types[0] if len(types) == 1 else "(" + ", ".join(types) + ")"
    return ", ".join(types) if types else "()"


def pretty_op(op: ir.Operation, operand_names: List[str]) -> Optional[str]:
    """The pretty text of ``op`` after its ``results =`` (``operand_names`` as printed, ``%0``/``%arg1``), or
    ``None`` when the pretty form cannot state it exactly (see the module docstring).  Needs ``op``'s context
    to be current."""
    opdef = lookup(op.name)
    if opdef is None or len(op.regions) or len(op.successors):
        return None
    operands = _operand_texts(opdef, op, operand_names)
    attrs = _attr_texts(opdef, op)
    if operands is None or attrs is None:
        return None
    text = op.name
    if operands:
        text += " " + ", ".join(operands)
    if attrs:
        text += " {" + ", ".join(attrs) + "}"
    return (text + " : " + _types([str(v.type) for v in op.operands], results=False)
            + " -> " + _types([str(r.type) for r in op.results], results=True))


def prettify(text: str, module: ir.Module) -> str:
    """``text`` (MLIR's printing of ``module``, with or without locations) with each ``fxla.*`` op line in the
    pretty form where it has one."""
    found: List[ir.Operation] = []

    def visit(op):
        if op.name.startswith("fxla."):
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)      # the order MLIR prints ops in
    ops = iter(found)
    lines = text.split("\n")
    with module.context, ir.Location.unknown():     # (FloatAttr.get wants a location)
        for i, line in enumerate(lines):
            m = _GENERIC_LINE.match(line)
            if m is None:
                continue
            indent, results, name, operand_list, rest = m.groups()
            op = next(ops, None)
            if op is None or op.name != name:
                raise RuntimeError(f"fxla printer out of step with MLIR's printing at line {i + 1}: "
                                   f"{name!r} vs {None if op is None else op.name!r}")
            names = [n.strip() for n in operand_list.split(",")] if operand_list.strip() else []
            generic_sig = (" : (" + ", ".join(str(v.type) for v in op.operands) + ") -> "
                           + _types([str(r.type) for r in op.results], results=True))
            cut = rest.rfind(generic_sig)
            tail = rest[cut + len(generic_sig):] if cut >= 0 else None
            if tail is None or (tail and not tail.startswith(" loc(")):
                continue                   # not a one-line op MLIR printed as expected (a region): keep it
            body = pretty_op(op, names)
            if body is not None:
                lines[i] = indent + results + body + tail
    return "\n".join(lines)


def print_module(module: ir.Module, *, debug_info: bool = False) -> str:
    """``module`` as text with its fxla ops in the pretty form (see the module docstring)."""
    return prettify(module.operation.get_asm(enable_debug_info=debug_info), module)


def synopsis(opdef: OpDef) -> str:
    """The pretty form of ``opdef`` as a template (for the docs), e.g.
    ``%r = fxla.linear %input, %weight[, bias %bias] : <operand types> -> <result type>``: optional operands and
    attributes with a default in brackets, ``…`` after a variadic operand."""
    parts = []
    for o in opdef.operands:
        text = f"%{o.name}, …" if o.variadic else (f"{o.name} %{o.name}" if o.optional else f"%{o.name}")
        parts.append(f"[, {text}]" if o.optional else (", " if parts else "") + text)
    attrs = ", ".join(f"{a.name} = {ATTR_SYNTAX[a.kind].template}" if a.required
                      else f"[{a.name} = {ATTR_SYNTAX[a.kind].template}]" for a in opdef.attributes)
    results = f"%r:{len(opdef.results)}" if len(opdef.results) > 1 else "%r"
    result_types = "<result type>" if len(opdef.results) == 1 else "(" + ", ".join(
        f"<{r} type>" for r in opdef.results) + ")"
    return (f"{results} = {opdef.name}" + (" " + "".join(parts) if parts else "") + (f" {{{attrs}}}" if attrs else "")
            + " : " + ("<operand types>" if opdef.operands else "()") + f" -> {result_types}")


# -- parsing -----------------------------------------------------------------------------------------------------
_PRETTY_HEAD = re.compile(r"(\s*)((?:%[\w$.\-#:]+\s*,\s*)*%[\w$.\-#:]+\s*=\s*)?(fxla\.[A-Za-z_][\w$.]*)(?=\s|$)")
_VALUE = re.compile(r"%[\w$.\-]+(?:#\d+)?")
_WORD = re.compile(r"[A-Za-z_][\w$.]*")
_SPACE = re.compile(r"\s*")
_OPENERS, _CLOSERS = "([{<", ")]}>"
_FIX = ("write each fxla op as `%r = fxla.<op> <operands> {<attrs>} : <operand types> -> <result types>` "
        "(see the fxla dialect syntax in docs/dialect.md), or in MLIR's generic form")


class _Line:
    """A cursor over one pretty op line (``pos`` 0-based; errors report 1-based columns)."""

    def __init__(self, text: str, number: int, pos: int):
        self.text, self.number, self.pos = text, number, pos

    def fail(self, message: str, pos: Optional[int] = None, fix: str = _FIX) -> IRSyntaxError:
        return IRSyntaxError(message, self.number, (self.pos if pos is None else pos) + 1, fix)

    def skip(self) -> None:
        self.pos = _SPACE.match(self.text, self.pos).end()

    def peek(self, token: str) -> bool:
        self.skip()
        return self.text.startswith(token, self.pos)

    def take(self, token: str) -> bool:
        if self.peek(token):
            self.pos += len(token)
            return True
        return False

    def expect(self, token: str, what: str) -> None:
        if not self.take(token):
            raise self.fail(f"expected {what}, found {self._found()}")

    def match(self, pattern: re.Pattern) -> Optional[str]:
        self.skip()
        m = pattern.match(self.text, self.pos)
        if m is None:
            return None
        self.pos = m.end()
        return m.group()

    def _found(self) -> str:
        rest = self.text[self.pos:].strip()
        return f"'{rest[:20]}'" if rest else "the end of the line"

    def balanced(self, stops: str, what: str) -> Tuple[str, int]:
        """The text up to the next ``stops`` character (or ``->``) outside brackets and strings, and its start."""
        self.skip()
        start, depth, i, text = self.pos, 0, self.pos, self.text
        while i < len(text):
            ch = text[i]
            if ch == '"':
                m = re.compile(r'"(?:[^"\\]|\\.)*"').match(text, i)
                if m is None:
                    raise self.fail("unterminated string literal", i)
                i = m.end()
                continue
            if text.startswith("->", i):
                if depth == 0 and "-" in stops:
                    break
                i += 2
                continue
            if depth == 0 and ch in stops:
                break
            if ch in _OPENERS:
                depth += 1
            elif ch in _CLOSERS:
                if depth == 0:
                    break
                depth -= 1
            i += 1
        piece = text[start:i].rstrip()
        if not piece or depth:
            raise self.fail(f"expected {what}, found {self._found()}" if not piece else
                            f"unbalanced brackets in {what}", start)
        self.pos = start + len(piece)
        return piece, start


def _check_type(line: _Line, text: str, at: int) -> None:
    try:
        ir.Type.parse(text)
    except (ir.MLIRError, ValueError, RuntimeError) as err:
        first = str(err).strip().splitlines()
        raise line.fail(f"'{text}' is not a type ({first[-1].strip() if first else err})", at,
                        fix="write an MLIR type such as tensor<2x3xf32>") from None


def _types_list(line: _Line, what: str, stops: str) -> List[str]:
    types = []
    while True:
        text, at = line.balanced(stops + ",", what)
        _check_type(line, text, at)
        types.append(text)
        if not line.take(","):
            return types


def _operands(line: _Line, opdef: OpDef) -> Tuple[List[str], List[int]]:
    """The operand values in order and the segment sizes (one 0/1 per declared operand; empty for variadic)."""
    given: List[Tuple[Optional[str], str, int]] = []       # (name or None, value, column)
    while True:
        line.skip()
        at = line.pos
        name = line.match(_WORD) if not line.peek("%") and not line.peek("{") and not line.peek(":") else None
        value = line.match(_VALUE)
        if value is None:
            if name is None and not given:
                break                                        # no operands
            raise line.fail(f"expected an operand (%value), found {line._found()}")
        given.append((name, value, at))
        if not line.take(","):
            break
    if opdef.is_variadic:
        if not given:
            raise line.fail(f"'{opdef.name}' takes one or more '{opdef.operands[0].name}' operands")
        for name, _, at in given:
            if name is not None:
                raise line.fail(f"'{opdef.name}' has no optional operand '{name}'", at)
        return [v for _, v, _ in given], []
    sizes, values, k = [], [], 0
    optional = {o.name for o in opdef.operands if o.optional}
    for o in opdef.operands:
        if k < len(given):
            name, value, at = given[k]
            if o.optional and name == o.name or not o.optional and name is None:
                sizes.append(1)
                values.append(value)
                k += 1
                continue
        if o.optional:
            sizes.append(0)
            continue
        line.skip()
        where = given[k][2] if k < len(given) else line.pos
        if k < len(given):
            raise line.fail(f"operand '{o.name}' of '{opdef.name}' is required and written without a name", where)
        raise line.fail(f"'{opdef.name}' expects its operand '{o.name}' here", where)
    if k < len(given):
        name, _, at = given[k]
        if name is None:
            raise line.fail(f"'{opdef.name}' takes {len(opdef.operands)} operand(s); this one is one too many"
                            + (f" (optional ones are written with their name: {', '.join(sorted(optional))})"
                               if optional else ""), at)
        known = [o.name for o in opdef.operands if o.optional]
        if name in known:
            raise line.fail(f"optional operand '{name}' of '{opdef.name}' is out of order or repeated "
                            f"(the order is {', '.join(o.name for o in opdef.operands)})", at)
        raise line.fail(f"'{opdef.name}' has no optional operand '{name}'{did_you_mean(name, known)}", at)
    return values, (sizes if opdef.has_optional else [])


def _attributes(line: _Line, opdef: OpDef) -> List[str]:
    """The attribute dict's entries as generic ``name = value`` texts (validated by MLIR)."""
    entries: List[str] = []
    if not line.take("{"):
        return entries
    seen = set()
    if line.take("}"):
        return entries
    while True:
        line.skip()
        at = line.pos
        name = line.match(_WORD)
        if name is None:
            raise line.fail(f"expected an attribute name, found {line._found()}")
        attr = opdef.attr_index.get(name)
        if attr is None:
            raise line.fail(f"'{opdef.name}' has no attribute '{name}'{did_you_mean(name, opdef.attr_index)}", at,
                            fix=f"write one of the attributes of '{opdef.name}': {', '.join(opdef.attr_index)}"
                            if opdef.attr_index else f"'{opdef.name}' takes no attributes: leave out the {{...}}")
        if name in seen:
            raise line.fail(f"attribute '{name}' is given twice", at)
        seen.add(name)
        line.expect("=", f"'=' after '{name}'")
        value, vat = line.balanced(",}", f"a value for '{name}'")
        try:
            generic = ATTR_SYNTAX[attr.kind].generic(value)
            parsed = ir.Attribute.parse(generic)
            attr.kind.to_python(parsed)
        except (ValueError, TypeError, ir.MLIRError) as err:
            why = str(err).strip().splitlines()
            raise line.fail(f"bad value for '{name}' ({attr.kind.name}): "
                            f"{why[-1].strip() if why else type(err).__name__}", vat,
                            fix=f"write '{name}' as {attr.kind.name} (see the fxla dialect syntax in "
                                "docs/dialect.md)") from None
        entries.append(f"{name} = {generic}")
        if line.take("}"):
            return entries
        line.expect(",", "',' or '}' in the attribute dict")


def _convert(line: _Line, indent: str, results: str, name: str) -> str:
    opdef = lookup(name)
    if opdef is None:
        bare = {n.partition(".")[2]: n for n in [o.name for o in ALL_OPS] + list(LEGACY_BY_NAME)}
        guess = did_you_mean(name.partition(".")[2], bare, show=bare.__getitem__)     # compared without "fxla."
        raise line.fail(f"'{name}' is not an op of the fxla dialect{guess}", line.pos - len(name),
                        fix="see docs/dialect.md for the ops of the fxla dialect")
    values, sizes = _operands(line, opdef)
    entries = _attributes(line, opdef)
    line.expect(":", "':' and the op's type signature")
    line.skip()
    operands_at = line.pos
    if line.peek("()"):
        line.take("()")
        operand_types: List[str] = []
    else:
        operand_types = _types_list(line, "an operand type", "-")
    line.expect("->", "'->' and the result types")
    line.skip()
    results_at = line.pos
    if line.peek("("):
        line.take("(")
        result_types = _types_list(line, "a result type", ")")
        line.expect(")", "')' after the result types")
    else:
        result_types = _types_list(line, "a result type", " ")
        if len(result_types) != 1:
            raise line.fail("several result types go in parentheses: -> (t1, t2)", results_at)
    if len(operand_types) != len(values):
        raise line.fail(f"{len(values)} operand(s) but {len(operand_types)} operand type(s) in the signature",
                        operands_at)
    if len(result_types) != len(opdef.results):
        raise line.fail(f"'{name}' has {len(opdef.results)} result(s) but the signature lists "
                        f"{len(result_types)}", results_at)
    line.skip()
    tail = line.text[line.pos:]
    if tail and not tail.startswith("loc(") and not tail.startswith("//"):
        raise line.fail(f"unexpected {line._found()} after the type signature")
    if sizes:
        entries.append(f"{SEGMENTS} = array<i32: {', '.join(map(str, sizes))}>")
    attrs = " {" + ", ".join(entries) + "}" if entries else ""
    results_text = results.rstrip()
    return (f'{indent}{results_text}{" " if results_text else ""}"{name}"({", ".join(values)}){attrs} : '
            f'({", ".join(operand_types)}) -> {_types(result_types, results=True)}' + (" " + tail if tail else ""))


def to_generic(text: str) -> str:
    """``text`` with every pretty fxla op line rewritten in MLIR's generic form (line count kept, other lines
    unchanged).  Raises :class:`IRSyntaxError` on malformed pretty text.  Types and attribute values are
    checked with MLIR's parsers, so an MLIR context must be current."""
    lines = text.split("\n")
    for i, raw in enumerate(lines):
        m = _PRETTY_HEAD.match(raw)
        if m is None or raw[m.end():].lstrip().startswith(("=", ",", "}")):   # fxla.param = ... is an attribute
            continue
        indent, results, name = m.group(1), m.group(2) or "", m.group(3)
        lines[i] = _convert(_Line(raw, i + 1, m.end()), indent, results, name)
    return "\n".join(lines)
