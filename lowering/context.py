"""The state a lowering rule sees while one graph is lowered to the fxla dialect."""
from __future__ import annotations

from typing import Dict, List, Optional

import torch

import numpy as np

from fxla.frontend import meta as M
from fxla.dialects.fxla import Sig, ops, sig_of, type_of
from fxla.dialects.fxla import symbolic
from fxla.dialects.fxla.opdef import elem_type, value_sig
from fxla.dialects.fxla.types import UNSIGNED_TYPES, bit_width, is_float, same_shape
from fxla.frontend import TensorMeta
from fxla.dialects.mlir import ir

from .dtypes import mlir_type, sig_of_meta
from .errors import node_error
from .index_bounds import VALUE_KEEPING
from .registry import RULES
from .value_checks import ValueCheck, where_of


class Emitter:
    """What every builder of fxla ops has: ``emit`` at its location ``loc``, scalar constants (``tensor``) and the
    shared building blocks (``convert``, ``reshape``, ``expand``, ``slice_dim``, ``int_constant``).  Lowering rules
    get a :class:`LoweringContext`, VJP rules a :class:`fxla.lowering.autodiff.VJPContext`; subclasses give
    ``error(what, why, fix)`` and set ``loc``."""

    def __init__(self) -> None:
        self.loc: Optional[ir.Location] = None
        self._scalars: Dict[tuple, ir.Attribute] = {}

    def error(self, what: str, why: str, fix: str):
        raise NotImplementedError

    # -- building ------------------------------------------------------------------------------------------------
    def emit(self, opdef, *operands, result_type: Optional[ir.Type] = None, **attrs) -> ir.Value:
        return opdef(*operands, loc=self.loc, result_type=result_type, **attrs)

    def tensor(self, value, like: Optional[object] = None) -> ir.Value:
        if isinstance(value, ir.Value):
            return value
        scope = symbolic.current()
        if scope is not None and isinstance(value, torch.SymInt):
            value = scope.normalize(value)
            if symbolic.is_sym(value):       # a symbolic size used as a number: computed by the program
                return self.convert(scope.materialize(value),
                                    scalar_elem(1, value_sig(like).elem if isinstance(like, ir.Value) else None))
        elif isinstance(value, (torch.SymFloat, torch.SymBool)):
            # a number computed from sizes (1 / n in a batch norm): read at the traced sizes, which makes a guard
            # (the program is then only used for sizes that give this number)
            value = float(value) if isinstance(value, torch.SymFloat) else bool(value)
        if not isinstance(value, (bool, int, float)):
            raise self.error(f"expected a tensor or a Python number, got {type(value).__name__}",
                             "fxla lowers tensors and scalar constants only",
                             "pass a tensor, or make the value a constant outside the traced code")
        elem = scalar_elem(value, value_sig(like).elem if isinstance(like, ir.Value) else None)
        # the 0-d splat attribute, made once per (element type, value) in this lowering (floats keyed by their
        # exact bits: -0.0 and 0.0 differ)
        key = (elem, type(value), value.hex() if isinstance(value, float) else value)
        dense = self._scalars.get(key)
        if dense is None:
            scalar_type = elem_type(elem)
            if is_float(elem):
                scalar = ir.FloatAttr.get(scalar_type, float(value))
            else:
                v = int(value)
                scalar = ir.IntegerAttr.get(scalar_type, v % (1 << bit_width(elem)) if elem in UNSIGNED_TYPES else v)
            dense = self._scalars[key] = ir.DenseElementsAttr.get_splat(ir.RankedTensorType.get([], scalar_type),
                                                                        scalar)
        return self.emit(ops.constant, value=dense)

    @staticmethod
    def sig(value: ir.Value):
        return value_sig(value)

    # -- building blocks shared by rules -------------------------------------------------------------------------
    def convert(self, value: ir.Value, elem: str) -> ir.Value:
        """``value`` with element type ``elem`` (e.g. ``"f32"``): an ``fxla.convert``, or ``value`` itself."""
        s = self.sig(value)
        return value if s.elem == elem else self.emit(ops.convert, value, result_type=type_of(Sig(s.shape, elem)))

    def reshape(self, value: ir.Value, shape) -> ir.Value:
        """``value`` reshaped to ``shape`` (``value`` itself when it has that shape)."""
        shape = tuple(shape)
        return value if same_shape(self.sig(value).shape, shape) else self.emit(ops.reshape, value, shape=shape)

    def expand(self, value: ir.Value, shape) -> ir.Value:
        """``value`` broadcast to ``shape`` (``value`` itself when it has that shape)."""
        shape = tuple(shape)
        return value if same_shape(self.sig(value).shape, shape) else self.emit(ops.expand, value, shape=shape)

    def slice_dim(self, value: ir.Value, dim: int, start: int, limit: int, stride: int = 1) -> ir.Value:
        """``value`` sliced along one (non-negative) dim."""
        shape = self.sig(value).shape
        starts, limits, strides = [0] * len(shape), list(shape), [1] * len(shape)
        starts[dim], limits[dim], strides[dim] = start, limit, stride
        return self.emit(ops.slice, value, start=starts, limit=limits, stride=strides)

    def int_constant(self, values) -> ir.Value:
        """A 1-D i64 ``fxla.constant`` (index lists written in the program, e.g. ``x[[0, 2]]``)."""
        return self.emit(ops.constant, value=ir.DenseElementsAttr.get(np.asarray(values, dtype=np.int64)))



