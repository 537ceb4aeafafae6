"""The documentation's Python examples run as written."""
import linecache
import pathlib
import re

import pytest

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs"


def python_blocks(path: pathlib.Path):
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


@pytest.mark.parametrize("name", ["tutorial.md", "training.md"])
def test_doc_examples_run(name, capsys):
    namespace = {"__name__": "docs_example"}
    blocks = python_blocks(DOCS / name)
    assert blocks
    for i, block in enumerate(blocks):
        filename = f"{DOCS / name}#block{i}"
        linecache.cache[filename] = (len(block), None, block.splitlines(True), filename)   # source in errors
        code = compile(block, filename, "exec")
        exec(code, namespace)
