"""Value guards in an artifact: an exported program specialised to data-dependent values checks them per call.

``fxla.export(model, args, dir, concrete_shapes=True)`` of a model whose trace decided data-dependent values
from the example's data (:mod:`fxla.frontend.value_guards`: an ``if`` on a tensor, how many elements
``nonzero`` / ``x[mask]`` select) writes, besides the program, its *guard program* (:data:`GUARDS`, the
StableHLO that computes those values from the same inputs) and the guards themselves (``metadata.json``'s
``"guards"``: node name, ``kind`` (``"bool"``/``"int"``), the expected value, the user's line; ``"guard_params"``:
the weights the guard program takes, from the artifact's weights file).  :class:`LoadedGuards` runs the guard
program before every call of the loaded module and raises :class:`GuardError` when a guard does not hold: the
artifact then refuses the call (``fxla.compile`` would trace again; an artifact cannot), never computing an
answer for data it was not exported for.

An artifact exported with ``dynamic_shapes=`` as well holds the guard program polymorphically too, as it holds
the main program (:mod:`fxla.export_symbolic`): :data:`GUARDS_POLYMORPHIC` (and
:data:`GUARDS_POLYMORPHIC_STABLEHLO` where it has one) and ``metadata.json``'s ``"guard_symbolic"`` (its Dims,
constraints and result shapes).  A call at other sizes runs the guard program refined and compiled for them (once
per size), so the guards are checked at every size the Dims allow.
"""
from __future__ import annotations

import os
from typing import Any, Dict, List, Sequence

from fxla.frontend.value_guards import Guard, check_guards
from fxla.lowering.index_bounds import check_input_indices
from fxla.lowering.value_checks import ValueCheck, raise_failed
from fxla.runtime import compile_stablehlo, to_device
from fxla.runtime.artifact import annotate_roles, portable_bytecode, program_interface
from fxla.runtime.buffers import InputError

__all__ = ["GUARDS", "GUARDS_POLYMORPHIC", "GUARDS_POLYMORPHIC_STABLEHLO", "GuardError", "export_guards",
           "export_polymorphic_guards", "LoadedGuards"]

#: the guard program's file in an artifact
GUARDS = "guards.mlirbc"
#: the polymorphic guard program (fxla dialect) and its polymorphic StableHLO (``dynamic_shapes=``)
GUARDS_POLYMORPHIC = "guards.polymorphic.mlirbc"
GUARDS_POLYMORPHIC_STABLEHLO = "guards.polymorphic.stablehlo.mlirbc"


class GuardError(InputError):
    """A loaded artifact's value guard does not hold for a call's data."""


def export_guards(member, values) -> tuple:
    """``(files, metadata, params)`` for the guards of ``member`` (a compiled per-signature module with
    ``value_guards``; ``values``: the call's arguments): the guard program's bytecode, the metadata entries and
    ``[(name, tensor)]`` of the weights it reads."""
    checker = member.guard_checker
    stages = checker._lower_for_call(checker._binding.bind(values, {}))
    program = stages.program
    params = [(name, program.params[name]) for name in program.param_names]
    n_inputs = len([v for v in values if hasattr(v, "shape")])
    text = annotate_roles(stages.stablehlo, ["input"] * n_inputs + [f"param:{n}" for n, _ in params],
                          ["output"] * len(member.value_guards) + ["check"] * bool(program.value_checks))
    bytecode, _ = portable_bytecode(text)
    meta = {"guards": [{"name": g.name, "kind": g.kind, "expected": g.expected, "where": _where(g.where)}
                       for g in member.value_guards],
            "guard_params": [name for name, _ in params]}
    if program.value_checks:            # (the guard program's own check code: fxla.value_checks)
        meta["guard_value_checks"] = [c.to_json() for c in program.value_checks]
    return {GUARDS: bytecode}, meta, params


def export_polymorphic_guards(member, args, leaves) -> tuple:
    """``(files, metadata["guard_symbolic"])``: the guard program of ``member`` (as :func:`export_guards`; traced
    with symbolic sizes, ``dynamic=``) as a polymorphic program, for the call ``args`` (its flat ``leaves``)."""
    from fxla.frontend.symbolic import ShapeConstraintError
    from fxla.runtime.artifact import ArtifactError

    from .export_symbolic import POLYMORPHIC, POLYMORPHIC_STABLEHLO, polymorphic_parts
    checker = member.guard_checker
    problem = "its trace has no symbolic sizes" if getattr(checker, "_dynamic", None) is None else None
    if problem is None:
        try:
            files, spec = polymorphic_parts(checker, args, leaves)
        except (ShapeConstraintError, ArtifactError) as err:
            problem = str(err).splitlines()[0]
    if problem is not None:
        raise ArtifactError(f"cannot export {member.__name__} with dynamic_shapes=: the program that checks its "
                            f"data-dependent values ({'; '.join(g.describe() for g in member.value_guards[:3])}) "
                            f"cannot be polymorphic: {problem}\nwhy: a loaded artifact checks those values at every "
                            f"call, at every size its Dims allow\nfix: export without dynamic_shapes= (an artifact "
                            f"per size), or keep the decision in the program (torch.where instead of an `if` on "
                            f"tensor values)")
    names = {POLYMORPHIC: GUARDS_POLYMORPHIC, POLYMORPHIC_STABLEHLO: GUARDS_POLYMORPHIC_STABLEHLO}
    return {names[name]: data for name, data in files.items()}, spec


