"""Shared test set-up: import paths, the ``root_dir`` fixture, the order ``make test`` hands tests out in, and the
cores each of its workers keeps to (:func:`_own_cores`).

``make test`` runs pytest with pytest-xdist (``-n auto --dist load``, see the Makefile).  In a worker, the
tests marked ``slow`` (the cross-process and big-model tests, seconds each) come first, in file order, so that no
worker is left running a long test alone at the end; a plain ``pytest`` run keeps file order.

``pytest -m "not slow"`` skips the slow ones for a quick local loop; ``make test`` (and so CI) runs them all.
"""
import atexit
import importlib.util
import os
import shutil
import sys
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")
if EXAMPLES not in sys.path:
    sys.path.insert(0, EXAMPLES)
TESTS = os.path.dirname(os.path.abspath(__file__))  # test-support packages (tests/zoo)
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)


def _own_cores() -> None:
    """In a pytest-xdist worker, keep to a share of the machine's cores (worker k of n: every n-th core from the
    k-th), when there are at least as many cores as workers.  Each worker's torch and XLA size their thread pools
    from the cores they may use (XLA: the affinity mask; torch: set here), so n workers no longer run 2n busy
    threads on n cores (measured: tests/test_train_convergence.py's ResNet-18 took 271 s beside another worker,
    58 s alone).  Processes a test starts inherit the share."""
    worker, count = os.environ.get("PYTEST_XDIST_WORKER"), os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if not worker or not count or not hasattr(os, "sched_setaffinity"):
        return
    cores, count, index = sorted(os.sched_getaffinity(0)), int(count), int(worker.lstrip("gw"))
    if count < 2 or count > len(cores):
        return
    share = cores[index % count::count]
    os.sched_setaffinity(0, share)
    import torch
    torch.set_num_threads(len(share))


_own_cores()

# fxla's on-disk executable cache is on by default in the user's cache folder: the tests never touch the user's.
# Processes the tests start use a folder of this session's ($XDG_CACHE_HOME); in this process the disk cache is
# off, so tests that count compilations see every one (tests of the cache pass cache_dir= or turn it on).
_XDG = tempfile.mkdtemp(prefix="fxla-test-xdg-")
atexit.register(shutil.rmtree, _XDG, ignore_errors=True)
os.environ["XDG_CACHE_HOME"] = _XDG


def pytest_configure(config):
    from fxla.runtime import set_cache_dir
    set_cache_dir(None)
    # the test extras' torchvision (pinned) is a CUDA build: without its operator schemas, `import torchvision`
    # fails, and so do transformers' model classes, which import it (utils/torchvision_cpu.py)
    sys.path.insert(0, os.path.join(ROOT, "utils"))
    try:
        from torchvision_cpu import import_torchvision
    finally:
        sys.path.pop(0)
    if importlib.util.find_spec("torchvision") is not None:
        import_torchvision()


@pytest.fixture
def root_dir():
    return ROOT


@pytest.fixture
def fresh_dynamo():
    """A dynamo without the graphs another test left (before and after the test): dynamo caches compiled frames
    per code object for the whole process."""
    import torch
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    if hasattr(config, "workerinput"):      # a pytest-xdist worker (every worker sorts alike)
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)
