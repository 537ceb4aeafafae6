"""Symbolic dimensions: dims marked dynamic, fake inputs of symbolic sizes, and the constraints a trace relied on.

``fxla.compile(model, dynamic={"x": {0: Dim("batch")}})`` (or ``dynamic=True``: every dim of every tensor
input) makes those dims *symbols*.  The program is then prepared (shape propagation, functionalization) once
on FakeTensors whose sizes are symbols of a torch ``ShapeEnv`` -- every node's ``tensor_meta`` and every size read
(``x.size(1)``) holds ``SymInt``\\ s such as ``s0`` or ``s0 // 4`` -- and lowered once into a polymorphic fxla
program (:mod:`fxla.dialects.fxla.symbolic`); each concrete size only refines it.

Whatever the trace and the lowering decided about a symbol (a ``view`` that needs ``seq % 4 == 0``, a broadcast
that needs two dims equal, a dim a rule had to read as a number) is a *guard* of the ``ShapeEnv``.
:class:`SymbolicShapes` records which graph node made each guard (its source line) and checks them, with the
user's :class:`Dim` bounds, for the sizes of every new call: :meth:`SymbolicShapes.violation` names the first
constraint the sizes break and the line that made it.

Sizes 0 and 1 are never symbols (torch's convention, shared with TorchDynamo: a dim of size 1 broadcasts, so a
program for it differs); a call where a dynamic dim has such a size is compiled for its shapes alone.
"""
from __future__ import annotations

import contextlib
import contextvars
import numbers
import sys
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import torch
from torch.utils import _pytree as pytree

from fxla.base.errors import FxlaError
from fxla.base.source import user_frame_location

from . import meta as M

__all__ = ["Dim", "DimError", "DynamicSpec", "ShapeConstraintError", "SymbolicShapes", "is_symbolic",
           "observe_node", "plain"]


class ShapeConstraintError(FxlaError):
    """A call's sizes break a constraint of a polymorphic program: a :class:`Dim`'s bounds or divisibility, two
    uses of one :class:`Dim` with different sizes, or a condition the traced program relied on (a ``view`` that
    needs ``seq % heads == 0``)."""


class DimError(FxlaError, ValueError):
    """A :class:`Dim` made with a name or range it cannot have (``Dim("n", min=1)``)."""


@dataclass(frozen=True)
class Dim:
    """A symbolic dimension (as ``torch.export.Dim``): ``Dim("seq", min=2, max=512, multiple_of=8)``.

    One ``Dim`` used for several inputs (``ids`` and ``mask``, dim 1) is one symbol: their sizes must agree.
    ``min`` is at least 2 (sizes 0 and 1 are compiled on their own; see the module docstring); ``max`` ``None``
    is unbounded; ``multiple_of`` is checked at every call."""

    name: str
    min: int = 2
    max: Optional[int] = None
    multiple_of: int = 1

    def __post_init__(self):
        where = user_frame_location(frame=sys._getframe(2))      # (the caller of the dataclass's __init__)
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise DimError(f"Dim name {self.name!r} must be a Python identifier", where=where,
                           fix="name it like a variable: Dim('seq')")
        if any(not isinstance(v, numbers.Integral) or isinstance(v, bool) for v in (self.min, self.multiple_of)) \
                or not (self.max is None or isinstance(self.max, numbers.Integral) and not isinstance(self.max, bool)):
            raise DimError(f"Dim({self.name!r}): min, max and multiple_of are ints (got min={self.min!r}, "
                           f"max={self.max!r}, multiple_of={self.multiple_of!r})", where=where,
                           fix="pass whole numbers (max=None: unbounded)")
        for field in ("min", "max", "multiple_of"):           # (numpy's ints as Python's)
            value = getattr(self, field)
            if value is not None and type(value) is not int:
                object.__setattr__(self, field, int(value))
        if self.min < 2:
            raise DimError(f"Dim({self.name!r}, min={self.min}): min must be at least 2", where=where,
                           why="why: sizes 0 and 1 are never symbolic (torch's and TorchDynamo's convention: a size-1 "
                               "dim broadcasts); a call where the Dim's dims have such a size is compiled for its "
                               "shapes alone, without a Dim, so min=2 already takes every size",
                           fix="leave min out (2); an exported artifact takes sizes from 2 only")
        if (self.max is not None and self.max < self.min) or self.multiple_of < 1:
            raise DimError(f"Dim({self.name!r}): need 2 <= min <= max and multiple_of >= 1 (got min={self.min}, "
                           f"max={self.max}, multiple_of={self.multiple_of})", where=where,
                           fix="pass a max of at least min, and a positive multiple_of")

    def problem(self, size: int) -> Optional[str]:
        """Why ``size`` is outside this dim's range, or ``None``."""
        if size < self.min:
            return f"{size} < min {self.min}"
        if self.max is not None and size > self.max:
            return f"{size} > max {self.max}"
        if size % self.multiple_of:
            return f"{size} is not a multiple of {self.multiple_of}"
        return None


