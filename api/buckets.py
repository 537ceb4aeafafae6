"""``fxla.bucketed``: pad a variable length up to a few sizes, so a serving loop compiles a bounded number of programs.

With symbolic dims (``dynamic=``, torch.compile's graphs) a new length costs no trace or lowering, but XLA still
compiles one executable per length.  A loop over every prompt length from 1 to 512 compiles 512 executables;
padded to the buckets 32, 64, 128, 256 and 512 it compiles five::

    serve = fxla.bucketed(model, sizes=(32, 64, 128, 256, 512),
                          pad={"input_ids": (1, 0), "attention_mask": (1, 0)})
    out = serve(input_ids=ids, attention_mask=mask)     # ids [1, 37] runs as [1, 64]; outputs sliced back to 37

``pad`` maps each argument to pad to ``(dim, fill value)``: the length is that dim's size (equal in every padded
argument), padded at the end (``side="left"``: at the start, as ``generate()`` takes a padded prompt) up to the
smallest bucket that holds it (a length above the largest bucket runs unpadded).  The results are cut back by
the padding along the dims that padding lengthened (learnt at the bucket's first call, below): a prompt loop
through ``generate`` compiles a few prefills::

    generate = fxla.bucketed(model.generate, sizes=(16, 32, 64), side="left",
                             pad={"input_ids": (1, 0), "attention_mask": (1, 0)})
    tokens = generate(input_ids=ids, attention_mask=mask, max_new_tokens=32, do_sample=False)

Padding is only right where the model ignores the padded positions -- an attention mask of zeros over them, and
no op mixing positions without it (a mean over the sequence, a bidirectional attention without the mask).  fxla
cannot prove that for a model, so it checks: the first call of each length also runs the unpadded inputs, finds
the output dims that padding lengthened (each is cut back by what padding added, at this and every later call of
that length: a pooled or strided output dim by less than the padding), and compares the results (float tolerance
by dtype, exact for integers and booleans); a difference raises :class:`BucketError` (again at every call of that
length).  So each new length costs one unpadded
call once, and a model that padding changes is refused rather than answered differently.

``check="bucket"`` checks only the first two lengths of each bucket and then pads every other length of the
bucket unchecked, cutting the dims those two checks agreed padding lengthens by exactly the padding (a bucket
then compiles at most three programs, not one more per length): the caller vouches that the model ignores the
padding at every length, which fxla cannot check there (an op that reads a fixed number of leading positions,
``x[:, :8]``, may see padding at a short length only).  A cut that does not fit an output raises
:class:`BucketError`.
"""
from __future__ import annotations

import bisect
import inspect
import threading
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

import torch
from torch.utils import _pytree as pytree

from fxla.base.errors import FxlaError

__all__ = ["bucketed", "Bucketed", "BucketError"]

#: per dtype: (rtol, atol) of the check that padding does not change a result
_TOLERANCE = {torch.float16: (1e-2, 1e-2), torch.bfloat16: (2e-2, 2e-2), torch.float32: (1e-4, 1e-5),
              torch.float64: (1e-7, 1e-9)}


class BucketError(FxlaError):
    """Bucketing a call would change its result (or cannot be applied to these arguments)."""


