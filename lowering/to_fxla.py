"""Graph -> ``fxla`` dialect: one ``func.func @main`` per graph, one rule application per node.

Tensor types come from shape propagation on the example inputs (:func:`fxla.frontend.propagate_shapes`):
the function is specialised to those shapes and dtypes, and values that only depend on shapes
(``x.size(0)``, ``x.shape[-1]``) are folded to Python constants.  Function arguments are the tensor leaves of
the inputs (in order), the random seed when the program draws random numbers (``FxlaProgram.rng_seed``), then
every parameter/buffer the program reads (``fxla.param`` names them).
"""
from __future__ import annotations

import contextlib
import dataclasses
import operator
from typing import Any, Dict, List, Union

import torch
from torch.utils import _pytree as pytree

from fxla.dialects.fxla import InferError, VerificationError, verify_module
from fxla.dialects.fxla.opdef import ElementTypeMismatch, type_cache, value_sig
from fxla.dialects.fxla.symbolic import current as current_scope, symbolic_scope
from fxla.dialects.mlir import fxla_context, func, ir
from fxla.frontend import GraphModule, Node, TensorMeta, map_arg
from fxla.frontend import meta as M
from fxla.frontend.object_outputs import building_spec
from fxla.frontend.passes.prepare import PreparedGraph, prepare_graph
from fxla.frontend.symbolic import observe_node

from . import rules  # noqa: F401  (fills the rule table)
from .context import LoweringContext
from .dtypes import mlir_type, sig_of_meta
from .errors import LoweringError, UnsupportedOpError
from .program import FxlaProgram, WrittenAttribute
from .registry import RULES, describe, op_key
from .symbolic import SymbolicLowering, same_symbolic_shape, scope_for
from .value_checks import check_code


def _written_attributes(prepared: PreparedGraph, env, returned: List[Any]) -> List[WrittenAttribute]:
    """The attributes assigned in forward (``prepared.attribute_writes``), appending their tensor leaves to
    ``returned``."""
    written = []
    for name, (spec, nodes, constants) in prepared.attribute_writes.items():
        leaves = []
        for i in range(spec.num_leaves):
            value = env[nodes[i]] if i in nodes else constants[i]
            if isinstance(value, (tuple, list)) and any(isinstance(v, ir.Value) for v in pytree.tree_leaves(value)):
                src = nodes[i].meta.get(M.SOURCE)
                raise LoweringError(
                    f"forward assigns the result of %{nodes[i].name}, a tuple of tensors (such as x.max(dim)'s "
                    f"values and indices), to the attribute {name}\n  at {src}\nwhy: fxla writes an attribute's "
                    f"tensors back one by one and does not rebuild the op's result type\nfix: assign its parts: "
                    f"{name.rsplit('.', 1)[-1]} = (r[0], r[1]), or the one you need")
            if isinstance(value, ir.Value):
                returned.append(value)
                value = _RESULT
            leaves.append(value)
        # (each torch.Size a SizeOutput node, as in the outputs: the attribute is set to a torch.Size again)
        value = pytree.tree_unflatten(leaves, retyped(spec, torch.Size, SizeOutput))
        leaves, spec = pytree.tree_flatten(output_nodes(value))
        written.append(WrittenAttribute(name, spec, [None if v is _RESULT else v for v in leaves]))
    return written


#: a written attribute's leaf that is the next program result
_RESULT = object()


def retyped(spec: pytree.TreeSpec, old: type, new: type) -> pytree.TreeSpec:
    """``spec`` with each ``old`` node a ``new`` node of the same context and children (``torch.Size`` ->
    :class:`SizeOutput`, which unflattens to a ``torch.Size``; ``SizeOutput`` -> ``tuple``); ``spec`` itself when
    it holds none."""
    if spec.is_leaf():
        return spec
    children = [retyped(c, old, new) for c in spec.children()]
    if spec.type is not old and all(n is o for n, o in zip(children, spec.children())):
        return spec
    return pytree.TreeSpec(new if spec.type is old else spec.type, spec.context, children)


def node_location(node) -> ir.Location:
    """``loc("<node name>"("<file>":<line>:<col>))`` from the node's recorded source location."""
    src = node.meta.get(M.SOURCE)
    inner = ir.Location.file(src.file, src.line, src.col) if src is not None else ir.Location.unknown()
    return ir.Location.name(node.name, childLoc=inner)


def is_static(node) -> bool:
    """Nodes whose value shape propagation already knows (shape arithmetic, dtypes, …): no op is emitted."""
    return M.VALUE in node.meta and M.TENSOR_META not in node.meta and node.target not in _MUTATIONS


#: never static, although they return None: left in a graph (not functionalized), they have no rule
_MUTATIONS = (operator.setitem, operator.delitem)


