"""The metadata of an export artifact: fxla's own structure encoding and the checks ``fxla.load`` makes.

An artifact's ``metadata.json`` is data, never code: its input/output structures are written in fxla's own
encoding (:func:`encode_spec`), which names only built-in containers, and decoded without importing anything
(torch's ``treespec_loads`` imports modules named in the JSON, e.g. a ``defaultdict``'s factory).  Every field is
type- and range-checked, and everything the program's interface fixes (arity, shapes, dtypes, which results
are written back into which input or parameter) must agree with the program's ``@main`` roles
(:func:`fxla.runtime.artifact.program_interface`), the source of truth; anything off is an
:class:`~fxla.runtime.ArtifactError`.
"""
from __future__ import annotations

import collections
from typing import Any, Dict, List, NamedTuple, Tuple

from torch.utils import _pytree as pytree

from fxla.lowering.to_fxla import NoneOutput, SizeOutput
from fxla.lowering.value_checks import ValueCheck
from fxla.runtime.artifact import ArtifactError, ProgramInterface

MAX_DEPTH = 64           # nesting of an input/output structure an artifact may record


class _Tensor:
    def __repr__(self):
        return "TENSOR"


#: what a decoded leaf list holds where the structure has its next tensor (metadata.json: ``{"tensor": k}``)
TENSOR = _Tensor()

#: encoding name <-> container type (what ``_portable`` in fxla.export leaves in a spec)
_KINDS = {"tuple": tuple, "list": list, "dict": dict, "odict": collections.OrderedDict, "size": SizeOutput}
_NAMES = {t: name for name, t in _KINDS.items()}
_NAMES[collections.defaultdict] = "dict"       # loads as a plain dict: its factory would need the model's code

#: torch dtype name <-> MLIR element type
MLIR_OF_TORCH = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64", "bool": "i1",
                 "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "ui8"}
TORCH_OF_MLIR = {m: t for t, m in MLIR_OF_TORCH.items()}


def encode_spec(spec: pytree.TreeSpec) -> Any:
    """``spec`` (of built-in containers) as JSON data: ``null`` for a leaf, ``{"tuple"|"list": [children]}``,
    ``{"dict"|"odict": [[key, child], ...]}`` (keys: str or int), ``{"none": []}`` for a ``None`` output,
    ``{"size": [null, ...]}`` for a ``torch.Size`` output (its numbers are static outputs)."""
    if spec.is_leaf():
        return None
    if spec.type is NoneOutput:                # a None among the outputs (no leaves; loads back as None)
        return {"none": []}
    name = _NAMES.get(spec.type)
    if name is None:
        raise ArtifactError(f"cannot export a structure holding a {getattr(spec.type, '__qualname__', spec.type)}"
                            f"\nfix: use tuples, lists and dicts")
    children = [encode_spec(c) for c in spec.children()]
    if name in ("tuple", "list", "size"):
        return {name: children}
    keys = list(spec.context)
    if not all(isinstance(k, (str, int)) and not isinstance(k, bool) for k in keys):
        raise ArtifactError(f"cannot export a dict with keys {keys!r}\nwhy: an artifact records str and int keys"
                            f"\nfix: use str keys")
    return {name: [[k, c] for k, c in zip(keys, children)]}


def _decode(value: Any, bad, depth: int, sizes: bool = False) -> pytree.TreeSpec:
    """``value`` (:func:`encode_spec`'s JSON) as a spec; ``sizes``: it may hold ``torch.Size`` entries (outputs)."""
    if value is None:
        return pytree.treespec_leaf()
    if depth > MAX_DEPTH:
        raise bad(f"a structure is nested deeper than {MAX_DEPTH}")
    if not isinstance(value, dict) or len(value) != 1:
        raise bad(f"a structure entry is {str(value)[:80]}, not null or a one-key object")
    (name, items), = value.items()
    if name == "none":
        if items != []:
            raise bad("a 'none' structure entry has children")
        return pytree.TreeSpec(NoneOutput, None, [])
    kind = _KINDS.get(name)
    if kind is None or not isinstance(items, list) or (kind is SizeOutput and not sizes):
        raise bad(f"a structure has the unknown container {str(name)[:40]!r}")
    if kind is SizeOutput and not all(c is None for c in items):
        raise bad("a 'size' structure entry holds more than numbers")
    if kind in (tuple, list, SizeOutput):
        return pytree.TreeSpec(kind, None, [_decode(c, bad, depth + 1, sizes) for c in items])
    if not all(isinstance(i, list) and len(i) == 2 and isinstance(i[0], (str, int)) and not isinstance(i[0], bool)
               for i in items):
        raise bad(f"a {name} structure's entries are not [key, child] pairs with str or int keys")
    keys = [k for k, _ in items]
    if len(set(keys)) != len(keys):
        raise bad(f"a {name} structure repeats a key")
    return pytree.TreeSpec(kind, keys, [_decode(c, bad, depth + 1, sizes) for _, c in items])