class DynamicSpec:
    """The dims ``dynamic=`` marks: ``True`` (every dim of every tensor input) or ``{argument name: dims}``, where
    ``dims`` is ``{dim index: Dim}`` or a tuple with a ``Dim`` (or ``None``) per dim -- or, for an int argument,
    a ``Dim`` itself: the argument is that Dim's size (TorchDynamo's ``SymInt`` inputs), checked at every call.

    ``strict``: a Dim the program would fix to one size is an error (the default for named Dims); otherwise such
    dims simply stay fixed, and other sizes get a program of their own (``dynamic=True``, the torch.compile
    backend)."""

    def __init__(self, dynamic: Any, error, fix: str, strict: Optional[bool] = None):
        self._error = error           # (what, fix) -> the exception to raise (the caller's option error)
        self.all = dynamic is True
        self.strict = (not self.all) if strict is None else strict
        self.by_name: Dict[str, Dict[int, Dim]] = {}
        self.ints: Dict[str, Dim] = {}
        self.ranks: Dict[str, int] = {}             # (a tuple spec: one entry per dim of the tensor)
        if self.all:
            return
        if not isinstance(dynamic, dict) or not dynamic:
            raise self._error(f"dynamic={dynamic!r} is not True or a dict of argument names", fix)
        for name, dims in dynamic.items():
            if isinstance(dims, Dim) and isinstance(name, str):
                self.ints[name] = dims
                continue
            if isinstance(dims, (tuple, list)):
                self.ranks[name] = len(dims)
                dims = {i: d for i, d in enumerate(dims) if d is not None}
            if not isinstance(name, str) or not isinstance(dims, dict) or \
                    not all(isinstance(i, int) and isinstance(d, Dim) for i, d in dims.items()):
                raise self._error(f"dynamic[{name!r}] = {dims!r} is not {{dim index: fxla.Dim}} or a tuple of "
                                  f"fxla.Dim/None", fix)
            self.by_name[name] = dict(dims)
        named: Dict[str, Dim] = {}
        for dim in [d for dims in self.by_name.values() for d in dims.values()] + list(self.ints.values()):
            if named.setdefault(dim.name, dim) != dim:      # (one name is one symbol: one range)
                raise self._error(f"two Dims named {dim.name!r} differ: {named[dim.name]} and {dim}",
                                  "use one Dim object for dims that are one size, or give the Dims other names")

    def restricted(self, names: Sequence[str]) -> "DynamicSpec":
        """This spec for a program that takes only the arguments ``names`` (a ``concrete_shapes`` trace of a call
        that leaves some arguments at their defaults): the Dims of other arguments left out."""
        spec = object.__new__(DynamicSpec)
        spec.__dict__.update(self.__dict__)
        spec.by_name = {k: v for k, v in self.by_name.items() if k in names}
        spec.ints = {k: v for k, v in self.ints.items() if k in names}
        return spec

    def check_names(self, names: Sequence[str], fix: str) -> None:
        unknown = sorted((set(self.by_name) | set(self.ints)) - set(names))
        if unknown:
            raise self._error(f"dynamic= names {unknown}, which the traced program does not take (it takes "
                              f"{', '.join(names)})", fix)

    def dims(self, names: Sequence[str], args: Sequence[Any]) -> Tuple[Dict[int, Dict[int, Dim]], Dict[int, Dim]]:
        """``({tensor leaf index: {dim: Dim}}, {int leaf index: Dim})`` for a call's arguments (in placeholder
        order)."""
        out: Dict[int, Dict[int, Dim]] = {}
        ints: Dict[int, Dim] = {}
        leaf = 0
        for name, value in zip(names, args):
            leaves = pytree.tree_leaves(value)
            if name in self.ints:
                if not (len(leaves) == 1 and type(leaves[0]) is int):
                    raise self._error(f"dynamic[{name!r}] is a Dim, but {name} is not an int",
                                      "mark dims of a tensor argument with {dim: fxla.Dim(...)}")
                ints[leaf] = self.ints[name]
            for k, v in enumerate(leaves):
                if isinstance(v, torch.Tensor):
                    if self.all:
                        out[leaf + k] = {d: Dim(f"{name}_{k}_{d}" if len(leaves) > 1 else f"{name}_{d}")
                                         for d in range(v.dim())}
                    elif name in self.by_name:
                        if len(leaves) > 1:
                            raise self._error(f"dynamic[{name!r}]: argument {name} is a container of tensors; "
                                              f"dims can be marked on tensor arguments only",
                                              "pass the tensors as separate arguments, or use dynamic=True")
                        dims = self.by_name[name]
                        if self.ranks.get(name, v.dim()) != v.dim():
                            raise self._error(f"dynamic[{name!r}] is a tuple of {self.ranks[name]} entries, but "
                                              f"{name} has {v.dim()} dims", "give one entry (a Dim or None) per dim")
                        bad = [i for i in dims if not -v.dim() <= i < v.dim()]
                        if bad:
                            raise self._error(f"dynamic[{name!r}] marks dim(s) {bad}, but {name} has "
                                              f"{v.dim()} dims", "mark dims the tensor has")
                        out[leaf + k] = {i % v.dim(): d for i, d in dims.items()}
            leaf += len(leaves)
        return out, ints


