"""``fxla.export`` / ``fxla.load``: a portable artifact that runs without the model's Python code.

An artifact directory holds the program as StableHLO portable bytecode, the parameters in fxla's pickle-free
``tensors.bin`` format (raw bytes + JSON index), and ``metadata.json`` with the input/output specs, parameter
names, versions and the SHA-256 of every file (see :mod:`fxla.runtime.artifact`).  Loading checks all of it
and raises :class:`~fxla.runtime.ArtifactError` on a missing, truncated or modified file (``metadata.json``
included: it records the digest of its own content).  A program that draws
random numbers (dropout in training mode) is refused: export the model in eval mode.
"""
from __future__ import annotations

import collections
import hashlib
import json
import threading
from typing import Any, Dict

import jax
import jaxlib
import torch
from torch.utils import _pytree as pytree

from fxla.gradients import check_torch_call
from fxla.base.shown import abbreviate
from fxla.compile import CompiledModule
from fxla.frontend.remedies import EXPORT, spelled_as
from fxla.frontend.symbolic import ShapeConstraintError
from fxla.lowering import ResultLayout
from fxla.frontend.object_outputs import ObjectBuilder
from fxla.lowering.to_fxla import NoneOutput, SizeOutput
from fxla.gradients import guard_for
from fxla.frontend.tensor_file import TensorFileError, decode_tensors, encode_tensors
from fxla.runtime import compile_stablehlo, from_device, resolve_device, to_device
from fxla.runtime.artifact import (PROGRAM, ArtifactError, annotate_roles, check_metadata_digest, portable_bytecode,
                                   program_interface, read_artifact, write_artifact)
from fxla.runtime.buffers import InputError, is_array, torch_dtype
from fxla.signature import reject_unusable
from fxla.runtime.executable import forward_xla_options
from fxla.runtime.sharding import signature_of

from fxla.lowering.index_bounds import InputIndexCheck, check_input_indices
from .artifact_guards import GUARDS, LoadedGuards, export_guards, export_polymorphic_guards
from .export_symbolic import PolymorphicArtifact, polymorphic_parts
from .artifact_meta import TENSOR, TORCH_OF_MLIR, check, encode_spec
from .outputs import ResultHandler
from .pipeline import device_target

WEIGHTS = "weights.bin"

def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).rpartition(".")[2]


def _json_static(value, what: str):
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        raise ArtifactError(f"cannot export: {what} is the non-tensor value {abbreviate(value)}, which JSON cannot "
                            f"hold\n"
                            f"fix: bake it in with concrete_args= or pass it as a tensor") from None
    return value


