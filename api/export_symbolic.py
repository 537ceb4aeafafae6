"""Shape-polymorphic artifacts: ``fxla.export(model, args, dir, dynamic_shapes=...)`` and loading them.

An artifact exported with ``dynamic_shapes`` (the same forms as ``fxla.compile``'s ``dynamic=``: ``{argument name:
{dim: fxla.Dim(...)}}`` or ``True``) holds, besides the StableHLO of the example's sizes (what any artifact holds,
so it loads and runs them as before):

* ``polymorphic.mlirbc`` -- the polymorphic fxla program (``?`` dims, size ops; docs/shapes.md) as MLIR bytecode,
  without source locations;
* ``polymorphic.stablehlo.mlirbc`` -- where every op of it has one, the polymorphic StableHLO (``?`` dims, sizes
  computed by ``stablehlo.get_dimension_size`` arithmetic, StableHLO's dynamic ops) as a StableHLO portable
  artifact: any StableHLO consumer refines it to a call's sizes with StableHLO's shape refinement (as
  ``jax.export`` does with its polymorphic modules), without fxla;
* ``metadata.json`` ``"symbolic"`` -- the Dims (name, min, max, multiple_of, and which dims of which tensor inputs
  each marks) and every constraint the program relies on, as expression trees of plain JSON (``{"op": "eq",
  "args": [{"op": "mod", "args": [{"dim": "seq"}, 4]}, 0]}``), with the graph node that made each.

:class:`PolymorphicArtifact` is what :func:`fxla.load` keeps of them: a call whose sizes differ from the example's
checks the constraints (evaluated here on Python ints: nothing in the artifact is executed as code, and the
expressions are bounded in depth, size and magnitude), refines the fxla program to its sizes (which gives the
call's index checks and the result types), refines the polymorphic StableHLO to the same sizes with StableHLO's
shape refinement (or, without one, converts the refined fxla program), checks that the two agree and fit the
artifact's interface (verified by MLIR) and compiles it; executables are kept per size (at most
:data:`MAX_SIZES`, least recently used dropped).
"""
from __future__ import annotations

import collections
import io
import threading
import warnings
from typing import Any, Callable, Dict, List, Sequence, Tuple

import torch

from fxla.frontend import meta as M
from fxla.frontend.symbolic import ShapeConstraintError, SymbolicShapes
from fxla.runtime.artifact import ArtifactError

__all__ = ["POLYMORPHIC", "POLYMORPHIC_STABLEHLO", "MAX_SIZES", "polymorphic_parts", "PolymorphicArtifact",
           "ExportConstraintWarning"]


class ExportConstraintWarning(UserWarning):
    """``fxla.export(..., dynamic_shapes=)``: the exported program relies on constraints between its Dims beyond
    their declared ranges (``torch.narrow(x, 1, 0, 8)`` needs ``n >= 8``); the loaded artifact refuses sizes that
    break one (:class:`~fxla.ShapeConstraintError`)."""

POLYMORPHIC = "polymorphic.mlirbc"
POLYMORPHIC_STABLEHLO = "polymorphic.stablehlo.mlirbc"
#: executables a loaded polymorphic artifact keeps (one per distinct set of sizes)
MAX_SIZES = 64
_MAX_DEPTH, _MAX_NODES, _MAX_MAGNITUDE = 64, 10_000, 1 << 62


