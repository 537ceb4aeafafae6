"""Make the development install of fxla win over a folder named ``fxla`` next to a script.

``pip install -e .`` maps the import name ``fxla`` to this tree's folders (``fxla`` -> ``api/``,
``fxla.frontend`` -> ``frontend/``, ... as ``[tool.setuptools.package-dir]`` in pyproject.toml says) with a
finder that setuptools *appends* to ``sys.meta_path``, after Python's path finder.  So a script next to any
folder named ``fxla`` (a clone of this repository, say) imports that folder as an empty namespace package
and ``fxla.compile`` is missing.

``python utils/install_finder.py`` (the Makefile's install step runs it after ``pip install -e``) writes two
files into the environment's site-packages:

* ``_fxla_dev_finder.py`` -- a copy of the :class:`DevFinder` below with the package-dir map of pyproject.toml
  baked in as absolute folders;
* ``_fxla_dev_finder.pth`` -- one line that inserts that finder at the *front* of ``sys.meta_path`` when
  Python starts.

The finder answers only for the mapped package names (``fxla``, ``fxla.frontend``, ...) and returns their
folder's ``__init__.py`` with that folder as the package path; every module inside is then found by Python's
own machinery through that path.  Edits to the tree, new modules and new subfolders take effect without
reinstalling; only a change of the package-dir map needs ``make`` again (the Makefile's install rule depends
on pyproject.toml).  Stdlib only: it runs at every interpreter start (a few milliseconds at most; setuptools'
own finder module takes longer to import).
"""
from __future__ import annotations

import os
import sys
from importlib.util import spec_from_file_location

#: import name -> absolute folder; filled in by :func:`write` in the installed copy
MAPPING: "dict[str, str]" = {}


class DevFinder:
    """A meta path finder for the packages of :data:`MAPPING` (import name -> folder holding ``__init__.py``)."""

    @classmethod
    def find_spec(cls, fullname: str, path=None, target=None):
        folder = MAPPING.get(fullname)
        if folder is None:
            return None
        init = os.path.join(folder, "__init__.py")
        if not os.path.isfile(init):
            return None
        return spec_from_file_location(fullname, init, submodule_search_locations=[folder])

    @classmethod
    def invalidate_caches(cls) -> None:
        pass


def install() -> None:
    """Put :class:`DevFinder` first on ``sys.meta_path`` (once)."""
    if DevFinder not in sys.meta_path:
        sys.meta_path.insert(0, DevFinder)


def package_dirs(root: str) -> "dict[str, str]":
    """The ``[tool.setuptools.package-dir]`` map of ``root``/pyproject.toml, as absolute folders."""
    try:
        import tomllib
    except ImportError:                      # Python 3.10: pip vendors the same parser
        from pip._vendor import tomli as tomllib
    with open(os.path.join(root, "pyproject.toml"), "rb") as fh:
        config = tomllib.load(fh)
    dirs = config["tool"]["setuptools"]["package-dir"]
    return {name: os.path.abspath(os.path.join(root, folder)) for name, folder in dirs.items()}


def write(site_packages: str, root: str) -> None:
    """Write ``_fxla_dev_finder.py`` and ``_fxla_dev_finder.pth`` into ``site_packages`` for the tree ``root``."""
    with open(__file__, encoding="utf-8") as fh:
        source = fh.read()
    baked = f"MAPPING: \"dict[str, str]\" = {package_dirs(root)!r}\n"
    source = source.replace('MAPPING: "dict[str, str]" = {}\n', baked, 1)
    with open(os.path.join(site_packages, "_fxla_dev_finder.py"), "w", encoding="utf-8") as fh:
        fh.write(source)
    with open(os.path.join(site_packages, "_fxla_dev_finder.pth"), "w", encoding="utf-8") as fh:
        fh.write("import _fxla_dev_finder; _fxla_dev_finder.install()\n")


if __name__ == "__main__":
    import sysconfig
    write(sysconfig.get_paths()["purelib"], os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
