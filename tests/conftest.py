"""Shared test set-up: import paths, the ``root_dir`` fixture, and the order ``make test`` hands tests out in.

``make test`` runs pytest with pytest-xdist (``-n auto --dist load``, see the Makefile).  In a worker, the
tests marked ``slow`` (the cross-process and big-model tests, seconds each) come first, in file order, so that no
worker is left running a long test alone at the end; a plain ``pytest`` run keeps file order.

``pytest -m "not slow"`` skips the slow ones for a quick local loop; ``make test`` (and so CI) runs them all.
"""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")
if EXAMPLES not in sys.path:
    sys.path.insert(0, EXAMPLES)
TESTS = os.path.dirname(os.path.abspath(__file__))  # test-support packages (tests/zoo)
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)


@pytest.fixture
def root_dir():
    return ROOT


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    if hasattr(config, "workerinput"):      # a pytest-xdist worker (every worker sorts alike)
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)