class LoweringContext(Emitter):
    """Passed as ``ctx`` to every rule.

    * ``ctx.node`` — the graph node being lowered; ``ctx.result_type`` its tensor type from shape propagation;
    * ``ctx.emit(opdef, *operands, **attrs)`` — build an fxla op at the node's source location;
    * ``ctx.tensor(x, like=None)`` — a tensor operand from an ``ir.Value`` or a Python scalar (a 0-d
      ``fxla.constant``; see :func:`scalar_elem` for its element type: next to the tensor ``like`` it takes the
      type torch computes in, alone float -> f32, int -> i64, bool -> i1);
    * ``ctx.param(qualname)`` — the value of parameter/buffer ``qualname``: the function argument carrying it
      (uploaded once), or the value a rule assigned to it earlier in the program (``ctx.assign``);
    * ``ctx.assign(current, value)`` — an in-place update a rule's op makes (batch norm's running statistics):
      the parameter/buffer or tensor input whose value is ``current`` becomes ``value`` (a program result the
      caller writes back, as for the graph's own mutations);
    * ``ctx.random(shape, elem, distribution)`` — uniform [0, 1) or standard normal values (``fxla.rng``), each
      call an independent stream of the program's one seed argument (:meth:`rng_seed`);
    * ``ctx.error(what, why, fix)`` — a :class:`LoweringError` at the node's source line.

    The building blocks rules share are methods too (each emits nothing when there is nothing to do):
    ``ctx.convert(x, elem)`` (``x`` in another element type), ``ctx.reshape(x, shape)``,
    ``ctx.expand(x, shape)`` (broadcast), ``ctx.slice_dim(x, dim, start, limit, stride)``,
    ``ctx.int_constant(values)`` (a 1-D i64 constant), ``ctx.module_param(name)`` (a parameter of the node's
    module, ``None`` when the module has none) and ``ctx.lower(op, *args, **kwargs)`` (lower ``op`` here as
    its own rule does: one rule reusing another names the torch op, never the other file's helper).
    Rule-level helpers without a context live in :mod:`fxla.lowering.emit`.
    """

    def __init__(self, root: torch.nn.Module, block: ir.Block, param_values: Dict[str, torch.Tensor]):
        super().__init__()
        self.root = root
        self.block = block
        self.node = None
        self.param_names: List[str] = []
        self._param_args: Dict[str, ir.Value] = {}
        self._param_values = param_values
        self._n_inputs = len(block.arguments)         # (the tensor inputs; parameters are added after them)
        #: the program's random seed argument (see rng_seed), and how many random streams read it
        self.seed: Optional[ir.Value] = None
        self.streams = 0
        #: what rules assigned (see assign): parameter/buffer name -> its new value; input argument -> new value
        self.state_writes: Dict[str, ir.Value] = {}
        self.local_writes: Dict[str, ir.Value] = {}      # (tensors the tracer made constants: not written back)
        #: while a ``call_module`` node lowers: its parameters/buffers forward changed before it (their values)
        self.state_reads: Dict[str, ir.Value] = {}
        self.input_writes: Dict[int, ir.Value] = {}
        #: (old value, new value, node, name) per assignment, in order (see check_writes)
        self.assignments: List[tuple] = []
        #: the conditions on the data the program checks (see check), and what each one is
        self.conditions: List[ir.Value] = []
        self.value_checks: List[ValueCheck] = []

    # -- the node being lowered ----------------------------------------------------------------------------------
    @property
    def result_type(self) -> ir.Type:
        meta = self.node.meta.get(M.TENSOR_META)
        if meta is None or isinstance(meta, (tuple, list)):
            raise self.error("this op should produce one tensor", "shape propagation recorded no single tensor",
                             "report this as an fxla bug")
        return mlir_type(meta)

    @property
    def result_sig(self):
        meta = self.node.meta.get(M.TENSOR_META)
        if symbolic.current() is None or not isinstance(meta, TensorMeta):
            return sig_of(self.result_type)
        return sig_of_meta(meta)

    def error(self, what: str, why: str, fix: str):
        return node_error(self.node, what, why, fix)

    @property
    def n_inputs(self) -> int:
        """How many tensor inputs the program takes (its first block arguments)."""
        return self._n_inputs

    def check(self, ok: ir.Value, what: str, fix: str, kind: str = "runtime") -> None:
        """The program checks, on every call, the condition ``ok`` (a boolean value: every element must hold)
        that eager PyTorch requires of the data here and raises without (``what``: the condition in torch's
        terms): a call whose data breaks it raises :class:`fxla.lowering.value_checks.ValueCheckError` naming this
        node's line, with ``fix`` (:mod:`fxla.lowering.value_checks`; ``kind``: what eager raises, ``"runtime"``,
        ``"index"`` or ``"argument"``)."""
        sig = self.sig(ok)
        if sig.elem != "i1":
            raise TypeError(f"a value check's condition must be boolean, got {sig}")
        if sig.rank:
            ok = self.emit(ops.all, ok, dims=())
        self.conditions.append(ok)
        self.value_checks.append(ValueCheck(what, self.node.name if self.node is not None else "?",
                                            where_of(self.node), fix, kind))

    def param(self, qualname: str) -> ir.Value:
        written = self.state_reads.get(qualname) or self.state_writes.get(qualname) or \
            self.local_writes.get(qualname)
        if written is not None:                   # assigned earlier in the program: its new value
            return written
        if qualname not in self._param_args:
            tensor = self._param_values.get(qualname)
            if tensor is None:
                tensor = _tensor_attr(self.root, qualname)
                self._param_values[qualname] = tensor
            arg_type = mlir_type(TensorMeta(tuple(tensor.shape), tensor.dtype))
            self._param_args[qualname] = self.block.add_argument(arg_type, self.loc or ir.Location.unknown())
            self.param_names.append(qualname)
        return self._param_args[qualname]

    def param_name(self, value: ir.Value) -> Optional[str]:
        """The parameter/buffer whose current value is ``value`` (see :meth:`param`), or ``None``."""
        for writes in (self.state_reads, self.state_writes, self.local_writes):
            for name, written in writes.items():
                if written == value:
                    return name
        for name, arg in self._param_args.items():
            if arg == value and name not in self.state_writes and name not in self.local_writes:
                return name
        return None

    def constant_bounds(self, value: ir.Value) -> Optional[tuple]:
        """``(min, max)`` of an integer ``value`` that is (a reshape, broadcast, widening or slice of) a tensor the
        tracer made a constant of the program (``torch.arange(seq)`` of a concrete-shapes trace: its values never
        change), ``(0, -1)`` when empty; else ``None``."""
        for _ in range(64):
            if isinstance(value.owner, ir.Block):
                break
            op = value.owner.operation if not isinstance(value.owner, ir.Operation) else value.owner
            if op.name not in _VALUE_KEEPING:
                return None
            value = op.operands[0]
        else:
            return None
        name = self.param_name(value)
        if name is None or not _is_traced_constant(self.root, name):
            return None
        tensor = self._param_values[name]
        if tensor.dtype.is_floating_point or tensor.dtype.is_complex or tensor.dtype == torch.bool:
            return None
        return (0, -1) if tensor.numel() == 0 else (int(tensor.min()), int(tensor.max()))

    def assign(self, current: ir.Value, value: ir.Value, what: str) -> None:
        """Record the in-place update an op makes of one of its arguments: the parameter/buffer (or the tensor
        input of the program) whose value is ``current`` now has ``value`` (same type).  Later reads of the
        parameter through :meth:`param` see ``value``; the program returns its final value and the caller writes
        it back (``FxlaProgram.mutated_params`` / ``mutated_inputs``).  A tensor the tracer made a constant
        (``torch.zeros(3)`` in the traced code: a new tensor per call in eager) has the new value for the rest of
        the program and is not written back.  ``what`` names the argument in errors (``"running_mean"``).
        Anything else (an intermediate value, maybe a view of another tensor) is refused: eager would change a
        tensor the program does not hand back."""
        if value.type != current.type:
            raise self.error(f"internal error: {what} would change type from {current.type} to {value.type}", "",
                             "report this as an fxla bug")
        name = self.param_name(current)
        if name is not None and _is_traced_constant(self.root, name):
            self.local_writes[name] = value
        elif name is not None:
            self.state_writes[name] = value
        elif isinstance(current.owner, ir.Block) and ir.BlockArgument(current).arg_number < self._n_inputs:
            self.input_writes[ir.BlockArgument(current).arg_number] = value
        else:
            raise self.error(f"this op updates its argument {what} in place, but that argument is a value computed "
                             f"in the program", "eager changes that tensor in place, and fxla can only hand back "
                             "the new values of the module's parameters/buffers and of the program's inputs",
                             f"pass a buffer of the module (or an input of the compiled function) as {what}")
        self.assignments.append((current, value, self.node, what))

    def check_writes(self) -> None:
        """Refuse a program that reads an assigned parameter/input's old value after the assignment, where
        lowering could not give it the new one (a value computed from the old one that eager would see change, such
        as a view taken before the update): in eager it is the same memory, changed."""
        for old, new, node, what in self.assignments:
            owner = new.owner
            if isinstance(owner, ir.Block):
                continue
            owner = owner.operation
            later = [use.owner for use in old.uses
                     if use.owner.operation != owner and not use.owner.operation.is_before_in_block(owner)]
            if later:
                self.node = node
                raise self.error(f"{what} is read after this op updated it in place, through a value taken "
                                 f"before the update", "eager reads the same tensor, changed; the program would "
                                 "read the value from before the update", f"read {what} again after the update "
                                 "(or clone it before, if the old value is meant)")

    # -- random numbers --------------------------------------------------------------------------------------------
    def rng_seed(self) -> ir.Value:
        """The program's random seed: one ``tensor<2xi64>`` argument, added at the first call (the lowering
        places it right after the tensor inputs; ``FxlaProgram.rng_seed`` is its position).  Each call of the
        compiled program passes a fresh one drawn from torch's default generator."""
        if self.seed is None:
            self.seed = self.block.add_argument(ir.RankedTensorType.get([2], ir.IntegerType.get_signless(64)),
                                                ir.Location.unknown())
        return self.seed

    def random(self, shape, elem: str, distribution: str = "uniform") -> ir.Value:
        """An ``fxla.rng`` of ``shape`` and float type ``elem``: ``uniform`` in [0, 1) or standard ``normal``,
        on a stream of its own (independent of every other random op of the program)."""
        stream, self.streams = self.streams, self.streams + 1
        return self.emit(ops.rng, self.rng_seed(), shape=tuple(shape), distribution=distribution, stream=stream,
                         result_type=type_of(Sig(tuple(shape), elem)))

    def module_param(self, name: str, mod: Optional[torch.nn.Module] = None,
                     target: Optional[str] = None) -> Optional[ir.Value]:
        """The parameter (or buffer) ``name`` of the ``call_module`` node's module -- or of the submodule
        ``mod`` at ``target`` -- as a function argument; ``None`` when the module's attribute is ``None``
        (``nn.Linear(bias=False)``)."""
        if target is None:
            target = self.node.target
            mod = self.root.get_submodule(target) if mod is None else mod
        return None if getattr(mod, name, None) is None else self.param(f"{target}.{name}")

    def lower(self, op, *args, **kwargs):
        """Lower ``op`` (a torch function with a registered rule) on ``args`` here, as its own rule does."""
        return RULES[op](self, *args, **kwargs)