# ---- constraints as JSON ------------------------------------------------------------------------------------------
def _encode(e, names: Dict[Any, str]):
    """A sympy expression of the ShapeEnv as a JSON tree (raises ``ValueError`` for a form it cannot hold)."""
    import sympy
    from torch.utils._sympy.functions import (CeilDiv, CeilToInt, CleanDiv, FloorDiv, FloorToInt, IntTrueDiv, Max,
                                              Min, Mod, ModularIndexing, PowByNatural, PythonMod)
    if e is sympy.true or e is sympy.false:
        return bool(e)
    if e.is_Integer:
        return int(e)
    if e.is_Symbol:
        if e not in names:
            raise ValueError(f"the symbol {e} is not a Dim")
        return {"dim": names[e]}
    ops = {sympy.Add: "add", sympy.Mul: "mul", Max: "max", Min: "min", FloorDiv: "floordiv", CleanDiv: "floordiv",
           PythonMod: "mod", sympy.Mod: "mod", Mod: "mod", sympy.Eq: "eq", sympy.Ne: "ne", sympy.StrictLessThan: "lt",
           sympy.LessThan: "le", sympy.StrictGreaterThan: "gt", sympy.GreaterThan: "ge", sympy.And: "and",
           sympy.Or: "or", sympy.Not: "not"}
    op = ops.get(type(e))
    if op is not None:
        return {"op": op, "args": [_encode(a, names) for a in e.args]}
    if isinstance(e, CeilDiv):
        return {"op": "ceildiv", "args": [_encode(a, names) for a in e.args]}
    if isinstance(e, ModularIndexing):
        a, b, c = (_encode(x, names) for x in e.args)
        return {"op": "mod", "args": [{"op": "floordiv", "args": [a, b]}, c]}
    if isinstance(e, (sympy.Pow, PowByNatural)) and e.args[1].is_Integer and 0 <= int(e.args[1]) <= 8:
        return {"op": "mul", "args": [_encode(e.args[0], names)] * int(e.args[1])} if int(e.args[1]) else 1
    if isinstance(e, sympy.Pow) and e.exp.is_Integer and 0 <= int(e.exp) <= 8:
        return {"op": "mul", "args": [_encode(e.base, names)] * int(e.exp)} if int(e.exp) else 1
    if isinstance(e, (CeilToInt, FloorToInt)) and isinstance(e.args[0], IntTrueDiv):
        a, b = (_encode(x, names) for x in e.args[0].args)
        return {"op": "ceildiv" if isinstance(e, CeilToInt) else "floordiv", "args": [a, b]}
    raise ValueError(f"cannot write {e} ({type(e).__name__}) as a constraint")


_INFIX = {"add": " + ", "mul": "*", "floordiv": " // ", "mod": " % ", "eq": " == ", "ne": " != ", "lt": " < ",
          "le": " <= ", "gt": " > ", "ge": " >= ", "and": " and ", "or": " or "}


def show(tree) -> str:
    """A JSON expression tree as Python-like text (``6*seq == 24*(seq // 4)``) for error messages."""
    if type(tree) is not dict:
        return str(tree)
    if "dim" in tree:
        return str(tree["dim"])
    op, args = tree.get("op"), tree.get("args") or []
    parts = [show(a) if type(a) is not dict or "dim" in a else f"({show(a)})" for a in args]
    if op in _INFIX:
        return _INFIX[op].join(parts)
    return f"{op}({', '.join(parts)})"