class Interface(NamedTuple):
    """A loaded artifact's checked interface (see :class:`fxla.load`)."""

    input_spec: pytree.TreeSpec
    input_static: List[Any]
    inputs: List[Dict[str, Any]]        # {"shape": [...], "dtype": torch dtype name} per tensor input
    output_spec: pytree.TreeSpec
    output_static: List[Any]
    params: List[Dict[str, Any]]        # {"name", "shape", "dtype"}, in the program's order
    mutated: List[int]                  # tensor inputs written back, in result order
    state: List[int]                    # indices into params of the buffers the program updates
    written: List[Tuple[str, pytree.TreeSpec, List[Any]]]
    value_checks: List[ValueCheck]      # what the program's check code stands for (fxla.value_checks)
    quiet: List[int] = ()               # the mutated inputs changed only under torch.no_grad() in forward


def _tensor(value, bad, what) -> Dict[str, Any]:
    if not isinstance(value, dict) or not isinstance(value.get("shape"), list) or \
            value.get("dtype") not in MLIR_OF_TORCH:
        raise bad(f"{what} is not a {{'shape': [...], 'dtype': one of {sorted(MLIR_OF_TORCH)}}} entry")
    if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in value["shape"]):
        raise bad(f"{what} has the shape {str(value['shape'])[:80]}")
    return value


def _list(meta, key, bad, required: bool = True) -> list:
    value = meta.get(key)
    if value is None and not required:
        return []
    if not isinstance(value, list):
        raise bad(f"'{key}' is {type(value).__name__}, not a list")
    return value


def _leaves(values: list, spec: pytree.TreeSpec, bad, what: str) -> list:
    """A structure's recorded leaves with ``{"tensor": k}`` (k = 0, 1, ...) as :data:`TENSOR`."""
    if spec.num_leaves != len(values):
        raise bad(f"the {what} structure has {spec.num_leaves} leaves but {len(values)} are recorded")
    out = []
    for value in values:
        if isinstance(value, dict):
            if value != {"tensor": sum(v is TENSOR for v in out)}:
                raise bad(f"an {what} leaf is {str(value)[:80]}, not the next {{'tensor': k}}")
            value = TENSOR
        elif isinstance(value, list):
            raise bad(f"an {what} leaf is a list")
        out.append(value)
    return out


def _check_sizes(spec: pytree.TreeSpec, static: list, bad, at: int = 0) -> int:
    """Refuse a ``torch.Size`` output (``spec``) whose recorded leaves (``static``, from leaf ``at`` on) are not
    sizes: ints in ``[0, 2**63)``.  Returns the number of the leaf after ``spec``'s."""
    if spec.is_leaf():
        return at + 1
    if spec.type is SizeOutput:
        for value in static[at:at + spec.num_leaves]:
            if type(value) is not int or not 0 <= value < 2 ** 63:
                held = "a tensor" if value is TENSOR else str(value)[:40]
                raise bad(f"a 'size' output holds {held}, not a size (an int from 0 to 2**63 - 1)")
        return at + spec.num_leaves
    for child in spec.children():
        at = _check_sizes(child, static, bad, at)
    return at


def _type_of(entry) -> Tuple[Tuple[int, ...], str]:
    return tuple(entry["shape"]), MLIR_OF_TORCH[entry["dtype"]]


def _describe(t) -> str:
    shape, dtype = t
    return f"{TORCH_OF_MLIR.get(dtype, dtype)}{list(shape)}"


