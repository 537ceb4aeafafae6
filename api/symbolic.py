"""``fxla.compile(model, dynamic=...)``: one trace and one lowering for every size of the dims marked dynamic.

:class:`SymbolicPrograms` is what a :class:`~fxla.CompiledModule` with ``dynamic=`` lowers through.  For the
first call of each *symbolic signature* (the call's signature with the marked dims left out) it prepares the
traced graph on FakeTensors whose marked sizes are symbols and lowers it once to a polymorphic fxla program
(:mod:`fxla.frontend.symbolic`, :mod:`fxla.lowering.symbolic`).  Every call with new sizes then

1. checks the program's constraints -- the :class:`~fxla.Dim` bounds, and every condition the trace and the
   lowering relied on (:meth:`~fxla.frontend.symbolic.SymbolicShapes.violation`) -- raising
   :class:`~fxla.ShapeConstraintError` with the constraint and the source line that made it;
2. refines the program to its sizes (pipeline stage ``refine``: no trace, shape propagation or lowering rule
   runs again) and converts it to StableHLO; the module compiles that in XLA and caches the executable per
   signature, as for any signature.

With ``dynamic=True`` (every dim of every tensor input) dims the program needs fixed -- a ``Linear``'s feature
dim, a dim compared with a constant -- simply stay fixed: sizes that break such a condition get a polymorphic
program of their own (logged).  Dims named with a :class:`~fxla.Dim` must stay symbolic: a program that would fix
one raises :class:`~fxla.ShapeConstraintError` at its first compile, naming the op.  A marked dim of size 0 or 1
is never symbolic (torch's convention): such a call is compiled for its shapes alone (logged).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Sequence, Tuple

import torch
from torch.utils import _pytree as pytree

from fxla.base.logs import COMPILE as logger
from fxla.errors import FxlaError
from fxla.lowering.errors import LoweringError
from fxla.lowering.registry import describe, op_key
from fxla.frontend.symbolic import DynamicSpec, ShapeConstraintError, SymbolicShapes
from fxla.runtime.buffers import example_tensor, is_array

from .pipeline import Stages

__all__ = ["SymbolicPrograms", "DynamicSpec", "CallSignature", "concrete_program", "leaf_names", "marked_dims",
           "symbolic_key", "fixed_dim_error"]


class _Polymorphic:
    """One polymorphic program: its symbols, prepared graph and fxla program."""

    def __init__(self, symbols: SymbolicShapes, prepared, program, stablehlo=None):
        self.symbols, self.prepared, self.program = symbols, prepared, program
        #: the polymorphic StableHLO (bytecode) each size refines, or None (each size converts its fxla program)
        self.stablehlo = stablehlo


@dataclasses.dataclass
class CallSignature:
    """A call as :class:`SymbolicPrograms` sees it: its flat ``leaves`` and their ``tree``, the marked ``dims``
    (tensor leaf -> {dim: Dim}) and ``ints`` (int leaf -> Dim) that can be symbols, the symbolic signature ``key``
    (``None`` where the call is compiled for its shapes alone) and the leaves' names for messages."""

    leaves: List[Any]
    tree: Any
    dims: Dict[int, Dict[int, Any]]
    ints: Dict[int, Any]
    key: Any
    leaf_names: List[str]


