"""Measure the constants of ``fxla-grouped-conv``'s cost model (lowering/grouped_conv.py) on this machine.

For grouped convolutions of several group widths ``Ci`` (input channels per group) this times, in plain JAX on
the CPU, XLA's own grouped convolution, the per-tap form the pass writes (``taps``: K*K strided slices, each
multiplied by per-channel weights, or a batched dot over the group width) and a dense convolution with a
block-diagonal kernel (``blockdiag``: G times the multiply-adds, on XLA's fast dense path), and prints nanoseconds
per multiply-add of the grouped convolution for each.  ``COSTS`` in lowering/grouped_conv.py holds the numbers
this printed on the development box (2 cores):

    .venv/bin/python utils/measure_grouped_conv.py
"""
import itertools
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax


def _out_shape(S, K, stride, dil):
    return [(S[i] - dil[i] * (K[i] - 1) - 1) // stride[i] + 1 for i in range(len(K))]


def xla(x, w, G):
    return lax.conv_general_dilated(x, w, (1, 1), [(1, 1), (1, 1)], feature_group_count=G)


def taps(x, w, G):
    N, C = x.shape[:2]
    O, Ci = w.shape[:2]
    Mo, K = O // G, w.shape[2:]
    xp = jnp.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)])
    OS = _out_shape(xp.shape[2:], K, (1, 1), (1, 1))
    P = int(np.prod(OS))
    wg = w.reshape((G, Mo, Ci) + tuple(K))
    acc = None
    for t in itertools.product(*[range(k) for k in K]):
        s = lax.slice(xp, [0, 0, *t], [N, C, t[0] + OS[0], t[1] + OS[1]])
        if Ci == 1 and Mo == 1:
            d = s * w[:, 0, t[0], t[1]].reshape(1, O, 1, 1)
        else:
            d = lax.dot_general(wg[:, :, :, t[0], t[1]], s.reshape(N, G, Ci, P), (((2,), (2,)), ((0,), (1,))))
            d = d.transpose(2, 0, 1, 3).reshape((N, O) + tuple(OS))
        acc = d if acc is None else acc + d
    return acc


def blockdiag(x, w, G):
    O, Ci = w.shape[:2]
    K = w.shape[2:]
    wg = w.reshape((G, O // G, Ci) + tuple(K))
    full = jnp.einsum("gmc...,gh->gmhc...", wg, jnp.eye(G, dtype=w.dtype)).reshape((O, G * Ci) + tuple(K))
    return lax.conv_general_dilated(x, full, (1, 1), [(1, 1), (1, 1)])


def median_ms(f, *args, reps=15):
    f(*args).block_until_ready()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        f(*args).block_until_ready()
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e3


def main():
    rng = np.random.default_rng(0)
    print("Ci  shape               ns/MAC: xla    taps   blockdiag")
    for ci, shape in itertools.product((1, 2, 4, 8, 16, 32), ((1, 96, 56, 56), (8, 96, 28, 28))):
        C = shape[1]
        G = C // ci
        x = jnp.asarray(rng.standard_normal(shape, dtype=np.float32))
        w = jnp.asarray(rng.standard_normal((C, ci, 3, 3), dtype=np.float32))
        macs = shape[0] * C * shape[2] * shape[3] * 9 * ci
        row = []
        for f in (xla, taps, blockdiag):
            row.append(median_ms(jax.jit(lambda x, w, f=f: f(x, w, G)), x, w) * 1e6 / macs)
        print(f"{ci:<3} {str(shape):<20} " + " ".join(f"{v:6.2f}" for v in row), flush=True)


if __name__ == "__main__":
    main()
