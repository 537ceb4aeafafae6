"""The gradient cases of ``utils/polymorphic_sweep.py --grad``: every float32 op case differentiated under
``fxla.compile(fn, dynamic=True)`` at its own sizes and at grown sizes, against eager autograd.

Per case (the cases of ``tests/test_grad_ops.py``: float32, not known to differ, not refused), the float inputs
require grad (and the parameters of a module case); the compiled function is called and its float outputs are
differentiated through seeded random cotangents (``torch.autograd.grad``), at the case's sizes and then at the
first growth eager differentiates; every gradient is compared with eager's at ``tests/grad_support.py``'s
tolerance.  Classes (from the ``fxla.compile`` log):

  a   both sizes' gradients came from one polymorphic gradient program (refined per size)
  a1  like a, but no grown call (eager refused every growth tried)
  b   like a, but a half has no polymorphic StableHLO: its refined fxla program converts per size (reason)
  c   a second polymorphic gradient program was made for the grown sizes (a guard of the first broke)
  d   gradients lowered per size: "no polymorphic gradient" (reason)
  d0  no gradient program was polymorphic to begin with (no symbolic dim, or the forward itself is per size)
  r   fxla refuses the gradient (NotDifferentiableError / GradientError), as a static compile does
  e   a wrong gradient against eager (sizes, error)
  f   an exception where eager differentiates
"""
from __future__ import annotations

import traceback

#: the log lines the classes are read from (fxla.symbolic_gradients)
POLY = "gradient programs traced, lowered and differentiated once"
NO_POLY = "no polymorphic gradient"
NO_SHLO = "no polymorphic StableHLO for the"


def _differentiate(fn, inputs, params):
    """``(which outputs require grad, gradients of the float inputs then of params, in order -- None where not
    reached)`` through the float outputs of ``fn`` (eager, or the compiled function) with
    ``tests/grad_support.py``'s seeded random cotangents; the gradients are None when no output requires grad."""
    import torch
    from torch.utils import _pytree as pytree
    from grad_support import eager_grads
    for p in params:
        p.grad = None
    seen = []

    def recording(*args):
        outputs = fn(*args)
        seen.extend(o.requires_grad for o in pytree.tree_leaves(outputs) if isinstance(o, torch.Tensor))
        return outputs
    found = eager_grads(recording, inputs, params)
    if found is None:
        return seen, None
    _, grads, _, leaves = found
    sources = [x for x in leaves if x.requires_grad] + [p for p in params if p.requires_grad]
    return seen, [grads[id(s)] for s in sources]


def _compare(got, want, tol):
    """None when every output requires grad as eager's does and every gradient matches eager's, else what
    differs."""
    import torch
    from grad_support import GRAD_TOL
    (got_flags, got), (want_flags, want) = got, want
    if got_flags != want_flags:
        return f"outputs that require grad: fxla {got_flags}, eager {want_flags}"
    if got is None or want is None:
        return None if got is None and want is None else f"outputs require grad: fxla {got is not None}, " \
                                                         f"eager {want is not None}"
    for k, (g, w) in enumerate(zip(got, want)):
        if w is None and g is None:
            continue
        g = torch.zeros_like(w) if g is None else g
        w = torch.zeros_like(g) if w is None else w
        if g.shape != w.shape or g.dtype != w.dtype:
            return f"source {k}: {g.dtype}{list(g.shape)} vs eager {w.dtype}{list(w.shape)}"
        base = GRAD_TOL[w.dtype] * tol
        scale = max(1.0, w.abs().max().item()) if w.numel() else 1.0
        try:
            torch.testing.assert_close(g, w, rtol=base, atol=base * scale, equal_nan=True)
        except AssertionError as err:
            return f"source {k}: " + " ".join(str(err).splitlines()[:3])[:300]
    return None