class Bucketed:
    """``fn`` with its variable length padded to a few sizes (see the module docstring)."""

    def __init__(self, fn: Callable, sizes: Sequence[int], pad: Dict[str, Tuple[int, Any]], side: str = "right",
                 check: str = "length"):
        if check not in ("length", "bucket"):
            raise BucketError(f"check={check!r}: check each new 'length' against an unpadded call, or the first two "
                              f"lengths of each 'bucket'", fix="pass check='length' (default) or check='bucket'")
        self.check = check
        if side not in ("right", "left"):
            raise BucketError(f"side={side!r}: pad on the 'right' (the end) or the 'left' (the start)",
                              fix="pass side='right' (default) or side='left'")
        self.left = side == "left"
        if not sizes or any(not isinstance(s, int) or s < 1 for s in sizes):
            raise BucketError(f"sizes={sizes!r}: need positive ints", fix="pass sizes such as (32, 64, 128)")
        if not pad or any(not (isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], int)) for v in pad.values()):
            raise BucketError(f"pad={pad!r}: need {{argument name: (dim, fill value)}}",
                              fix='pass pad={"input_ids": (1, 0), "attention_mask": (1, 0)}')
        self.fn = fn
        self.sizes = sorted(set(sizes))
        self.pad = dict(pad)
        forward = getattr(fn, "_orig_mod", fn).forward if isinstance(fn, torch.nn.Module) else fn   # (_orig_mod:
        # torch.compile's module, whose forward takes *args: the model's names bind the call)
        try:
            self._signature = inspect.signature(forward)
        except (TypeError, ValueError):
            self._signature = None
        unknown = [n for n in self.pad if self._signature is not None and n not in self._signature.parameters
                   and not any(p.kind is p.VAR_KEYWORD for p in self._signature.parameters.values())]
        if unknown:
            raise BucketError(f"pad= names {unknown}, which {getattr(fn, '__name__', type(fn).__name__)} does not "
                              f"take", fix="name the arguments of the model's forward")
        #: (bucket, the other arguments' key) -> {length: (the outputs' layout, per output leaf the dims padding
        #: lengthens)} (learnt and checked at the length's first call with such other arguments; used on outputs
        #: laid out alike only)
        self.plans: Dict[Tuple, Dict[int, Tuple]] = {}
        #: (bucket, the other arguments' key) -> the plan its first two checked lengths agreed on
        #: (``check="bucket"``: used unchecked)
        self.trusted: Dict[Tuple, Tuple] = {}
        self._lock = threading.Lock()

    def bucket(self, length: int) -> Optional[int]:
        """The bucket a length runs in (``None``: above the largest, unpadded)."""
        i = bisect.bisect_left(self.sizes, length)
        return self.sizes[i] if i < len(self.sizes) else None

    def __call__(self, *args, **kwargs):
        if self._signature is None:
            raise BucketError("cannot bind the call's arguments by name", fix="bucket a module or a Python function")
        bound = self._signature.bind(*args, **kwargs)
        values = dict(bound.arguments)
        positional = next((n for n, p in self._signature.parameters.items() if p.kind is p.VAR_POSITIONAL), None)
        if positional is not None and values.get(positional) and any(n not in self._signature.parameters
                                                                     for n in self.pad):
            raise BucketError(f"cannot tell which positional argument is {', '.join(self.pad)}: the function takes "
                              f"*{positional}", fix="pass the padded arguments by keyword")
        extra = values.pop(next((n for n, p in self._signature.parameters.items() if p.kind is p.VAR_KEYWORD), ""),
                        {})
        values.update(extra)
        lengths = {}
        for name, (dim, _) in self.pad.items():
            value = values.get(name)
            if value is None:
                continue
            if not isinstance(value, torch.Tensor):
                raise BucketError(f"pad= names {name}, but the call passes {type(value).__name__} there",
                                  fix="pass a tensor")
            lengths[name] = value.shape[dim]
        if not lengths:
            return self.fn(*args, **kwargs)
        if len(set(lengths.values())) != 1:
            raise BucketError(f"the padded arguments have different lengths: {lengths}",
                              fix="pass arguments of one length along the padded dims")
        length = next(iter(lengths.values()))
        size = self.bucket(length)
        if size is None or size == length:
            return self.fn(*args, **kwargs)
        padded = dict(values)
        for name in lengths:
            dim, fill = self.pad[name]
            t = values[name]
            shape = list(t.shape)
            shape[dim] = size - length
            filler = torch.full(shape, fill, dtype=t.dtype, device=t.device)
            padded[name] = torch.cat([filler, t] if self.left else [t, filler], dim=dim)
        extra = size - length
        others = _call_key({k: v for k, v in values.items() if k not in lengths})    # (a flag can change outputs)
        with self._lock:
            plan = self.plans.get((size, others), {}).get(length)
            if plan is None and self.check == "bucket":
                plan = self.trusted.get((size, others))
        if plan is not None:
            got = self.fn(**padded)
            if _fits(got, plan):
                return _unpad(got, plan[1], extra, self.left, length, size)
        want = self.fn(**values)
        got = self.fn(**padded)
        cuts = [[(d, n - m) for d, (n, m) in enumerate(zip(g.shape, w.shape)) if n > m]
                if isinstance(g, torch.Tensor) and isinstance(w, torch.Tensor) and g.dim() == w.dim() else []
                for g, w in zip(pytree.tree_leaves(got), pytree.tree_leaves(want))]
        result = _unpad(got, cuts, extra, self.left, length, size)
        self._check(result, want, length, size)
        with self._lock:
            checked = self.plans.setdefault((size, others), {})
            checked[length] = (_layout(got), cuts)
            if len(checked) == 2:
                # the dims both lengths cut by exactly their padding; a bucket whose checks cut otherwise (a
                # strided or pooled output) keeps checking each new length
                both = [(p[0], [[(d, None) for d, _ in leaf] for leaf in p[1]])
                        if all(cut == size - n for leaf in p[1] for _, cut in leaf) else None
                        for n, p in checked.items()]
                if both[0] is not None and both[0] == both[1]:
                    self.trusted[(size, others)] = both[0]
        return result


    def _check(self, got, want, length: int, size: int) -> None:
        got_leaves, got_spec = pytree.tree_flatten(got)
        want_leaves, want_spec = pytree.tree_flatten(want)
        problem = None
        if got_spec != want_spec:
            problem = "the outputs have another structure"
        for i, (g, w) in enumerate(zip(got_leaves, want_leaves)):
            if problem is not None:
                break
            if isinstance(w, torch.Tensor):
                if not isinstance(g, torch.Tensor) or g.shape != w.shape or g.dtype != w.dtype:
                    problem = f"output {i} is {tuple(getattr(g, 'shape', ()))} padded, {tuple(w.shape)} unpadded"
                elif w.dtype.is_floating_point:
                    rtol, atol = _TOLERANCE.get(w.dtype, (1e-4, 1e-5))
                    scale = max(1.0, w.abs().max().item()) if w.numel() else 1.0
                    if not torch.allclose(g, w, rtol=rtol, atol=atol * scale, equal_nan=True):
                        problem = f"output {i} differs by up to {(g - w).abs().max().item():.3g}"
                elif not torch.equal(g, w):
                    problem = f"output {i} differs"
            elif g != w:
                problem = f"output {i} is {g!r} padded, {w!r} unpadded"
        if problem is not None:
            raise BucketError(f"padding length {length} to the bucket {size} changes the result: {problem}",
                              why="why: the model does not ignore the padded positions (no attention mask over them, "
                                  "or an op that mixes positions without it)",
                              fix="pass the mask that covers the padding in pad= (fill 0), or do not bucket this "
                                  "model (symbolic dims alone compile one program per length)")


