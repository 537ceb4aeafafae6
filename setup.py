"""Builds fxla's one C extension, ``fxla.runtime._fastcall`` (runtime/_fastcall.c: a compiled signature's call
made without a Python frame); everything else about the package is in pyproject.toml.  It needs a C compiler and
the Python headers (``pip install`` finds both on a usual Linux or macOS machine)."""
import numpy
from setuptools import Extension, setup

setup(ext_modules=[Extension("fxla.runtime._fastcall", ["runtime/_fastcall.c"],
                             include_dirs=[numpy.get_include()])])