def check_supported(gm: GraphModule) -> None:
    """Raise one :class:`UnsupportedOpError` naming *every* op without a rule, with its source location."""
    missing = []
    for node in gm.graph.nodes:
        if node.op in ("call_function", "call_method", "call_module") and not is_static(node):
            key = op_key(node, gm)
            if key not in RULES:
                missing.append((describe(key, node) if key is not None else f"method Tensor.{node.target}",
                                node.meta.get(M.SOURCE)))
    if missing:
        raise UnsupportedOpError(missing)


def _check_result(node, produced) -> None:
    """The rule's value(s) must have the types torch computed; tuple results (``torch.split``, ``torch.max(x,
    dim)``) are checked element by element, and must have as many elements as torch's."""
    meta = node.meta.get(M.TENSOR_META)
    if isinstance(meta, (tuple, list)) and isinstance(produced, (tuple, list)):
        if len(meta) != len(produced):
            raise LoweringError(
                f"internal error: the rule for graph node '{node.name}' produced {len(produced)} values, but torch "
                f"computes {len(meta)}\nfix: report this as an fxla bug, with the model that triggers it")
        for m, p in zip(meta, produced):
            _check_one(node, m, p)
    else:
        _check_one(node, meta, produced)


def _check_one(node, meta, produced) -> None:
    if isinstance(meta, TensorMeta) and isinstance(produced, ir.Value):
        if current_scope() is not None and not all(type(d) is int for d in meta.shape):
            if not same_symbolic_shape(produced, sig_of_meta(meta)):
                raise LoweringError(
                    f"internal error: the rule for graph node '{node.name}' produced {value_sig(produced)}, but torch "
                    f"computes {sig_of_meta(meta)}\nfix: report this as an fxla bug, with the model that triggers it")
            return
        want = mlir_type(meta)
        if produced.type != want:
            raise LoweringError(
                f"internal error: the rule for graph node '{node.name}' produced {produced.type}, but torch "
                f"computes {want}\nfix: report this as an fxla bug, with the model that triggers it")


class NoneOutput:
    """A ``None`` in a program's outputs.  torch's pytree treats ``None`` as a leaf, which ``output_static`` would
    read as "a tensor result" (``None`` marks those); this node has no leaves and unflattens back to ``None``."""


pytree.register_pytree_node(NoneOutput, lambda _: ([], None), lambda _children, _context: None,
                            serialized_type_name="fxla.NoneOutput")
_NONE_OUTPUT = NoneOutput()


class SizeOutput(tuple):
    """A ``torch.Size`` in a program's outputs (``return y, x.shape``).  torch's pytree unflattens a ``torch.Size``
    node as a plain tuple; this node unflattens back to a ``torch.Size``, as eager returns it (to a tuple when an
    item is not an int)."""


def _size_of(children, _context):
    return torch.Size(children) if all(type(c) is int for c in children) else tuple(children)


pytree.register_pytree_node(SizeOutput, lambda size: (list(size), None), _size_of,
                            serialized_type_name="fxla.SizeOutput")


def output_nodes(value):
    """``value`` (a program's return value) with each ``None`` as a :class:`NoneOutput` and each ``torch.Size`` as
    a :class:`SizeOutput`, the pytree nodes that unflatten back to them."""
    return pytree.tree_map(lambda v: _NONE_OUTPUT if v is None else SizeOutput(v) if isinstance(v, torch.Size) else v,
                           value, is_leaf=lambda v: isinstance(v, torch.Size))


def lower_to_fxla(graph: Union[GraphModule, PreparedGraph], example_inputs=None, *,
                  func_name: str = "main", symbols=None) -> FxlaProgram:
    """Lower a prepared graph (:func:`fxla.frontend.passes.prepare.prepare_graph`: shapes propagated for example
    inputs, in-place mutation functionalized) to the fxla dialect.  ``lower_to_fxla(gm, example_inputs)`` (a
    GraphModule and example inputs: tensors or nested tuples/lists/dicts of them) prepares it first.

    ``symbols`` (a :class:`fxla.frontend.symbolic.SymbolicShapes`; the graph prepared on its fake inputs, inside
    ``symbols.tracing()``): the program is polymorphic in its symbols (:mod:`fxla.lowering.symbolic`); it is not
    verified here (fxla's verifier takes static types) but after :func:`fxla.lowering.refine.refine`."""
    if symbols is not None:
        with symbols.observing():
            return _lower(graph, example_inputs, func_name, symbols)
    return _lower(graph, example_inputs, func_name, None)