def _call_key(values: Dict[str, Any]) -> Tuple:
    """The arguments other than the padded ones, as far as they can decide the outputs' structure: plain values,
    tensors' shapes and dtypes, other objects' types."""
    def key(v):
        if isinstance(v, torch.Tensor):
            return ("tensor", tuple(v.shape), v.dtype)
        if v is None or isinstance(v, (bool, int, float, str)):
            return (type(v), v)
        if isinstance(v, (tuple, list)):
            return (type(v), tuple(key(x) for x in v))
        if isinstance(v, dict):
            return (type(v), tuple((k, key(x)) for k, x in v.items()))
        if hasattr(v, "__dict__") and not isinstance(v, torch.nn.Module):     # (a config object's flags)
            return (type(v), tuple((k, key(x)) for k, x in vars(v).items() if not k.startswith("_")))
        return type(v)
    return tuple((name, key(v)) for name, v in sorted(values.items()))


def _layout(result) -> Tuple:
    """The structure and ranks of a result: a plan is used only on results laid out as the one it was made from."""
    leaves, spec = pytree.tree_flatten(result)
    return spec, tuple(leaf.dim() if isinstance(leaf, torch.Tensor) else type(leaf) for leaf in leaves)


def _fits(result, plan) -> bool:
    return _layout(result) == plan[0]


def _unpad(result, plan, extra: int, left: bool, length: int, size: int):
    """``result`` with each tensor leaf cut along the dims of ``plan`` (per leaf ``(dim, elements)``; ``None``
    elements: ``extra``), at the start if ``left``; a cut that does not fit the leaf raises :class:`BucketError`."""
    leaves, spec = pytree.tree_flatten(result)
    out = []
    for i, (leaf, dims) in enumerate(zip(leaves, plan + [[]] * (len(leaves) - len(plan)))):
        for d, cut in dims:
            cut = extra if cut is None else cut
            if not isinstance(leaf, torch.Tensor) or d >= leaf.dim() or leaf.shape[d] < cut:
                shape = tuple(leaf.shape) if isinstance(leaf, torch.Tensor) else type(leaf).__name__
                raise BucketError(
                    f"cannot cut the padding of length {length} (bucket {size}) off output {i}: it is {shape}, and "
                    f"dim {d} was to lose {cut} elements",
                    why="why: check='bucket' cuts the dims that padding lengthened by exactly the padding at the "
                        "bucket's first two lengths; at this length padding lengthens this output otherwise (a "
                        "strided or pooled output length)",
                    fix="use check='length' (the default: each new length is checked once against an unpadded call)")
            leaf = leaf.narrow(d, cut if left else 0, leaf.shape[d] - cut)
        out.append(leaf)
    return pytree.tree_unflatten(out, spec)


def bucketed(fn: Callable, *, sizes: Sequence[int], pad: Dict[str, Tuple[int, Any]], side: str = "right",
             check: str = "length") -> Bucketed:
    """``fn`` (a model, compiled or not, or a method such as ``model.generate``) with the variable length of the
    ``pad`` arguments padded to the next of ``sizes`` (at the end, or the start with ``side="left"``); each new
    length is checked once against an unpadded call (``check="bucket"``: the first two lengths of each bucket);
    see :mod:`fxla.buckets`."""
    return Bucketed(fn, sizes, pad, side, check)