def is_symbolic(value: Any) -> bool:
    """Whether ``value`` (a number, ``torch.Size`` or a container of them) holds a ``SymInt``, ``SymFloat`` or
    ``SymBool`` that is not a constant."""
    return any(isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)) and v.node.maybe_as_int() is None
               and v.node.maybe_as_bool() is None and v.node.maybe_as_float() is None
               for v in pytree.tree_leaves(value))


def plain(value: Any) -> Any:
    """``value`` (a number, ``torch.Size`` or a container of them) with each ``SymInt`` / ``SymFloat`` /
    ``SymBool`` whose value is known (a size the trace fixed) as the Python number; symbolic ones unchanged."""
    def one(v):
        if isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            known = v.node.maybe_as_int() if isinstance(v, torch.SymInt) else \
                v.node.maybe_as_float() if isinstance(v, torch.SymFloat) else v.node.maybe_as_bool()
            return v if known is None else known
        if isinstance(v, torch.Size):       # (torch's pytree would make it a tuple)
            return torch.Size([one(d) for d in v]) if not is_symbolic(v) else v
        return v
    return pytree.tree_map(one, value, is_leaf=_is_size)


def _is_size(value: Any) -> bool:
    return isinstance(value, torch.Size)


# ---- which node made which guard ----------------------------------------------------------------------------------
_OBSERVER: contextvars.ContextVar = contextvars.ContextVar("fxla_symbolic_observer", default=None)