def _lower(graph, example_inputs, func_name: str, symbols) -> FxlaProgram:
    prepared = graph if isinstance(graph, PreparedGraph) else prepare_graph(graph, example_inputs)
    gm, example_inputs = prepared.graph_module, prepared.example_inputs
    check_supported(gm)
    context = fxla_context()
    with context, ir.Location.unknown(), type_cache():
        module = ir.Module.create()
        leaves, input_spec = pytree.tree_flatten(example_inputs)
        input_static = [None if isinstance(v, torch.Tensor) else v for v in leaves]
        arg_types = [mlir_type(TensorMeta(tuple(v.shape), v.dtype)) for v in leaves if isinstance(v, torch.Tensor)]
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp(func_name, ir.FunctionType.get(arg_types, []))
            block = fn.add_entry_block()
        ctx = LoweringContext(gm, block, {})
        args = iter(block.arguments)
        leaf_values = [next(args) if isinstance(v, torch.Tensor) else v for v in leaves]
        inputs = iter(pytree.tree_unflatten(leaf_values, input_spec))
        env: Dict[Any, Any] = {}
        results = []
        assigned = 0
        scope = contextlib.nullcontext()
        kept = None
        if symbols is not None:
            arguments = {i: v for i, v in enumerate(leaf_values) if isinstance(v, ir.Value)}
            metas = {i: sig_of_meta(TensorMeta(tuple(v.shape), v.dtype)) for i, v in enumerate(leaves)
                     if isinstance(v, torch.Tensor)}
            kept = SymbolicLowering(symbols, scope_for(symbols, ctx, arguments, block, metas), arguments)
            scope = symbolic_scope(kept.scope)
        with ir.InsertionPoint(block), scope:
            for node in gm.graph.nodes:
                observe_node(node)
                ctx.node, ctx.loc = node, node_location(node)
                with ctx.loc:
                    if node.op == "placeholder":
                        env[node] = next(inputs, node.args[0] if node.args else None)
                    elif node.op == "output":
                        results = map_arg(node.args[0], lambda n: env[n])
                    elif is_static(node):
                        env[node] = node.meta[M.VALUE]
                    elif node.op == "get_attr":
                        env[node] = _get_attr(ctx, gm, node)
                    else:
                        env[node] = _apply_rule(ctx, gm, node, env)
                        if len(ctx.assignments) > assigned:     # the op updated an argument in place
                            _see_assignments(env, ctx.assignments[assigned:])
                            assigned = len(ctx.assignments)
            out_leaves, output_spec = pytree.tree_flatten(
                output_nodes(results))
            views = _leaf_views(prepared.output_views, gm.graph.output_node, env, len(out_leaves))
            returned = [v for v in out_leaves if isinstance(v, ir.Value)]
            inputs, quiet = {}, []
            for name, value in prepared.input_mutations.items():
                placeholder = next(n for n in gm.graph.nodes if n.op == "placeholder" and n.target == name)
                inputs[ir.BlockArgument(env[placeholder]).arg_number] = env[value]
                if name in gm.graph.meta.get(M.QUIET_MUTATIONS, ()):
                    quiet.append(ir.BlockArgument(env[placeholder]).arg_number)
            state = {name: env[value] for name, value in prepared.state_mutations.items()}
            _merge_writes(ctx, inputs, state)
            mutated = list(inputs)
            returned.extend(inputs.values())
            returned.extend(state.values())
            written = _written_attributes(prepared, env, returned)
            ctx.check_writes()
            if ctx.conditions:                      # (the check code: the last result, fxla.lowering.value_checks)
                returned.append(check_code(ctx, ctx.conditions))
            func.ReturnOp(returned)
        seed = _place_seed(block, len(arg_types), ctx.seed)
        all_args = [a.type for a in block.arguments]
        fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(all_args, [v.type for v in returned]))
        names = [ir.DictAttr.get({}) for _ in arg_types] + [ir.DictAttr.get({})] * (seed is not None) + \
            [ir.DictAttr.get({"fxla.param": ir.StringAttr.get(n)}) for n in ctx.param_names]
        fn.attributes["arg_attrs"] = ir.ArrayAttr.get(names)
        try:
            if symbols is None:
                verify_module(module)
        except VerificationError as err:
            raise LoweringError("internal error: lowering produced invalid fxla IR:\n" + str(err) +
                                "\nfix: report this as an fxla bug, with the model that triggers it") from None
    output_static = [None if isinstance(v, ir.Value) else v for v in out_leaves]
    output_spec = building_spec(output_spec)      # objects among the outputs are built back (a KV cache)
    return FxlaProgram(module, context, input_spec, input_static, output_spec, output_static,
                       list(ctx.param_names), {n: ctx._param_values[n] for n in ctx.param_names}, mutated,
                       list(state), written, rng_seed=seed, symbolic=kept, value_checks=list(ctx.value_checks),
                       quiet_inputs=quiet, histories=prepared.histories, output_views=views)