class SymbolicPrograms:
    """The polymorphic programs of one compiled module (see the module docstring)."""

    def __init__(self, dynamic: Any, error):
        self.spec = dynamic if isinstance(dynamic, DynamicSpec) else \
            DynamicSpec(dynamic, error, "pass dynamic=True, or {argument name: {dim: fxla.Dim(name)}}")
        self.programs: Dict[Any, List[_Polymorphic]] = {}
        self.static: set = set()                # symbolic signatures that cannot be polymorphic (not strict)
        self.lowerings = 0                      # polymorphic programs lowered so far (for tests and the log)
        #: (symbolic signature, "gradient" or "step", what else tells them apart) -> the polymorphic gradient
        #: programs or training steps of those calls (:mod:`fxla.symbolic_gradients`); the keys that cannot be
        #: polymorphic
        self.gradients: Dict[Any, List[Any]] = {}
        self.static_gradients: set = set()
        #: id(graph) -> the symbols its trace was made with (a ``concrete_shapes`` trace with symbolic sizes,
        #: :mod:`fxla.per_shape`): the first polymorphic program of that graph uses them, and so its guards
        self._seeds: Dict[int, SymbolicShapes] = {}

    def forget(self) -> None:
        """Drop every polymorphic program and training step (a trace changed the model's structure: they hold its
        old tensors)."""
        self.programs, self.static, self.gradients, self.static_gradients = {}, set(), {}, set()

    @classmethod
    def seeded(cls, spec: DynamicSpec, gm, symbols: SymbolicShapes, error) -> "SymbolicPrograms":
        """The polymorphic programs of ``gm``, traced with ``symbols``' sizes (a ``concrete_shapes`` trace of a
        ``dynamic=`` module, :mod:`fxla.per_shape`): the Dims of ``spec`` on the arguments ``gm`` takes, and its
        first polymorphic program lowered with those symbols (so with the trace's guards)."""
        programs = cls(spec.restricted([n.target for n in gm.graph.nodes if n.op == "placeholder"]), error)
        programs._seeds[id(gm)] = symbols
        return programs

    def polymorphic(self, module, gm, args: Sequence[Any]) -> _Polymorphic:
        """The polymorphic program ``args`` run (lowered now if new), for :func:`fxla.export`; raises
        :class:`~fxla.ShapeConstraintError` where a call with these arguments would not use one."""
        poly, _ = self._select(module, gm, args)
        if poly is None:
            raise ShapeConstraintError(f"{module.__name__}: no polymorphic program for these inputs: a marked dim has "
                                       f"size 0 or 1, or an op cannot be lowered with symbolic sizes (see the "
                                       f"'fxla.compile' log)", fix="export with example inputs whose marked dims are "
                                       ">= 2, or without dynamic_shapes=")
        return poly

    def lower(self, module, gm, args: Sequence[Any]) -> Stages:
        """The :class:`Stages` of ``args``' signature: refined from a polymorphic program (lowered now if its
        symbolic signature is new), or lowered for these shapes alone when no marked dim can be a symbol."""
        poly, leaves = self._select(module, gm, args)
        pipeline = module._pipeline
        if poly is None:
            return pipeline.lower(gm, args)
        shapes = [tuple(v.shape) for v in leaves if isinstance(v, torch.Tensor)]
        program = concrete_program(poly.symbols, pipeline.refine(poly.program, shapes), leaves)
        stablehlo = None
        if poly.stablehlo is not None:
            try:
                stablehlo = pipeline.refine_stablehlo(poly.stablehlo, program)
            except LoweringError as err:     # (sizes StableHLO's refinement cannot take: fxla's refinement can)
                logger.info("%s: the polymorphic StableHLO does not refine to %s (%s): this program converts its "
                            "refined fxla program per size from now on", module.__name__, shapes,
                            str(err).splitlines()[0][:300])
                poly.stablehlo = None
        if stablehlo is None:
            stablehlo = pipeline.to_stablehlo(program)
        return Stages(str(gm.graph), gm.code, program.text(), stablehlo.operation.get_asm(),
                      stablehlo.operation.get_asm(enable_debug_info=True), program, poly.prepared)

    def signature(self, module, gm, args: Sequence[Any], log: bool = True) -> CallSignature:
        """The :class:`CallSignature` of a call with ``args``."""
        names = [n.target for n in gm.graph.nodes if n.op == "placeholder"]
        self.spec.check_names(names, "use the names of the model's forward arguments")
        leaves, tree, dims, ints, small = marked_dims(self.spec, names, args)
        names_of_leaves = leaf_names(names, args)
        if small or not dims:
            if small and log:
                logger.info("%s: %s not symbolic (sizes 0 and 1 never are): compiled for these shapes alone",
                            module.__name__, ", ".join(f"{names_of_leaves[leaf]}.size({d}) = "
                                                       f"{leaves[leaf].shape[d]}" for leaf, d in small))
            return CallSignature(leaves, tree, dims, ints, None, names_of_leaves)
        key = (module._modes.mode, id(gm), str(tree), symbolic_key(leaves, dims, ints))
        return CallSignature(leaves, tree, dims, ints, None if key in self.static else key, names_of_leaves)

    def _select(self, module, gm, args: Sequence[Any]):
        """``(the polymorphic program args run -- lowered now if new -- or None, the call's leaves)``: ``None``
        where these shapes are compiled alone (no marked dim can be a symbol, or the program cannot be
        polymorphic and the spec is not strict)."""
        call = self.signature(module, gm, args)
        leaves, tree, dims, ints, key, leaf_names = (call.leaves, call.tree, call.dims, call.ints, call.key,
                                                     call.leaf_names)
        if key is None:
            return None, leaves
        variants = self.programs.setdefault(key, [])
        for candidate in variants:
            problem = candidate.symbols.violation(leaves, leaf_names)
            if problem is None:
                return candidate, leaves
            if self.spec.strict:
                raise problem           # a named Dim's constraint: the user's sizes break it
        poly = self._lower(module, gm, args, dims, ints, leaves, tree, leaf_names)
        if poly is None:                # (not strict, and the program cannot be polymorphic: logged)
            self.static.add(key)
            return None, leaves
        variants.append(poly)
        return poly, leaves

    def _lower(self, module, gm, args, dims, ints, leaves, tree, leaf_names):
        symbols = self._seeds.pop(id(gm), None) or SymbolicShapes(dims, leaves, ints)
        problem = symbols.violation(leaves, leaf_names)     # (the first call's sizes are the trace's: a Dim's bounds,
        if problem is not None:                             # its uses' agreement and its int size hold, or no trace)
            raise problem
        fakes = pytree.tree_unflatten(symbols.fake_leaves, tree)
        try:
            prepared = module._pipeline.prepare(gm, fakes, symbols=symbols)
            program = module._pipeline.to_fxla(prepared, symbols=symbols)
        except (FxlaError, ValueError, TypeError, RuntimeError, AttributeError) as err:
            # an op whose lowering (or torch's shape rule) cannot take symbolic sizes yet: the shapes of this call
            # are lowered on their own (a static lowering raises what is wrong with the program itself, if anything)
            first = symbols.named(str(err).splitlines()[0]) if str(err) else type(err).__name__   # (s3 -> seq)
            if self.spec.strict:
                module._symbolic_failed = True              # (a concrete-shapes trace of it is no variant: per_shape)
                _raise_static_error(module, gm, args)      # (what is wrong at these very shapes, if anything)
                raise ShapeConstraintError(
                    f"the program cannot be lowered once for every size of its Dims: {first}",
                    where=getattr(err, "where", None),
                    why="an op on the way (its lowering rule, or torch's shape rule) cannot take symbolic sizes yet",
                    fix="leave the dims that op sees static (drop them from dynamic=), or compile with "
                        "dynamic=True, which lowers such programs per size") from err
            logger.info("%s: no polymorphic program for symbolic dims %s (%s): compiled for these shapes alone",
                        module.__name__, ", ".join(symbols.symbols), first)
            module._phases_abandoned("polymorphic attempt")
            return None
        fixed = symbols.specialized()
        if fixed and self.spec.strict:
            node = fixed[0][2]
            module._symbolic_failed = True
            raise fixed_dim_error(
                fixed, f"{_op_text(node, gm) if node is not None else 'an op'} needs it to be",
                why="that op's shape rule (torch's, or fxla's lowering of it) reads the size as a fixed number, so "
                    "the program would only be right for this size",
                fix="leave that dim static (drop it from dynamic=), or pad it to a few fixed sizes")
        self.lowerings += 1
        marked = ", ".join(f"{name} ({leaf_names[uses[0][0]]}.size({uses[0][1]}))"
                           for name, uses in symbols.uses.items())
        logger.info("%s: polymorphic program #%d traced and lowered once for symbolic dims %s%s",
                    module.__name__, self.lowerings, marked,
                    "" if not fixed else "; fixed by the program: " + ", ".join(
                        f"{n} = {s}" + (f" (by %{node.name}{_at(node)})" if node is not None else "")
                        for n, s, node in fixed))
        stablehlo, why_not = module._pipeline.polymorphic_stablehlo(program)
        if stablehlo is None:
            logger.info("%s: no polymorphic StableHLO for program #%d (%s): each size converts its refined fxla "
                        "program", module.__name__, self.lowerings, why_not)
        return _Polymorphic(symbols, prepared, program, stablehlo)