def observe_node(node) -> None:
    """Called by shape propagation and the lowering before each node: guards added from now on are its."""
    observer = _OBSERVER.get()
    if observer is not None:
        observer(node)


class SymbolicShapes:
    """The symbols of one polymorphic program: a ``ShapeEnv``, a FakeTensorMode over it, one symbol per
    :class:`Dim` and where each is read (``bindings``: symbol name -> ``(tensor leaf index, dim)``)."""

    def __init__(self, dims: Dict[int, Dict[int, Dim]], leaves: Sequence[Any], ints: Optional[Dict[int, Dim]] = None):
        from torch._dynamo.source import ConstantSource
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv
        self.env = ShapeEnv()
        self.mode = FakeTensorMode(shape_env=self.env, allow_non_fake_inputs=True)
        self.dims: Dict[str, Dim] = {}
        self.symbols: Dict[str, Any] = {}              # Dim name -> sympy Symbol
        self.sizes: Dict[str, torch.SymInt] = {}       # Dim name -> its SymInt
        self.bindings: Dict[Any, Tuple[int, int]] = {}     # sympy Symbol -> (tensor leaf index, dim)
        self.uses: Dict[str, List[Tuple[int, int]]] = {}   # Dim name -> every (leaf, dim) it marks
        self._marks: List[Tuple[int, Any]] = []        # (guard count when a node began, the node)
        #: how many of the first guards a trace made (``concrete_shapes=True``: what its Python decided)
        self.traced = 0
        for leaf, marked in sorted(dims.items()):
            for d, dim in sorted(marked.items()):
                size = int(leaves[leaf].shape[d])
                if dim.name not in self.symbols:
                    symbol = self.env.create_symbol(size, source=ConstantSource(dim.name),
                                                    dynamic_dim=DimDynamic.DYNAMIC)
                    self.dims[dim.name] = dim
                    self.symbols[dim.name] = symbol
                    self.sizes[dim.name] = self.env.create_symintnode(symbol, hint=size)
                    self.bindings[symbol] = (leaf, d)
                self.uses.setdefault(dim.name, []).append((leaf, d))
        #: int leaf index -> the Dim whose size it is (only Dims that mark a tensor dim: the program reads sizes
        #: off its tensor arguments)
        self.ints = {leaf: dim.name for leaf, dim in (ints or {}).items() if dim.name in self.symbols}
        self.fake_leaves = self._fakes(dims, leaves)
        for leaf, name in self.ints.items():
            self.fake_leaves[leaf] = self.sizes[name]

    def _fakes(self, dims, leaves) -> List[Any]:
        out = []
        with self.mode:
            for i, v in enumerate(leaves):
                if isinstance(v, torch.Tensor) and i in dims:
                    shape = [self.sizes[dims[i][d].name] if d in dims[i] else n for d, n in enumerate(v.shape)]
                    out.append(torch.empty(shape, dtype=v.dtype))
                else:
                    out.append(v)
        return out

    @contextlib.contextmanager
    def tracing(self) -> Iterator[None]:
        """Shape propagation runs inside: FakeTensorMode on, guards attributed to nodes."""
        with self.observing(), self.mode:
            yield

    @contextlib.contextmanager
    def observing(self) -> Iterator[None]:
        """The lowering runs inside: guards attributed to nodes (real tensors stay real)."""
        token = _OBSERVER.set(self._observe)
        try:
            yield
        finally:
            _OBSERVER.reset(token)

    def _observe(self, node) -> None:
        self._marks.append((len(self.env.guards), node))

    def named(self, text: str) -> str:
        """``text`` (a printed size expression) with each symbol spelled as its Dim's name."""
        import re
        names = {str(symbol): name for name, symbol in self.symbols.items()}
        return re.sub(r"\b[su]\d+\b", lambda m: names.get(m.group(0), m.group(0)), text)

    def normalize(self, size: Any) -> Any:
        """A ``SymInt`` that is a known constant as an int; anything else unchanged."""
        if isinstance(size, torch.SymInt):
            value = size.node.maybe_as_int()
            if value is None:          # (constant under the symbols' ranges: Max(0, s - 1) + 1 - s for s >= 2)
                static = self.env._maybe_evaluate_static(size.node.expr)
                value = int(static) if static is not None and static.is_Integer else None
            return size if value is None else value
        return size

    # -- after lowering -------------------------------------------------------------------------------------------
    def _node_of(self, index: int):
        node = None
        for start, n in self._marks:
            if start > index:
                break
            node = n
        return node

    def specialized(self) -> List[Tuple[str, int, Any]]:
        """``(Dim name, size, node)`` for each symbol the trace or the lowering fixed to one size (a rule that
        needed it as a number; an op whose shape rule compares it with a constant), or pinned to a size or two by
        a guard over it alone (:meth:`_pinning_guard`: ``Tensor.unfold``'s window count, float math on a size)."""
        import sympy
        out = []
        for name, symbol in self.symbols.items():
            value = self.env.replacements.get(symbol)
            if isinstance(value, sympy.Integer):
                index = next((i for i, g in enumerate(self.env.guards) if symbol in g.expr.free_symbols), 0)
                out.append((name, int(value), self._node_of(index)))
                continue
            index = self._pinning_guard(symbol)
            if index is not None:
                out.append((name, int(self.env.backed_var_to_val[symbol]), self._node_of(index)))
        return out

    def _pinning_guard(self, symbol) -> Optional[int]:
        """The index of a guard over ``symbol`` alone that holds at no more than two of the sizes tried, within its
        range: those up to 32 either side of the traced one, and the traced one plus powers of two and times 2, 3
        and 5 (``Eq((n - 3) // 2 + 1, 4)``, ``Eq(ToFloat(n) - 0.5, 9.5)``).  Such a program is right for those sizes
        only, as if the size were fixed; a divisibility guard (``Mod(n, 64)`` is 0) holds at several of them, and
        is a constraint.  ``None`` when there is none."""
        import sympy
        traced = int(self.env.backed_var_to_val[symbol])
        bounds = self.env.var_to_range.get(symbol)
        low = int(bounds.lower) if bounds is not None and bounds.lower.is_Integer else 2
        high = int(bounds.upper) if bounds is not None and bounds.upper.is_Integer else 1 << 62
        near = range(max(low, 2, traced - 32), min(high, traced + 32) + 1)
        if len(near) < 8:
            return None
        far = {traced + (1 << j) for j in range(6, 13)} | {traced * k for k in (2, 3, 5)}
        sizes = list(near) + sorted(n for n in far if low <= n <= high and n not in near)
        for index, guard in enumerate(self.env.guards):
            expr = self.env.replace(guard.expr)
            if not isinstance(expr, sympy.Eq) or expr.free_symbols != {symbol}:    # (a range holds at many sizes)
                continue
            held = 0
            try:
                for n in sizes:
                    held += bool(expr.xreplace({symbol: sympy.Integer(n)}))
                    if held > 2:
                        break
            except (TypeError, ValueError, ZeroDivisionError):
                continue
            if held <= 2:
                return index
        return None

    def values(self, leaves: Sequence[Any]) -> Dict[str, int]:
        """Each Dim's size in a call's tensor leaves (from its first use)."""
        return {name: int(leaves[self.uses[name][0][0]].shape[self.uses[name][0][1]]) for name in self.symbols}

    def concrete(self, value: Any, sizes: Dict[str, int]) -> Any:
        """``value`` (a number, ``torch.Size`` or container of them, as shape propagation recorded it) with every
        ``SymInt``/``SymFloat``/``SymBool`` evaluated at the Dims' ``sizes`` (a program's non-tensor outputs:
        ``x.size(1)`` returned is the call's size, not the traced one)."""
        import sympy
        subs = {symbol: sympy.Integer(sizes[name]) for name, symbol in self.symbols.items()}

        def one(v):
            if isinstance(v, torch.SymInt):
                return int(self.env.replace(v.node.expr).xreplace(subs))
            if isinstance(v, torch.SymFloat):
                return float(self.env.replace(v.node.expr).xreplace(subs))
            if isinstance(v, torch.SymBool):
                return bool(self.env.replace(v.node.expr).xreplace(subs))
            if isinstance(v, torch.Size):
                return torch.Size([one(d) for d in v])
            return v
        return pytree.tree_map(one, value, is_leaf=_is_size)

    def violation(self, leaves: Sequence[Any], names: Sequence[str],
                  guards: Optional[int] = None) -> Optional[ShapeConstraintError]:
        """The first constraint a call's sizes break (``names``: the tensor leaves' names for messages), or
        ``None``: two uses of one Dim disagreeing, a Dim's bounds, then the guards in the order they were made
        (``guards``: only the first so many: those of the trace, :attr:`traced`, not of its lowerings)."""
        import sympy
        values = self.values(leaves)
        for leaf, name in self.ints.items():
            if leaves[leaf] != values[name]:
                first, d = self.uses[name][0]
                return ShapeConstraintError(f"{names[leaf]} = {leaves[leaf]}, but it is the size of Dim {name!r}, "
                                            f"{names[first]}.size({d}) = {values[name]}",
                                            why="the int argument was marked as that Dim's size",
                                            fix="pass the size itself")
        for name, uses in self.uses.items():
            sizes = {(names[leaf], d): int(leaves[leaf].shape[d]) for leaf, d in uses}
            if len(set(sizes.values())) > 1:
                shown = ", ".join(f"{n}.size({d}) = {s}" for (n, d), s in sizes.items())
                return ShapeConstraintError(f"dims marked with one Dim {name!r} have different sizes: {shown}",
                                            why="one Dim is one symbol of the compiled program",
                                            fix="pass inputs whose marked dims agree, or mark them with separate Dims")
        for name, dim in self.dims.items():
            problem = dim.problem(values[name])
            if problem is not None:
                leaf, d = self.uses[name][0]
                return ShapeConstraintError(f"{names[leaf]}.size({d}) (Dim {name!r}) = {problem}",
                                            why=f"the program was compiled for {name} in [{dim.min}, "
                                                f"{'inf' if dim.max is None else dim.max}], a multiple of "
                                                f"{dim.multiple_of}",
                                            fix="pass sizes in the Dim's range, or widen the Dim")
        subs = {symbol: sympy.Integer(values[name]) for name, symbol in self.symbols.items()}
        for i, guard in enumerate(self.env.guards[:guards]):
            expr = guard.expr
            if not expr.free_symbols:
                continue
            try:
                holds = bool(expr.xreplace(subs))
            except TypeError:
                holds = False
            if not holds:
                node = self._node_of(i)
                shown = self.named(str(expr))
                where = node.meta.get(M.SOURCE) if node is not None else None
                op = f" (by %{node.name})" if node is not None else ""
                sizes = ", ".join(f"{n} = {v}" for n, v in values.items())
                why = ("the model's Python decided something from the sizes while tracing (a branch, a number), "
                       "and the traced program is what it decided where the constraint holds" if i < self.traced
                       else "the program was traced and lowered once for every size its Dims allow, and this op's "
                            "result is only defined (or only the same program) where the constraint holds")
                return ShapeConstraintError(
                    f"the sizes of this call ({sizes}) break the constraint {shown} that the compiled program "
                    f"relies on{op}", where=where, why=why,
                    fix="pass sizes that satisfy it (eager PyTorch would fail or take another path otherwise), or "
                        "narrow the Dim (min/max/multiple_of) so the constraint is part of it")
        return None