def run_grad_case(case, capture, growths, grown_inputs, make, build):
    """The record of one case (see the module docstring); ``growths``, ``grown_inputs``, ``make`` and ``build``
    are the sweep's."""
    import torch
    import fxla
    from fxla.gradients import GradientError
    from fxla.lowering.autodiff import NotDifferentiableError
    from test_grad_ops import KNOWN, REFUSED

    F32 = torch.float32
    base = {"name": case.name, "dtype": "float32", "module": case.module,
            "shapes": [list(s.shape) for s in case.inputs], "flags": []}
    if F32 not in case.dtypes or F32 in case.xfail or case.name in KNOWN or case.name in REFUSED:
        return dict(base, **{"class": "skip", "reasons": ["not a gradient case of tests/test_grad_ops.py"]})
    inputs = tuple(make(spec, F32, torch.Generator().manual_seed(0)) for spec in case.inputs)
    fn = build(case, F32)
    params = list(fn.parameters()) if isinstance(fn, torch.nn.Module) else []
    torch.manual_seed(0)
    want = _differentiate(fn, inputs, params)
    grown, tried = None, []
    for label, shapes in growths(case, F32):
        args = grown_inputs(case, F32, shapes)
        try:
            torch.manual_seed(0)
            grown = (label, args, _differentiate(fn, args, params))
            break
        except Exception as err:  # noqa: BLE001
            tried.append(f"{label}: {type(err).__name__}: {str(err).splitlines()[0][:120] if str(err) else ''}")
    rec = dict(base, growth_tried=tried)
    capture.lines.clear()
    stage = "compile"
    try:
        compiled = fxla.compile(fn, dynamic=True)
        stage = "grad1"
        torch.manual_seed(0)
        bad = _compare(_differentiate(compiled, inputs, params), want, case.tol)
        if bad:
            rec["flags"].append("e")
            rec["wrong1"] = bad
        if grown is not None:
            stage = "grad2"
            rec["growth"], rec["grown_shapes"] = grown[0], [list(a.shape) for a in grown[1]]
            torch.manual_seed(0)
            bad = _compare(_differentiate(compiled, grown[1], params), grown[2], case.tol)
            if bad:
                rec["flags"].append("e")
                rec["wrong2"] = bad
    except (NotDifferentiableError, GradientError) as err:
        rec["flags"].append("r")
        rec["error"] = f"{type(err).__name__}: {str(err).splitlines()[0][:300]}"
    except Exception as err:  # noqa: BLE001
        rec["flags"].append("f")
        rec["stage"] = stage
        rec["error"] = f"{type(err).__name__}: {str(err)[:1500]}"
        rec["traceback"] = "".join(traceback.format_exception(type(err), err, err.__traceback__)[-6:])[-3000:]
    rec["log"] = [line[:1500] for line in capture.lines[:40]]
    poly = [line for line in rec["log"] if POLY in line]
    no_poly = [line for line in rec["log"] if NO_POLY in line]
    no_shlo = [line for line in rec["log"] if NO_SHLO in line]
    if "e" in rec["flags"]:
        cls = "e"
    elif "f" in rec["flags"]:
        cls = "f"
    elif "r" in rec["flags"]:
        cls = "r"
    elif no_poly:
        cls = "d"
    elif not poly:
        cls = "d0"
    elif len(poly) >= 2:
        cls = "c"
    elif no_shlo:
        cls = "b"
    else:
        cls = "a" if grown is not None else "a1"
    reasons = [f"WRONG at {sizes}: {rec[k]}" for k, sizes in (("wrong1", rec["shapes"]),
                                                             ("wrong2", rec.get("grown_shapes"))) if k in rec]
    if rec.get("error"):
        reasons.append(f"[{rec.get('stage', '')}] {rec['error'].splitlines()[0][:400]}")
    reasons += ["no-poly: " + line.split(" (", 1)[-1].rsplit("): its gradients", 1)[0][:400] for line in no_poly[:1]]
    reasons += ["fixed: " + line.split("fixed by the program: ", 1)[-1] for line in poly if "fixed by" in line][:1]
    reasons += ["no-poly-stablehlo: " + line.split(NO_SHLO, 1)[-1][:300] for line in no_shlo[:2]]
    rec["class"], rec["reasons"] = cls, reasons
    return rec
