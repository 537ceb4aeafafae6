"""Gradient checks against torch.autograd, below the public API: trace and lower a function once, differentiate
its fxla program (fxla.lowering.autodiff), compile the forward and the backward, run them, and compare every
gradient (inputs and parameters) with eager autograd's for the same random cotangents.

``tests/test_grad_ops.py`` runs it over every numeric case of ``tests/test_ops_*.py``."""
from __future__ import annotations

import jax
import pytest
import torch
from torch.utils import _pytree as pytree

from fxla.pipeline import Pipeline
from fxla.lowering.autodiff import NotDifferentiableError, differentiable_args, differentiate
from fxla.runtime import compile_stablehlo, from_device, to_device

#: float32 gradients agree with eager within this (relative to the gradient's largest magnitude, at least 1)
GRAD_TOL = {torch.float32: 1e-4, torch.float64: 1e-10, torch.float16: 1e-2, torch.bfloat16: 5e-2}


def _run(program, args):
    device = jax.devices("cpu")[0]
    stablehlo = Pipeline().to_stablehlo(program)
    executable = compile_stablehlo(stablehlo.operation.get_asm(), device, n_params=len(program.param_names))
    return executable([to_device(a, device) for a in args])


def eager_grads(fn, inputs, params, cts_seed: int = 1, mask=None):
    """(outputs, gradients of the float ``inputs`` and ``params`` (None: not reached), cotangents) of eager
    autograd through ``fn``'s float outputs, or ``None`` when no output requires grad."""
    mask = mask or [True] * len(inputs)
    leaves = [x.detach().clone().requires_grad_(x.is_floating_point() and m) for x, m in zip(inputs, mask)]
    outputs = fn(*(x.clone() for x in leaves))     # (clones: the function may change its inputs in place)
    flat = [o for o in pytree.tree_leaves(outputs) if isinstance(o, torch.Tensor)]
    gen = torch.Generator().manual_seed(cts_seed)
    cts = [torch.randn(o.shape, generator=gen).to(o.dtype) if o.is_floating_point() else None for o in flat]
    differentiable = [(o, c) for o, c in zip(flat, cts) if c is not None and o.requires_grad]
    if not differentiable:
        return None
    sources = [x for x in leaves if x.requires_grad] + [p for p in params if p.requires_grad]
    grads = torch.autograd.grad([o for o, _ in differentiable], sources, [c for _, c in differentiable],
                                allow_unused=True)
    return flat, dict(zip(map(id, sources), grads)), cts, leaves


def check_grad(fn, inputs, *, tol: float = 1.0):
    """Assert fxla's gradients of ``fn`` (a function or an nn.Module) at ``inputs`` equal eager autograd's (float
    inputs and parameters; buffers have none).  Where eager autograd has no derivative for an op ("derivative for
    ... is not implemented"), fxla must refuse with NotDifferentiableError too.  Returns False (nothing checked)
    when no output of ``fn`` requires grad in eager."""
    params = dict(fn.named_parameters()) if isinstance(fn, torch.nn.Module) else {}
    buffers = dict(fn.named_buffers()) if isinstance(fn, torch.nn.Module) else {}
    mask = [True] * len(inputs)
    try:
        try:
            eager = eager_grads(fn, inputs, list(params.values()))
        except RuntimeError as err:
            if "is not differentiable with respect to argument" not in str(err):
                raise
            # an argument torch refuses to differentiate (a loss's weight): only the first input then
            mask = [i == 0 for i in range(len(inputs))]
            eager = eager_grads(fn, inputs, list(params.values()), mask=mask)
    except RuntimeError as err:
        if "returned an invalid gradient" in str(err):
            pytest.skip(f"eager autograd fails here: {err}")
        if "is not implemented" not in str(err):
            raise
        with pytest.raises(NotDifferentiableError):
            _fxla_grads(fn, inputs, params, buffers, None, None, mask)
        return False
    if eager is None:
        return False
    outputs, grads, cts, leaves = eager
    _fxla_grads(fn, inputs, params, buffers, (outputs, grads, cts, leaves), tol, mask)
    return True


def _fxla_grads(fn, inputs, params, buffers, eager, tol, mask):
    if eager is None:                      # (only checking that fxla refuses)
        with torch.no_grad():
            outputs = fn(*(x.clone() for x in inputs))
        outputs = [o for o in pytree.tree_leaves(outputs) if isinstance(o, torch.Tensor)]
        grads, cts, leaves = {}, [torch.ones_like(o) for o in outputs], list(inputs)
    else:
        outputs, grads, cts, leaves = eager
    import fxla
    compiled = fxla.compile(fn)
    pipeline = Pipeline()
    with torch.no_grad():
        program = pipeline.to_fxla(pipeline.prepare(compiled.graph_module, [x.detach() for x in inputs]))
    n_tensors = sum(isinstance(x, torch.Tensor) for x in inputs)
    tensor_mask = [m for x, m in zip(inputs, mask) if isinstance(x, torch.Tensor)]
    wrt = [k for k in differentiable_args(program)
           if (k < n_tensors and tensor_mask[k]) or (k >= n_tensors and program.param_names[k - n_tensors] in params)]
    results = [o for o in outputs]
    float_results = [i for i, o in enumerate(results) if o.is_floating_point()]
    d = differentiate(program, wrt, float_results)
    named = {**params, **buffers}
    tensors = [x.detach() for x in inputs if isinstance(x, torch.Tensor)]
    args = tensors + [named[n].detach() if n in named else program.params[n] for n in program.param_names]
    fwd = _run(d.forward, args)
    res = fwd[len(fwd) - d.residuals:]
    bargs = list(res) + [cts[i] for i in float_results] + [args[k] for k in d.inputs] + \
        [args[len(tensors) + program.param_names.index(n)] for n in d.params]
    got = _run(d.backward, bargs)
    if eager is None:
        raise AssertionError("eager autograd has no derivative here, but fxla differentiated it")
    sources = leaves + [named.get(n) for n in program.param_names]
    for k, g in zip(d.wrt, got):
        src = sources[k]
        want = grads.get(id(src)) if src is not None else None
        g = from_device(g)
        name = f"input {k}" if k < len(tensors) else f"parameter {program.param_names[k - len(tensors)]}"
        if want is None:
            want = torch.zeros_like(g)
        assert g.dtype == want.dtype and g.shape == want.shape, f"{name}: {g.dtype}{list(g.shape)} vs eager " \
            f"{want.dtype}{list(want.shape)}"
        base = GRAD_TOL[want.dtype] * tol
        scale = max(1.0, want.abs().max().item()) if want.numel() else 1.0
        torch.testing.assert_close(g, want, rtol=base, atol=base * scale, equal_nan=True,
                                   msg=lambda m: f"gradient of {name}: {m}")
    return True