def concrete_program(symbols: SymbolicShapes, program, leaves: Sequence[Any]):
    """``program`` (refined from a polymorphic one of ``symbols``) with the numbers among its outputs and written
    attributes (``x.size(1)`` returned) evaluated at the sizes of the call's ``leaves``."""
    sizes = symbols.values(leaves)
    return dataclasses.replace(
        program, output_static=[symbols.concrete(v, sizes) for v in program.output_static],
        written_attributes=[dataclasses.replace(w, leaves=[symbols.concrete(v, sizes) for v in w.leaves])
                            for w in program.written_attributes])


def _op_text(node, root) -> str:
    """``%name (function torch.nn.functional.adaptive_max_pool2d)``: a node and the op it calls, by its public name
    (not the repr of a wrapper such as torch's ``boolean_dispatch`` functions)."""
    try:
        key = op_key(node, root)
    except AttributeError:              # (a module path the root does not hold)
        key = None
    return f"%{node.name} ({describe(key, node)})" if key is not None else f"%{node.name} ({node.target})"


def _at(node) -> str:
    where = node.meta.get("source")
    return f" at {where.file}:{where.line}" if where is not None and getattr(where, "file", None) else ""


def marked_dims(spec: DynamicSpec, names: Sequence[str], args: Sequence[Any]):
    """``(leaves, tree, dims, ints, small)`` of a call's ``args`` (by parameter ``names``): its flat leaves (arrays
    as torch examples), the dims ``spec`` marks (tensor leaf -> {dim: Dim}) and ints, and the marked dims of size 0
    or 1, ``(leaf, dim)``, which are never symbols (with ``dynamic=True`` such a dim -- a broadcast dim -- is simply
    left out, so none is left)."""
    leaves, tree = pytree.tree_flatten(tuple(args))
    leaves = [example_tensor(v) if is_array(v) else v for v in leaves]
    dims, ints = spec.dims(names, args)
    if not spec.strict:
        dims = {leaf: kept for leaf, kept in ((leaf, {d: m for d, m in marked.items() if leaves[leaf].shape[d] >= 2})
                                              for leaf, marked in dims.items()) if kept}
    small = [(leaf, d) for leaf, marked in dims.items() for d in marked if leaves[leaf].shape[d] < 2]
    return leaves, tree, dims, ints, small