def scalar_elem(value, other: Optional[str] = None) -> str:
    """The element type of a Python scalar operand next to a tensor of element type ``other``.

    torch treats Python numbers as "wrapped numbers": they never change the result's element type unless they
    raise its category (bool < int < float), and they are used at the computation's precision.  So a scalar
    that does not raise the category takes ``other`` itself (``x_f64 * 0.1`` keeps 0.1 in f64, a 0-d ``i32``
    tensor ``+ 2`` stays ``i32``); one that does takes torch's default dtype (float -> f32, int -> i64).
    """
    if isinstance(value, bool):
        return other or "i1"
    if isinstance(value, int):
        return "i64" if other in (None, "i1") else other
    return other if other is not None and is_float(other) else "f32"


#: ops whose result holds (some of) their first operand's values and no others (a slice: some of them)
_VALUE_KEEPING = VALUE_KEEPING | {ops.slice.name}


def _is_traced_constant(root: torch.nn.Module, qualname: str) -> bool:
    """A ``_tensor_constant<N>`` the tracer made (a tensor the traced code created or captured), not a parameter
    or buffer of the user's module."""
    return qualname.rpartition(".")[2].startswith("_tensor_constant") and \
        qualname not in dict(root.named_parameters()) and qualname not in dict(root.named_buffers())


def _tensor_attr(root: torch.nn.Module, qualname: str) -> torch.Tensor:
    """A parameter, buffer or plain tensor attribute (e.g. a ``_tensor_constant<N>`` the tracer stored)."""
    value = root
    for atom in qualname.split("."):
        value = getattr(value, atom)
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"'{qualname}' is a {type(value).__name__}, not a tensor")
    return value
