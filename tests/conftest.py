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