class _Eval:
    """Evaluates a JSON expression tree on Python ints (sizes by Dim name); bounded (see the module docstring)."""

    _BINARY: Dict[str, Callable[[int, int], Any]] = {
        "floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b, "ceildiv": lambda a, b: -(-a // b),
        "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
        "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b}

    def __init__(self, sizes: Dict[str, int]):
        self.sizes = sizes
        self.nodes = 0

    def __call__(self, tree, depth: int = 0):
        self.nodes += 1
        if depth > _MAX_DEPTH or self.nodes > _MAX_NODES:
            raise ValueError("the expression is too large")
        if type(tree) is bool or type(tree) is int:
            return tree
        if type(tree) is not dict:
            raise ValueError(f"{type(tree).__name__} in an expression")
        if set(tree) == {"dim"}:
            if tree["dim"] not in self.sizes:
                raise ValueError(f"unknown Dim {tree['dim']!r}")
            return self.sizes[tree["dim"]]
        op, args = tree.get("op"), tree.get("args")
        if set(tree) != {"op", "args"} or type(args) is not list or not args:
            raise ValueError("a malformed expression node")
        values = [self(a, depth + 1) for a in args]
        if op in ("add", "mul", "max", "min", "and", "or"):
            out = values[0]
            for v in values[1:]:
                out = {"add": lambda: out + v, "mul": lambda: out * v, "max": lambda: max(out, v),
                       "min": lambda: min(out, v), "and": lambda: bool(out) and bool(v),
                       "or": lambda: bool(out) or bool(v)}[op]()
                if abs(int(out)) > _MAX_MAGNITUDE:
                    raise ValueError("a value out of range")
            return out
        if op == "not" and len(values) == 1:
            return not values[0]
        if op in self._BINARY and len(values) == 2:
            if op in ("floordiv", "mod", "ceildiv") and values[1] == 0:
                raise ValueError("a division by zero")
            return self._BINARY[op](*values)
        raise ValueError(f"unknown operation {op!r}")


# ---- export -------------------------------------------------------------------------------------------------------
def polymorphic_parts(compiled, args, leaves: Sequence[Any]) -> Tuple[Dict[str, bytes], Dict[str, Any]]:
    """``({file name: data}, metadata["symbolic"])`` of ``compiled`` (made with ``dynamic=``) for ``args``: the
    polymorphic fxla program, and the polymorphic StableHLO where the program has one."""
    from fxla.dialects.mlir import ir, strict_context
    from fxla.runtime.artifact import portable_bytecode

    poly = compiled._dynamic.polymorphic(compiled, compiled.graph_module, args)
    symbols: SymbolicShapes = poly.symbols
    name = compiled.__name__
    if symbols.ints:
        raise ArtifactError(f"cannot export {name} with an int argument marked as a Dim's size\nfix: mark dims of "
                            f"tensor arguments only")
    statics = list(poly.program.output_static) + [v for w in poly.program.written_attributes for v in w.leaves]
    if any(isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)) for v in statics):
        raise ArtifactError(f"cannot export {name} polymorphically: it returns a size (a number computed from a "
                            f"symbolic dim)\nfix: return tensors only (torch.tensor(x.size(1)) is not needed: "
                            f"the caller knows its sizes)")
    position = {}                                    # leaf index -> tensor input index
    for i, v in enumerate(leaves):
        if isinstance(v, torch.Tensor):
            position[i] = len(position)
    names = {symbol: dim for dim, symbol in symbols.symbols.items()}
    guards, notices = [], []
    for i, guard in enumerate(symbols.env.guards):
        if not guard.expr.free_symbols:
            continue
        try:
            tree = _encode(symbols.env.replace(guard.expr), names)
        except ValueError as err:
            raise ArtifactError(f"cannot export {name} polymorphically: {err}\nwhy: the artifact stores the "
                                f"constraints its program relies on as plain expressions\nfix: export without "
                                f"dynamic_shapes=, or leave that dim static") from None
        node = symbols._node_of(i)
        guards.append({"expr": tree, "node": node.name if node is not None else ""})
        where = node.meta.get(M.SOURCE) if node is not None else None
        notices.append(f"{show(tree)} (made by %{guards[-1]['node'] or '?'}{f' at {where}' if where else ''})")
    if notices:         # (the Dims' own ranges, multiples and the constraints the program added to them)
        declared = ", ".join(f"{dim} in [{d.min}, {d.max}]" + (f" multiple of {d.multiple_of}" if d.multiple_of > 1
                                                                else "") for dim, d in symbols.dims.items())
        warnings.warn(f"fxla.export: {name}: the artifact runs the sizes its Dims allow ({declared}) that also "
                      f"satisfy the constraint(s) its program relies on: {'; '.join(notices)}; a call of the loaded "
                      f"artifact breaking one is a ShapeConstraintError", ExportConstraintWarning, stacklevel=3)
    dims = [{"name": dim, "min": d.min, "max": d.max, "multiple_of": d.multiple_of,
             "uses": [[position[leaf], k] for leaf, k in symbols.uses[dim]]} for dim, d in symbols.dims.items()]
    with poly.program.context:
        module = ir.Module.parse(poly.program.module.operation.get_asm(print_generic_op_form=True))  # (no locations)
        buffer = io.BytesIO()
        module.operation.write_bytecode(buffer)
        main = next(op for op in module.body.operations if op.operation.name == "func.func")
        results = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value).results
        outputs = [{"shape": [None if ir.ShapedType(t).is_dynamic_dim(k) else d
                              for k, d in enumerate(ir.ShapedType(t).shape)]} for t in results]
    files = {POLYMORPHIC: buffer.getvalue()}
    if poly.stablehlo is not None:
        with strict_context():
            text = ir.Module.parse(poly.stablehlo).operation.get_asm()             # (no locations)
        files[POLYMORPHIC_STABLEHLO], _ = portable_bytecode(text)
    return files, {"format": 1, "dims": dims, "guards": guards, "outputs": outputs}


# ---- load ---------------------------------------------------------------------------------------------------------
def _outputs(outputs: Any, results: Sequence[Sequence[int]], key: str, bad) -> List[Dict[str, Any]]:
    """``outputs`` (metadata.json's ``key`` ``"outputs"``: one ``{"shape": [int or null, ...]}`` per result of the
    program) checked against ``results``, the shapes of the program of the example's sizes: as many, each of the
    same rank, and a size that is not symbolic (``null``) the same."""
    def fits(o, shape) -> bool:
        return isinstance(o, dict) and set(o) == {"shape"} and isinstance(o["shape"], list) and \
            len(o["shape"]) == len(shape) and all(d is None or (type(d) is int and d == n)
                                                  for d, n in zip(o["shape"], shape))
    if not isinstance(outputs, list) or len(outputs) != len(results):
        raise bad(f"{key!r} 'outputs' is not a list of the program's {len(results)} results")
    for i, (o, shape) in enumerate(zip(outputs, results)):
        if not fits(o, shape):
            raise bad(f"{key!r} 'outputs' entry {i} is {str(o)[:80]}, not {{'shape': [...]}} with a size or null "
                      f"for each dim of the program's {list(shape)}")
    return outputs