def export(model, example_inputs, path, *, concrete_args=None, concrete_shapes: bool = False,
           dynamic_shapes=None, overwrite: bool = False) -> Dict[str, Any]:
    """Write a portable artifact for ``model`` specialised to ``example_inputs`` (a tuple) to folder ``path``.

    ``model``: an ``nn.Module``, a function, or an :class:`fxla.CompiledModule`.  Returns the metadata written.
    ``concrete_shapes``: trace with the example inputs' shapes known, as ``fxla.compile(model,
    concrete_shapes=True)`` does (models that branch on shapes or take ``**kwargs``: Hugging Face, timm's
    asserts); the Python values among the inputs are constants of the artifact, checked at each call.
    ``dynamic_shapes``: as ``fxla.compile``'s ``dynamic=`` (``{argument name: {dim: fxla.Dim(...)}}`` or ``True``):
    the artifact also holds the polymorphic program and its constraints, and ``fxla.load`` runs every size the
    Dims allow (refined and compiled once per size; :mod:`fxla.export_symbolic`, docs/shapes.md); with
    ``concrete_shapes=True`` the trace itself has those dims symbolic, and its guards are among the constraints.
    ``path`` must be new or an empty folder; an existing fxla artifact there is replaced (atomically) only with
    ``overwrite=True``; any other folder is refused (export never deletes what it did not write).
    """
    if not isinstance(model, CompiledModule):
        with spelled_as(EXPORT):                        # (trace errors name fxla.export's options)
            model = CompiledModule(model, concrete_args=concrete_args, concrete_shapes=concrete_shapes,
                                   dynamic=dynamic_shapes or False)
    elif dynamic_shapes and model._dynamic is None:
        raise ArtifactError(f"dynamic_shapes= needs a module compiled with dynamic=; {model.__name__} was not\n"
                            f"fix: pass the model itself to fxla.export, or fxla.compile(model, dynamic=...)")
    compiled = model
    if not isinstance(example_inputs, (tuple, list)):
        example_inputs = (example_inputs,)
    compiled._modes.watch()                             # (train()/eval() since it was compiled: fxla.modes)
    given = tuple(example_inputs)
    per_signature = compiled._per_shape is not None
    _check_marked_not_none(compiled, given, dynamic_shapes)
    if per_signature:                                   # the trace of this signature (fxla.per_shape)
        compiled, values = compiled._shaped(given, {})
        values = compiled._binding.bind(values, {})
    else:                                   # (None inputs: the trace with them fixed at None, fxla.none_inputs)
        compiled, values = compiled._routed(given, {})
    routed = compiled is not model          # (the call's Python values, None too: statics of the artifact's inputs)
    stages = compiled._lower_for_call(values)
    args = given if per_signature else model._binding.bind(given, {}) if routed else values
    program = stages.program
    if program.random:
        raise ArtifactError(f"cannot export {compiled.__name__}: it draws random numbers (dropout in training mode, "
                            f"torch.rand ...)\nwhy: an artifact is a deterministic program of its inputs and "
                            f"weights; fxla.export does not give it a seed input\nfix: call model.eval() before "
                            f"exporting (dropout is then the identity), or make the randomness an input of the "
                            f"model (pass the noise tensor in)")
    leaves = pytree.tree_leaves(args)
    inputs = [{"shape": list(v.shape), "dtype": _dtype_name(v.dtype if isinstance(v, torch.Tensor) else torch_dtype(v))}
              for v in leaves if is_array(v)]
    params = [(name, program.params[name]) for name in program.param_names]
    guard_files, guard_meta = {}, {}
    if per_signature and getattr(compiled, "value_guards", None):   # decided from the data: checked per call
        guard_files, guard_meta, guard_params = export_guards(compiled, values)
    stored = params + [(n, t) for n, t in (guard_params if guard_files else ()) if n not in program.params]
    # without source locations (no user paths in the artifact); @main says what each argument and result is
    text = annotate_roles(stages.stablehlo, ["input"] * len(inputs) + [f"param:{n}" for n, _ in params],
                          program.result_roles())
    bytecode, target = portable_bytecode(text)
    outputs = [{"shape": list(shape), "dtype": TORCH_OF_MLIR[dt]} for shape, dt in signature_of(text)[1]]
    weights = encode_tensors({name: t.detach() for name, t in stored})
    meta = {
        "name": compiled.__name__,
        "inputs": inputs,
        "input_spec": _input_spec(pytree.tree_flatten(args)[1] if routed else program.input_spec),
        "input_static": _statics([is_array(v) for v in leaves], leaves if routed else program.input_static,
                                 "input leaf"),
        "outputs": outputs,
        "output_spec": encode_spec(_portable(program.output_spec)),
        "output_static": _statics([v is None for v in program.output_static], program.output_static,
                                  "output leaf"),
        "mutated_inputs": list(program.mutated_inputs),
        "quiet_inputs": list(program.quiet_inputs),     # (changed under torch.no_grad() only: no history)
        "mutated_params": list(program.mutated_params),
        "written_attributes": [
            {"name": w.name, "spec": encode_spec(_portable(w.spec)),
             "leaves": _statics([v is None for v in w.leaves], w.leaves, f"attribute {w.name} leaf")}
            for w in program.written_attributes],
        "params": [{"name": n, "shape": list(t.shape), "dtype": _dtype_name(t.dtype)} for n, t in params],
        "stablehlo_sha256": hashlib.sha256(text.encode()).hexdigest(),
        "stablehlo_target_version": target,
        "versions": {"fxla": _fxla_version(), "jax": jax.__version__, "jaxlib": jaxlib.__version__,
                     "torch": torch.__version__.split("+")[0]},
    }
    meta.update(guard_meta)
    if program.input_checks:        # (inputs used as indices: checked by every call of the loaded artifact)
        meta["input_checks"] = [c._asdict() for c in program.input_checks]
    if program.value_checks:        # (what the program's check code stands for: fxla.value_checks)
        meta["value_checks"] = [c.to_json() for c in program.value_checks]
    if dynamic_shapes or model._dynamic is not None:   # (the polymorphic program, besides the example's)
        if compiled._dynamic is None:        # (a concrete_shapes trace of this call's shapes alone)
            raise ShapeConstraintError(f"{compiled.__name__}: no polymorphic program for these inputs: a marked dim "
                                       f"has size 0 or 1", fix="export with example inputs whose marked dims are "
                                       ">= 2, or without dynamic_shapes=")
        poly_args = values
        polymorphic_files, meta["symbolic"] = polymorphic_parts(compiled, poly_args, pytree.tree_leaves(poly_args))
        if GUARDS in guard_files:            # (the guard program at every size too: fxla.artifact_guards)
            files, meta["guard_symbolic"] = export_polymorphic_guards(compiled, poly_args,
                                                                      pytree.tree_leaves(poly_args))
            polymorphic_files.update(files)
        guard_files.update(polymorphic_files)
    write_artifact(path, meta, {PROGRAM: bytecode, WEIGHTS: weights, **guard_files}, overwrite=overwrite)
    return meta