def _leaf_views(views, output, env, count: int) -> list:
    """``views`` (:func:`fxla.frontend.passes.output_views.output_views`: numbered per leaf of forward's return
    value as traced, a node one leaf) numbered per output leaf of the program (a node whose value is a tuple, as
    ``torch.unbind``'s, is one leaf per tensor)."""
    if not views:
        return []
    starts, sizes, at = [], [], 0
    for leaf in pytree.tree_leaves(pytree.tree_map(lambda v: () if v is None else v, output.args[0])):
        value = env[leaf] if isinstance(leaf, Node) else leaf
        starts.append(at)
        sizes.append(len(pytree.tree_leaves(output_nodes(value))))
        at += sizes[-1]
    if at != count or any(v.leaf >= len(starts) or (v.part or 0) >= sizes[v.leaf] for v in views):
        raise LoweringError(f"internal error: forward's return value has {count} leaves, but its views were "
                            f"numbered for {at}\nfix: report this as an fxla bug, with the model that triggers it")
    return [dataclasses.replace(v, leaf=starts[v.leaf] + (v.part or 0), part=None,
                                base=(v.base[0], starts[v.base[1]]) if v.base[0] == "output" else v.base)
            for v in views]


def _see_assignments(env: Dict[Any, Any], assignments) -> None:
    """Nodes whose value an op just updated in place (``ctx.assign``: a buffer read by a ``get_attr`` node, an
    input) hold its new value from now on, as the same tensor does in eager."""
    for old, new, _, _ in assignments:
        for node, value in env.items():
            if isinstance(value, ir.Value) and value == old:
                env[node] = new


def _merge_writes(ctx: LoweringContext, inputs: Dict[int, ir.Value], state: Dict[str, ir.Value]) -> None:
    """Add the in-place updates rules made (``ctx.assign``: batch norm's running statistics) to the graph's own
    mutations of inputs (argument number -> final value) and of parameters/buffers (name -> final value)."""
    for what, graph, rules in (("input", inputs, ctx.input_writes), ("parameter/buffer", state, ctx.state_writes)):
        both = sorted(str(k) for k in set(graph) & set(rules))
        if both:
            raise LoweringError(f"{what} {', '.join(both)} is changed in place both by the traced code and by an op "
                                f"that updates its argument (batch norm's running statistics)\nwhy: fxla keeps one "
                                f"final value per tensor and cannot order the two changes\nfix: change it in one "
                                f"place only")
        graph.update(rules)


def _place_seed(block: ir.Block, n_inputs: int, seed) -> "int | None":
    """Move the random seed argument (added when the first random op was lowered, maybe after some parameters)
    right after the ``n_inputs`` tensor inputs, before every parameter; its argument number, or ``None``."""
    if seed is None:
        return None
    params = [a for a in list(block.arguments)[n_inputs:] if a != seed]
    moved = [block.add_argument(a.type, a.location) for a in params]
    for old, new in zip(params, moved):
        old.replace_all_uses_with(new)
    for index in sorted((a.arg_number for a in params), reverse=True):
        block.erase_argument(index)
    return n_inputs


def _get_attr(ctx: LoweringContext, gm: GraphModule, node):
    atoms = node.target.split(".")
    value = gm
    for atom in atoms:
        value = getattr(value, atom)
    return ctx.param(node.target) if isinstance(value, torch.Tensor) else value


def _apply_rule(ctx: LoweringContext, gm: GraphModule, node, env):
    rule = RULES[op_key(node, gm)]
    args = map_arg(node.args, lambda n: env[n])
    kwargs = map_arg(node.kwargs, lambda n: env[n])
    if node.op == "call_module":
        kwargs = dict(kwargs, mod=gm.get_submodule(node.target))
        # (its parameters/buffers forward changed before the call: their values then, as eager's layer reads)
        ctx.state_reads = {name: env[value] for name, value in node.meta.get(M.STATE_READS, {}).items()}
    try:
        produced = rule(ctx, *args, **kwargs)
    except LoweringError:
        raise
    except TypeError as err:
        raise ctx.error(f"cannot lower this call: {err}", "its arguments do not match the lowering rule's "
                        "signature (an unsupported argument or form of the op)",
                        "call the op with the arguments torch documents, or report the missing form") from err
    except ElementTypeMismatch as err:
        raise ctx.error(f"operand dtypes do not match: {err}", "torch refuses this mix too (eager raises, e.g. "
                        "'mat1 and mat2 must have the same dtype'): a dtype mistake in the inputs, not a missing form",
                        "convert the operands to one dtype: the input to the model's (x.float() for a float32 "
                        "model, also for integer inputs), or the model to the input's (model.double())") from err
    except InferError as err:
        raise ctx.error(f"cannot lower this call: {err}", "the fxla op it maps to does not accept these operands "
                        "(an unsupported form of the op)",
                        "rewrite the call with supported shapes/dtypes, or report the missing form") from err
    finally:
        ctx.state_reads = {}
    _check_result(node, produced)
    return produced