def leaf_names(names: Sequence[str], args: Sequence[Any]) -> List[str]:
    out = []
    for name, value in zip(names, args):
        leaves = pytree.tree_leaves(value)
        out.extend([name] if len(leaves) == 1 else [f"{name}[{i}]" for i in range(len(leaves))])
    return out



def fixed_dim_error(fixed, reason: str, why: str, fix: str) -> ShapeConstraintError:
    """The error for a strict ``Dim`` that a trace or lowering fixed (``fixed``: ``SymbolicShapes.specialized()``,
    the first one named): ``Dim 'seq' cannot stay symbolic: <reason> <size>``, at the node's source line."""
    name, size, node = fixed[0]
    return ShapeConstraintError(
        f"Dim {name!r} cannot stay symbolic: {reason} {size}" + (f" (at %{node.name})" if node is not None else ""),
        where=node.meta.get("source") if node is not None else None, why=why, fix=fix)

def symbolic_key(leaves: Sequence[Any], dims: Dict[int, Dict[int, Any]], ints: Dict[int, Any]) -> Tuple:
    """The call's signature with the marked dims (and the ints that are their sizes) left out (``None``)."""
    marked = {dim.name for m in dims.values() for dim in m.values()}
    out = []
    for i, v in enumerate(leaves):
        if i in ints and ints[i].name in marked:
            out.append(("size", ints[i].name))
        elif isinstance(v, torch.Tensor):
            these = dims.get(i, {})
            out.append(("tensor", v.dtype, tuple(None if d in these else n for d, n in enumerate(v.shape))))
        else:
            out.append(("static", type(v), v))
    return tuple(out)


def _raise_static_error(module, gm, args) -> None:
    """Raise the error a lowering of the call's shapes alone raises, if it does: an op fxla cannot lower at any
    shape, or arguments eager refuses too (a recurrent state of the wrong shape), is that error, not a Dim's.
    (Only on the way to an error: a named Dim's program that cannot be polymorphic is refused either way.)"""
    try:
        module._pipeline.to_fxla(module._pipeline.prepare(gm, args))
    except FxlaError:
        raise
    except Exception:  # noqa: BLE001  (not an error of fxla's: the Dim's error says what it can)
        return