def _statics(is_tensor, values, what: str) -> list:
    """A structure's leaves for metadata.json: ``{"tensor": k}`` for its k-th tensor, else the JSON value."""
    tensors = iter(range(len(values)))
    return [{"tensor": next(tensors)} if t else _json_static(v, f"{what} {i}")
            for i, (t, v) in enumerate(zip(is_tensor, values))]


#: the containers an artifact's specs keep as they are: built-in, so loading needs no model code
_BUILTIN_CONTAINERS = frozenset({tuple, list, dict, collections.OrderedDict, collections.defaultdict})


def _portable(spec: pytree.TreeSpec) -> pytree.TreeSpec:
    """``spec`` with the containers of the model's code (named tuples, torch.return_types, Hugging Face
    ``ModelOutput`` classes and other registered dict subclasses) as plain tuples and dicts of the same order
    and keys, so that ``fxla.load`` needs none of that code (a compiled module returns the types themselves)."""
    if spec.is_leaf() or spec.type is NoneOutput:
        return spec
    children = [_portable(c) for c in spec.children()]
    if isinstance(spec.type, type) and issubclass(spec.type, ObjectBuilder):
        # an object (a KV cache): its tensors by attribute path
        return pytree.TreeSpec(dict, list(spec.type.fields.paths), children)
    if spec.type in _BUILTIN_CONTAINERS or spec.type is SizeOutput:    # (a torch.Size loads as one)
        return pytree.TreeSpec(spec.type, spec.context, children)
    if spec.type is collections.namedtuple or issubclass(spec.type, tuple):   # (pytree's node type of a
        return pytree.TreeSpec(tuple, None, children)                          # named tuple is namedtuple)
    if issubclass(spec.type, dict):
        return pytree.TreeSpec(dict, list(spec.context), children)
    name = getattr(spec.type, "__qualname__", spec.type)
    raise ArtifactError(f"cannot export a program whose outputs hold a {name}\nwhy: an artifact "
                        f"stores its output structure as tuples, lists and dicts\nfix: return tensors in tuples, "
                        f"lists or dicts")