def _where(where: Any) -> str:
    """``file:line`` with the file's name only (an artifact holds no paths of the exporting machine)."""
    file, line = getattr(where, "file", None), getattr(where, "line", None)
    return f"{os.path.basename(file)}:{line}" if file else str(where)


def _guard(entry: Any, bad) -> Guard:
    if not isinstance(entry, dict) or set(entry) != {"name", "kind", "expected", "where"}:
        raise bad("a guard entry is not {name, kind, expected, where}")
    kind, expected = entry["kind"], entry["expected"]
    if kind not in ("bool", "int") or not isinstance(entry["name"], str) or not isinstance(entry["where"], str) \
            or type(expected) is not (bool if kind == "bool" else int):
        raise bad(f"a guard entry has a bad name, kind, expected value or location: {entry!r}"[:300])
    return Guard(entry["name"], expected, kind, entry["where"])


class LoadedGuards:
    """The guards of a loaded artifact (see the module docstring)."""

    def __init__(self, path: str, meta: dict, files: Dict[str, bytes], tensors: Dict[str, Any],
                 shapes: Sequence[Sequence[int]], device, cache_dir, bad):
        n_inputs = len(shapes)
        entries, names = meta.get("guards"), meta.get("guard_params")
        if not isinstance(entries, list) or not entries or not isinstance(names, list) or \
                not all(isinstance(n, str) for n in names):
            raise bad("metadata.json's guards are not a list of guards and guard_params a list of names")
        if GUARDS not in files:
            raise bad(f"metadata.json has guards but lists no {GUARDS}")
        self.guards: List[Guard] = [_guard(e, bad) for e in entries]
        checks = meta.get("guard_value_checks", [])
        try:
            if not isinstance(checks, list):
                raise ValueError("not a list")
            self.value_checks = tuple(ValueCheck.from_json(c) for c in checks)
        except ValueError as err:
            raise bad(f"metadata.json's guard_value_checks are malformed: {err}") from None
        program = program_interface(path, files[GUARDS])
        if len(program.arg_types) != n_inputs + len(names) or \
                len(program.result_types) != len(self.guards) + bool(self.value_checks):
            raise bad(f"{GUARDS} takes {len(program.arg_types)} arguments and returns {len(program.result_types)} "
                      f"results; "
                      f"the metadata says {n_inputs} inputs + {len(names)} weights and {len(self.guards)} guards")
        missing = [n for n in names if n not in tensors]
        if missing:
            raise bad(f"the weights file holds no {missing[0]!r}, which {GUARDS} reads")
        self.executable = compile_stablehlo(program.text, device, cache_dir=cache_dir, n_params=len(names))
        self.params = [to_device(tensors[n], device) for n in names]
        self.shapes = [tuple(s) for s in shapes]     # (the example's: self.executable's)
        self.device, self.cache_dir, self._bad = device, cache_dir, bad
        #: the polymorphic guard program (an artifact exported with dynamic_shapes=), or None
        self.symbolic = None
        if "symbolic" in meta:
            if "guard_symbolic" not in meta:
                raise bad("it has a polymorphic program and guards, but no polymorphic guard program "
                          "('guard_symbolic')")
            from .export_symbolic import PolymorphicArtifact
            self.symbolic = PolymorphicArtifact(path, meta, files, [s for s, _ in program.result_types], len(names),
                                                bad, "guard_symbolic",
                                                (GUARDS_POLYMORPHIC, GUARDS_POLYMORPHIC_STABLEHLO))

    def check(self, name: str, tensors: Sequence[Any]) -> None:
        """Raise :class:`GuardError` unless every guard holds for the call's input buffers ``tensors`` (at sizes
        other than the example's: the polymorphic guard program refined to them; the caller checked the sizes)."""
        executable = self.executable
        shapes = [tuple(t.shape) for t in tensors]
        if shapes != self.shapes:
            if self.symbolic is None:                   # (the caller refuses such shapes before: defensive)
                raise self._bad(f"its guard program takes the example's shapes {self.shapes} only, not {shapes}")
            executable, checks = self.symbolic.executable_for(shapes, self.device, self.cache_dir)
            if checks:
                check_input_indices(name, checks, tensors)
        values = executable(list(tensors) + self.params, wait=True)
        if self.value_checks:
            raise_failed(self.value_checks, values[-1], name)
        broken = check_guards(self.guards, values)
        if broken is not None:
            got = values[self.guards.index(broken)]
            got = bool(got) if broken.kind == "bool" else int(got)
            raise GuardError(
                f"{name}: these inputs give %{broken.name} = {got!r}, "
                f"but the artifact was exported for data where {broken.describe()}\n"
                f"why: the exported program was specialised to that data-dependent value (fxla.compile traces "
                f"again for other data; an artifact cannot), so it would compute a wrong answer\n"
                f"fix: call it with data that decides the same, export again with such inputs, or keep the decision "
                f"in the program (torch.where instead of an `if` on tensor values, fixed-size ops instead of "
                f"nonzero / x[mask])")