def check(meta: dict, program: ProgramInterface, bad) -> Interface:
    """Check ``meta`` field by field and against ``program``; ``bad(what)`` makes the ArtifactError."""
    for key in ("input_spec", "output_spec"):
        if key not in meta:
            raise bad(f"'{key}' is missing")
    input_spec, output_spec = _decode(meta["input_spec"], bad, 0), _decode(meta["output_spec"], bad, 0, sizes=True)
    input_static = _leaves(_list(meta, "input_static", bad), input_spec, bad, "input")
    output_static = _leaves(_list(meta, "output_static", bad), output_spec, bad, "output")
    if any(v is None for v in output_static):          # (a None output is a {"none": []} entry, without leaves)
        raise bad("an output leaf is null")
    _check_sizes(output_spec, output_static, bad)
    inputs = [_tensor(v, bad, f"inputs[{i}]") for i, v in enumerate(_list(meta, "inputs", bad))]
    params = [_tensor(v, bad, f"params[{i}]") for i, v in enumerate(_list(meta, "params", bad))]
    if not all(isinstance(p.get("name"), str) for p in params) or len({p["name"] for p in params}) != len(params):
        raise bad("'params' names are not distinct strings")
    if sum(v is TENSOR for v in input_static) != len(inputs):
        raise bad(f"'input_static' has {sum(v is TENSOR for v in input_static)} tensors, but 'inputs' lists "
                  f"{len(inputs)}")
    written = []
    for i, w in enumerate(_list(meta, "written_attributes", bad)):
        if not isinstance(w, dict) or not isinstance(w.get("name"), str) or not isinstance(w.get("leaves"), list):
            raise bad(f"written_attributes[{i}] is not a {{'name', 'spec', 'leaves'}} entry")
        wspec = _decode(w.get("spec"), bad, 0, sizes=True)
        leaves = _leaves(w["leaves"], wspec, bad, f"written_attributes[{i}]")
        _check_sizes(wspec, leaves, bad)
        written.append((w["name"], wspec, leaves))

    # The program's own interface decides; the metadata must say the same.
    arg_roles, res_roles = program.arg_roles, program.result_roles
    want_args = ["input"] * len(inputs) + [f"param:{p['name']}" for p in params]
    if arg_roles != want_args:
        raise bad(f"the program takes arguments {arg_roles}, but metadata.json describes {want_args}")
    arg_types = [_type_of(e) for e in inputs + params]
    if arg_types != [(tuple(s), d) for s, d in program.arg_types]:
        raise bad(f"the program takes {[_describe(t) for t in program.arg_types]}, but metadata.json describes "
                  f"{[_describe(t) for t in arg_types]}")
    n_out = sum(v is TENSOR for v in output_static)
    mutated = _list(meta, "mutated_inputs", bad)
    names = [p["name"] for p in params]
    state_names = _list(meta, "mutated_params", bad)
    if not all(n in names for n in state_names if isinstance(n, str)) or \
            not all(isinstance(n, str) for n in state_names):
        raise bad("'mutated_params' names a parameter the artifact does not have")
    if not all(isinstance(k, int) and not isinstance(k, bool) and 0 <= k < len(inputs) for k in mutated):
        raise bad(f"'mutated_inputs' {str(mutated)[:80]} are not tensor input numbers below {len(inputs)}")
    if len(set(mutated)) != len(mutated) or len(set(state_names)) != len(state_names):
        raise bad("'mutated_inputs' or 'mutated_params' repeats an entry")
    quiet = _list(meta, "quiet_inputs", bad, required=False)
    if not all(isinstance(k, int) and not isinstance(k, bool) and k in mutated for k in quiet):
        raise bad(f"'quiet_inputs' {str(quiet)[:80]} are not among 'mutated_inputs'")
    try:
        value_checks = [ValueCheck.from_json(c) for c in _list(meta, "value_checks", bad, required=False)]
    except ValueError as err:
        raise bad(f"'value_checks' is malformed: {err}") from None
    want_results = (["output"] * n_out + [f"input:{k}" for k in mutated] + [f"param:{n}" for n in state_names]
                    + [f"attribute:{name}" for name, _, leaves in written for leaf in leaves if leaf is TENSOR]
                    + ["check"] * bool(value_checks))
    if res_roles != want_results:
        raise bad(f"the program returns {res_roles}, but metadata.json describes {want_results} "
                  f"(outputs, inputs written back, updated parameters, written attributes, value checks)")
    outputs = [_tensor(v, bad, f"outputs[{i}]") for i, v in enumerate(_list(meta, "outputs", bad))]
    result_types = [(tuple(s), d) for s, d in program.result_types]
    if [_type_of(e) for e in outputs] != result_types:
        raise bad(f"the program returns {[_describe(t) for t in result_types]}, but metadata.json describes "
                  f"{[_describe(_type_of(e)) for e in outputs]}")
    tail = result_types[n_out:]
    for k, t in zip(mutated, tail):
        if t != _type_of(inputs[k]):
            raise bad(f"the program writes {_describe(t)} back into input {k}, a {_describe(_type_of(inputs[k]))}")
    state = [names.index(n) for n in state_names]
    for i, t in zip(state, tail[len(mutated):]):
        if t != _type_of(params[i]):
            raise bad(f"the program updates parameter {names[i]!r} ({_describe(_type_of(params[i]))}) with a "
                      f"{_describe(t)}")
    if value_checks and result_types[-1] != ((), "i32"):
        raise bad(f"the program's check code is a {_describe(result_types[-1])}, not an i32 scalar")
    return Interface(input_spec, input_static, inputs, output_spec, output_static, params, list(mutated), state,
                     written, value_checks, list(quiet))