def _input_spec(spec: pytree.TreeSpec):
    if all(t in _BUILTIN_CONTAINERS for t in _types(spec)):
        return encode_spec(spec)
    raise ArtifactError(f"cannot export a program whose inputs have the structure {spec}\nwhy: an artifact "
                            f"stores its input structure as tuples, lists and dicts (a call must match it)\n"
                            f"fix: pass the inputs as tensors in tuples, lists or dicts")


def _types(spec: pytree.TreeSpec):
    if not spec.is_leaf():
        yield spec.type
        for child in spec.children():
            yield from _types(child)


def _fxla_version() -> str:
    import fxla
    return getattr(fxla, "__version__", "unknown")


def _check_marked_not_none(compiled: CompiledModule, given, dynamic_shapes) -> None:
    """Refuse ``dynamic_shapes`` marking an argument the example inputs give as ``None`` (the artifact then has no
    such input, and no dim of it to keep symbolic)."""
    if not isinstance(dynamic_shapes, dict):
        return
    bound = compiled._per_shape.bind(given, {}) if compiled._per_shape is not None else \
        dict(zip(compiled._binding.names, compiled._binding.bind(given, {})))
    nones = [name for name in dynamic_shapes if name in bound and bound[name] is None]
    if nones:
        raise ArtifactError(f"dynamic_shapes= marks {', '.join(nones)}, which the example inputs give as None\nwhy: "
                            f"the artifact is exported for the example's call, which has no tensor there\nfix: give "
                            f"a tensor example for {nones[0]}, or drop its entry from dynamic_shapes=")