class PolymorphicArtifact:
    """The polymorphic program of a loaded artifact (see the module docstring): metadata.json's ``key`` entry
    (``"symbolic"``; ``"guard_symbolic"``: the guard program's, :mod:`fxla.artifact_guards`), the program in
    ``files[names[0]]`` (and its polymorphic StableHLO in ``files[names[1]]``, if there); ``results``: the result
    shapes of the artifact's program of the example's sizes."""

    def __init__(self, path: str, meta: Dict[str, Any], files: Dict[str, bytes], results: Sequence[Sequence[int]],
                 n_params: int, bad: Callable[[str], ArtifactError], key: str = "symbolic",
                 names: Tuple[str, str] = (POLYMORPHIC, POLYMORPHIC_STABLEHLO)):
        from fxla.dialects.mlir import fxla_context, ir, read_untrusted_bytecode
        self.path, self.name, self._bad, self.n_params = path, meta.get("name"), bad, n_params
        spec = meta[key]
        program, stablehlo_file = names
        if program not in files or not isinstance(spec, dict) or spec.get("format") != 1:
            raise bad(f"{key!r} is malformed or {program} is missing")
        try:
            self.dims = [(str(d["name"]), int(d["min"]), None if d["max"] is None else int(d["max"]),
                          int(d["multiple_of"]), [(int(t), int(k)) for t, k in d["uses"]]) for d in spec["dims"]]
            self.guards = [(g["expr"], str(g["node"])) for g in spec["guards"]]
        except (KeyError, TypeError, ValueError):
            raise bad(f"{key!r} is malformed") from None
        if any(multiple < 1 or low < 0 for _, low, _, multiple, _ in self.dims):
            raise bad(f"{key!r} has a Dim whose min is negative or multiple_of below 1")
        self.outputs = _outputs(spec.get("outputs"), results, key, bad)
        self.context = fxla_context()
        try:
            self.module, _ = read_untrusted_bytecode(files[program],
                                                     lambda raw: ir.Module.parse(raw, context=self.context))
        except Exception as err:  # noqa: BLE001  (MLIR raises ValueError/MLIRError with its diagnostics)
            raise bad(f"{program} is not an fxla program ({str(err).strip()[:300]})") from None
        self.stablehlo = None               # (the polymorphic StableHLO as MLIR bytecode, if the artifact has it)
        if stablehlo_file in files:
            from fxla.runtime.artifact import parse_program
            try:
                _, stablehlo = parse_program(files[stablehlo_file])
                buffer = io.BytesIO()
                stablehlo.operation.write_bytecode(buffer)
                self.stablehlo = buffer.getvalue()
            except Exception as err:  # noqa: BLE001  (MLIR raises ValueError/MLIRError with its diagnostics)
                raise bad(f"{stablehlo_file} is not a StableHLO portable artifact "
                          f"({str(err).strip()[:300]})") from None
        self.symbolic = {(t, k) for _, _, _, _, uses in self.dims for t, k in uses}
        self._executables: "collections.OrderedDict[tuple, Any]" = collections.OrderedDict()
        self._lock = threading.Lock()

    def sizes(self, shapes: Sequence[Sequence[int]]) -> Dict[str, int]:
        """Each Dim's size in the call's tensor input ``shapes``; raises :class:`ShapeConstraintError` for a call
        that breaks a constraint."""
        sizes = {}
        for name, low, high, multiple, uses in self.dims:
            seen = {(t, k): shapes[t][k] for t, k in uses if t < len(shapes) and k < len(shapes[t])}
            if len(seen) != len(uses) or len(set(seen.values())) != 1:
                raise ShapeConstraintError(f"{self.name}: the dims marked with Dim {name!r} (tensor input, dim: "
                                           f"{sorted(seen)}) need one size, got {sorted(set(seen.values()))}",
                                           fix="pass inputs whose marked dims agree")
            size = next(iter(seen.values()))
            span = f"[{low}, {'inf' if high is None else high}]" + (f", multiples of {multiple}" if multiple > 1
                                                                      else "")
            if size < low or (high is not None and size > high):
                raise ShapeConstraintError(f"{self.name}: Dim {name!r} = {size} is outside [{low}, "
                                           f"{'inf' if high is None else high}]" + (
                                               f" (and must be a multiple of {multiple})" if multiple > 1 else ""),
                                           why="the artifact was exported for that range",
                                           fix="pass sizes in the Dim's range, or export with a wider Dim")
            if size % multiple:
                raise ShapeConstraintError(f"{self.name}: Dim {name!r} = {size} is not a multiple of {multiple} (the "
                                           f"artifact runs {name} in {span})",
                                           why=f"the Dim was exported with multiple_of={multiple}",
                                           fix=f"pass a multiple of {multiple} (pad the input), or export with "
                                               f"another Dim")
            sizes[name] = size
        evaluate = _Eval(sizes)
        for tree, node in self.guards:
            try:
                holds = bool(evaluate(tree))
            except (ValueError, TypeError, OverflowError) as err:
                raise self._bad(f"a constraint in metadata.json cannot be evaluated ({err})") from None
            if not holds:
                shown = ", ".join(f"{n} = {v}" for n, v in sizes.items())
                raise ShapeConstraintError(f"{self.name}: the sizes of this call ({shown}) break a constraint the "
                                           f"exported program relies on (made by %{node}): {show(tree)}"
                                           + self._runs(sizes),
                                           why="the program is only defined where its constraints hold",
                                           fix="pass sizes that satisfy it")
        return sizes

    def _runs(self, sizes: Dict[str, int], tries: int = 256) -> str:
        """The first sizes of each Dim the artifact runs, the call's other sizes kept (of ``tries`` candidates from
        the Dim's min; Dims with none left out): a range its constraints narrowed, said in numbers."""
        notes = []
        for name, low, high, multiple, _ in self.dims:
            runs = []
            for size in range(low, low + tries * multiple, multiple):
                if high is not None and size > high:
                    break
                evaluate = _Eval(dict(sizes, **{name: size}))
                try:
                    if all(bool(evaluate(tree)) for tree, _ in self.guards):
                        runs.append(size)
                except (ValueError, TypeError, OverflowError):
                    return ""
                if len(runs) == 4:
                    break
            if runs:
                notes.append(f"{name} = {', '.join(map(str, runs))}{', ...' if len(runs) == 4 else ''}")
        return f" (with this call's other sizes, it runs {'; '.join(notes)})" if notes else ""

    def executable_for(self, shapes: Sequence[Sequence[int]], device, cache_dir):
        """``(executable, input index checks)`` of the call's tensor input ``shapes`` (constraints checked; refined
        and compiled once)."""
        key = tuple(tuple(s) for s in shapes)
        with self._lock:
            found = self._executables.get(key)
            if found is not None:
                self._executables.move_to_end(key)
                return found
            self.sizes(shapes)
            executable = self._compile(shapes, device, cache_dir)
            self._executables[key] = executable
            while len(self._executables) > MAX_SIZES:
                self._executables.popitem(last=False)
            return executable

    def _compile(self, shapes, device, cache_dir):
        from fxla.lowering import lower_to_stablehlo
        from fxla.lowering.index_bounds import IndexOutOfRangeError, input_index_checks
        from fxla.lowering.refine import refine_module, refine_stablehlo_like
        from fxla.runtime import compile_stablehlo
        from fxla.runtime.sharding import signature_of
        try:
            module = refine_module(self.module, self.context, shapes)
            checks = input_index_checks(module, len(shapes))
            if self.stablehlo is None:
                text = lower_to_stablehlo(module).operation.get_asm()
            else:                    # (StableHLO's own refinement of the artifact's polymorphic StableHLO)
                text = refine_stablehlo_like(self.stablehlo, module).operation.get_asm()
        except IndexOutOfRangeError:
            raise                                        # (positions past a table at these sizes: eager's error)
        except Exception as err:  # noqa: BLE001  (a program that does not refine or convert: not fxla's output)
            raise self._bad(f"the polymorphic program does not refine to these sizes ({str(err).strip()[:300]})") \
                from None
        outs = signature_of(text)[1]
        if len(outs) != len(self.outputs) or any(
                len(shape) != len(o["shape"]) or any(w is not None and w != d for w, d in zip(o["shape"], shape))
                for (shape, _), o in zip(outs, self.outputs)):
            raise self._bad(f"{POLYMORPHIC} refined to these sizes does not fit the artifact's outputs")
        return compile_stablehlo(text, device, cache_dir=cache_dir, n_params=self.n_params), checks