class LoadedModule:
    """A program loaded from an artifact; call it with inputs of the exported shapes and dtypes."""

    def __init__(self, path, *, device=None, output: str = "torch", cache_dir=None):
        if output not in ("torch", "jax"):
            raise ArtifactError(f"output={abbreviate(output)} is not supported\nfix: pass output='torch' or "
                                f"output='jax'")
        self.path = str(path)
        self.output = output
        self.device = resolve_device(device)
        meta, files = read_artifact(path)
        self.metadata = meta
        if WEIGHTS not in files:
            raise self._bad(f"metadata.json lists no {WEIGHTS}")
        program = program_interface(self.path, files[PROGRAM])
        face = check(meta, program, lambda what: self._bad(f"metadata.json does not fit its program: {what}"))
        self._input_spec, self._input_static, self._inputs = face.input_spec, face.input_static, face.inputs
        self._output_spec, self._output_static = face.output_spec, face.output_static
        self._mutated, self._state, self._written = face.mutated, face.state, face.written
        names = [p["name"] for p in face.params]
        try:
            tensors = decode_tensors(bytearray(files[WEIGHTS]))
        except TensorFileError as err:
            raise self._bad(f"{WEIGHTS} is malformed: {err}") from None
        for p in face.params:
            t = tensors.get(p["name"])
            if t is None or list(t.shape) != p["shape"] or _dtype_name(t.dtype) != p["dtype"]:
                raise self._bad(f"{WEIGHTS} does not hold parameter {p['name']!r} as {p['dtype']}{p['shape']}")
        # the device passes fxla.compile runs (CPU: grouped convolutions, channels-last pools, parameters stored in
        # the layout their dots and convolutions want); the artifact holds the portable program before them
        # (a buffer the program updates keeps torch's layout: the next call passes the value this one returns)
        target = device_target(program.text, program.text, names, self.device.platform,
                               fixed=[names[i] for i in self._state])
        self.executable = compile_stablehlo(target.debug_text, self.device, cache_dir=cache_dir,
                                            cache_text=target.text, n_params=len(names),
                                            xla_options=forward_xla_options(target.dot_rows))
        #: the parameters in torch's layout (programs refined from a symbolic artifact take these), and as
        #: ``self.executable`` takes them (some stored permuted: ``target.layouts``)
        self._params = [to_device(tensors[n], self.device) for n in names]
        self._laid_out = [to_device(tensors[n].permute(target.layouts[n]).contiguous(), self.device)
                          if n in target.layouts else p for n, p in zip(names, self._params)]
        self._guards = LoadedGuards(self.path, meta, files, tensors, [i["shape"] for i in self._inputs],
                                    self.device, cache_dir, self._bad) if "guards" in meta else None
        self._cache_dir = cache_dir
        self._input_checks = _input_checks(meta.get("input_checks", []), len(self._inputs), self._bad)
        self._symbolic = PolymorphicArtifact(self.path, meta, files, [s for s, _ in program.result_types],
                                             len(names), self._bad) if "symbolic" in meta else None
        check_metadata_digest(self.path, meta)      # (last: a malformed field gets its own message first)
        name = meta.get("name", "loaded")
        self.__name__ = name if isinstance(name, str) and name.isidentifier() else "loaded"
        self._guard = guard_for(self.__name__, {}, output)      # (its weights are its own: only inputs need grad)
        layout = ResultLayout(sum(s is TENSOR for s in self._output_static), len(self._mutated), len(self._state),
                              sum(part is TENSOR for _, _, parts in self._written for part in parts),
                              tuple(face.value_checks))
        self._results = ResultHandler(layout, self._output_spec,
                                      [None if s is TENSOR else s for s in self._output_static], self._mutated,
                                      output, self._guard, self.__name__, face.quiet)
        self._state_lock = threading.Lock()
        #: the module attributes the exported forward assigns (``self.last = y``), as of the last call
        self.attributes: Dict[str, Any] = {}

    def _bad(self, what: str) -> ArtifactError:
        return ArtifactError(f"cannot load the fxla artifact at '{self.path}': {what}\n"
                             f"fix: re-export the model with fxla.export")

    def _describe(self) -> str:
        return ", ".join(f"{i['dtype']}{i['shape']}" for i in self._inputs)

    def _padded(self, args: tuple) -> tuple:
        """``args`` and the trailing arguments the export bound to their default ``None`` (an example that gave
        fewer: ``fxla.export(model, (x,))`` of ``forward(x, mask=None)``), else ``args``."""
        spec = self._input_spec
        n = spec.num_children if spec.type is tuple else 0
        if not len(args) < n:
            return args
        children = spec.children()
        start = sum(c.num_leaves for c in children[:len(args)])
        if all(c.is_leaf() for c in children[len(args):]) and all(s is None for s in self._input_static[start:]):
            return args + (None,) * (n - len(args))
        return args

    def __call__(self, *args):
        leaves, spec = pytree.tree_flatten(self._padded(tuple(args)))
        reject_unusable(self.__name__, leaves, loaded=True)     # (JAX tracers: inside jax.jit / jax.grad ...)
        if spec != self._input_spec:
            raise InputError(f"{self.__name__}: the inputs have structure {spec}, but the artifact was exported "
                             f"for {self._input_spec}\nfix: call it like the example inputs given to fxla.export")
        tensors = []
        executable = self.executable
        for i, (value, static) in enumerate(zip(leaves, self._input_static)):
            if static is TENSOR:
                want = self._inputs[len(tensors)]
                if not is_array(value):
                    raise InputError(f"{self.__name__}: input leaf {i} is {abbreviate(value)}, but the artifact "
                                     f"takes a "
                                     f"{want['dtype']}{want['shape']} tensor there\nfix: pass a tensor")
                dtype = _dtype_name(value.dtype if isinstance(value, torch.Tensor) else torch_dtype(value))
                if list(value.shape) != want["shape"] and self._symbolic is not None and dtype == want["dtype"] and \
                        len(value.shape) == len(want["shape"]) and all(
                            n == w or (len(tensors), k) in self._symbolic.symbolic
                            for k, (n, w) in enumerate(zip(value.shape, want["shape"]))):
                    executable = None           # (other sizes of its symbolic dims: refined below)
                elif list(value.shape) != want["shape"] or dtype != want["dtype"]:
                    raise InputError(f"{self.__name__}: tensor input {len(tensors)} is {dtype}{list(value.shape)}, "
                                     f"but the artifact was exported for {want['dtype']}{want['shape']} (all "
                                     f"inputs: {self._describe()})\nwhy: " + (
                                         "only the dims marked with fxla.Dim at export may change" if
                                         self._symbolic is not None else "an artifact holds one compiled signature")
                                     + "\nfix: pass that shape/dtype, or export again with such example inputs (or "
                                     "dynamic_shapes=)")
                tensors.append(to_device(value, self.device))
            elif value != static:
                raise InputError(f"{self.__name__}: input leaf {i} is {abbreviate(value)}, but the artifact was "
                                 f"specialised to {abbreviate(static)}\nfix: pass {abbreviate(static)}, or export "
                                 f"again with this value")
        checks = self._input_checks
        if executable is None:                           # (the sizes checked first: the guards' program needs them)
            executable, checks = self._symbolic.executable_for([tuple(t.shape) for t in tensors], self.device,
                                                               self._cache_dir)
        if self._guards is not None:                     # (decided from the example's data: fxla.artifact_guards)
            self._guards.check(self.__name__, tensors)
        if checks:                                       # (inputs used as indices: eager's IndexError, no clamp)
            check_input_indices(self.__name__, checks, tensors)
        shared = any(isinstance(v, torch.Tensor) for v in leaves)       # see Executable.__call__(wait=)
        if shared:
            check_torch_call(self.__name__, leaves)
        if self._results.layout.mutates:                 # state-writing calls: one at a time
            with self._state_lock:
                return self._run(executable, tensors, leaves, shared)
        return self._run(executable, tensors, leaves, shared)

    def _run(self, executable, tensors, leaves, shared: bool):
        """Run the program; write back and keep what it changed; return the call's value."""
        writable = None
        if self._mutated:                 # (refused inputs before running: nothing changes)
            writable = self._results.writable(leaves, self._guard is not None)
        params = self._laid_out if executable is self.executable else self._params
        results = executable(tensors + params, wait=shared or bool(self._mutated))
        parts = self._results.split(results, leaves, writable)    # (x += 1 on an input: written back)
        for i, value in zip(self._state, parts.state):      # buffers the program updates: kept for the next call
            self._params[i] = self._laid_out[i] = value     # (never permuted: fixed= above)
        written = iter(parts.attributes)
        for name, spec, leaves_of in self._written:         # (after the input check, as CompiledModule does)
            self.attributes[name] = pytree.tree_unflatten(
                [from_device(next(written)) if part is TENSOR else part for part in leaves_of], spec)
        return self._results.build(parts.outputs, leaves)

    def __repr__(self) -> str:
        return f"fxla.load({self.path!r}, device={self.device})"


def _input_checks(listed, n_inputs: int, bad) -> list:
    """metadata.json's ``input_checks`` as :class:`~fxla.lowering.index_bounds.InputIndexCheck` objects."""
    checks = []
    try:
        for c in listed:
            where = c["where"]
            region = c.get("region")
            checks.append(InputIndexCheck(int(c["input"]), int(c["low"]), int(c["high"]), str(c["node"]),
                                          None if where is None else (str(where[0]), int(where[1]), int(where[2])),
                                          None if c["exempt"] is None else int(c["exempt"]),
                                          None if region is None else tuple((int(a), int(b)) for a, b in region)))
    except (KeyError, TypeError, ValueError, IndexError):
        raise bad("'input_checks' is malformed") from None
    if any(not 0 <= c.input < n_inputs for c in checks):
        raise bad("'input_checks' names an input the program does not take")
    return checks


def load(path, *, device=None, output: str = "torch", cache_dir=None) -> LoadedModule:
    """Load an artifact written by :func:`export`; returns a callable (no model code needed)."""
    return LoadedModule(path, device=device, output=output, cache_dir=cache_dir)
