"""The HTML report of ``fxla-dump --format html`` in a real headless Chromium (tests/chromium.py): clicking a
graph node or an IR line highlights the op in every stage and shows the user's source line, tabs switch stages,
module groups fold and unfold, search highlights, filters and steps through hits, and the page requests nothing
and reports no error.

Chromium comes from the OS (Debian: ``apt-get install chromium``; ``.ci/run`` installs it).  Without it the test
is skipped, except under CI (``CI=true``), where it fails.  One test, one page, a few seconds: the steps share
the page (pytest-xdist would split several tests over workers, each making the report and starting a browser).
"""
import contextlib
import io
import json
import os

import pytest

from chromium import Chromium, find_chromium
from fxla.tools import dump

MODEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "report_model.py")
PANE0, PANE1 = ".pane[data-pane='0']", ".pane[data-pane='1']"


@pytest.fixture
def browser():
    binary = find_chromium()
    if binary is None:
        why = "no chromium on PATH (Debian: apt-get install chromium; .ci/run installs it)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"the report's browser test needs Chromium under CI: {why}")
        pytest.skip(why)
    with Chromium.launch(binary) as chromium:
        yield chromium


def _texts(page, selector):
    return page.eval(f"Array.from(document.querySelectorAll({json.dumps(selector)})).map(e => e.textContent)")


def _one(page, selector, then):
    """``then`` (JavaScript: ``.textContent``, ``.dataset.stage``...) of the first element matching ``selector``."""
    return page.eval(f"document.querySelector({json.dumps(selector)}){then}")


def _visible(page, selector):
    return page.eval(f"Array.from(document.querySelectorAll({json.dumps(selector)}))"
                     ".filter(e => e.checkVisibility()).length")      # (false inside a folded <details>, too)


def test_report_in_a_real_browser(browser, tmp_path):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert dump.main([f"{MODEL}:net", "--format", "html"]) == 0
    path = tmp_path / "net.html"
    path.write_text(out.getvalue(), encoding="utf-8")
    url = path.as_uri()
    page = browser.open(url)

    # loaded: the model's name, the contents, the graph beside the fxla stage
    assert page.eval("document.title") == "Net · fxla report"
    assert [t.split()[0] for t in _texts(page, "#toc-stages li")] == ["graph", "functional", "code", "fxla",
                                                                       "StableHLO", "HLO"]
    assert _one(page, f"{PANE0} .tab.active", ".dataset.stage") == "graph"
    assert _one(page, f"{PANE1} .tab.active", ".dataset.stage") == "fxla"
    assert "Linear" in _texts(page, f"{PANE0} .ln[data-node='head'] .badge")

    # a graph node: its lines in every stage, and the user's source line
    page.click(f"{PANE0} .ln[data-node='blocks_1_fc']")
    assert [("fxla.linear" in t) for t in _texts(page, f"{PANE1} .code[data-stage='fxla'] .sel")] == [True]
    info = _one(page, "#info", ".innerText")
    assert "%blocks_1_fc" in info and "Linear" in info and "blocks.1" in info
    assert f"{MODEL}:" in info
    assert "self.fc(self.ln(x))" in _one(page, "#info .curline", ".textContent")
    page.click(f"{PANE1} .tab[data-stage='stablehlo']")
    assert any("stablehlo.dot_general" in t for t in _texts(page, f"{PANE1} .code[data-stage='stablehlo'] .sel"))
    page.click(f"{PANE1} .tab[data-stage='hlo']")
    assert any(" dot(" in t for t in _texts(page, f"{PANE1} .code[data-stage='hlo'] .sel"))
    page.click(f"{PANE1} .tab[data-stage='code']")
    assert [t.split()[1] for t in _texts(page, f"{PANE1} .code[data-stage='code'] .sel")] == ["blocks_1_fc"]

    # an IR line: its node in the graph and in the other stages
    page.click(f"{PANE1} .tab[data-stage='stablehlo']")
    lines = json.dumps(f"{PANE1} .code[data-stage='stablehlo'] .ln")
    page.eval(f"Array.from(document.querySelectorAll({lines})).find(e => e.textContent.includes('stablehlo.tanh'))"
              ".id = 'tanh-line'")
    page.click("#tanh-line")
    assert _one(page, f"{PANE0} .ln[data-node='tanh']", ".classList.contains('sel')")
    assert _texts(page, f"{PANE0} .sel") == _texts(page, f"{PANE0} .ln[data-node='tanh']")
    assert "torch.tanh" in _one(page, "#info .curline", ".textContent")

    # module groups: typed, folding and unfolding, selecting a module's nodes
    summary = f"{PANE0} details.mod[data-path='blocks.0'] > summary"
    assert "Block" in _one(page, summary, ".textContent")
    assert _visible(page, f"{PANE0} .ln[data-node='blocks_0_fc']") == 1
    page.click(summary)
    assert _visible(page, f"{PANE0} .ln[data-node='blocks_0_fc']") == 0
    page.click(summary)
    assert _visible(page, f"{PANE0} .ln[data-node='blocks_0_fc']") == 1
    page.click(f"{PANE0} .selmod[data-path='blocks.1']")
    assert [t.split()[0] for t in _texts(page, f"{PANE0} .sel")] == ["%blocks_1_ln", "%blocks_1_fc", "%tanh_1",
                                                                     "%add_1"]
    assert "module blocks.1" in _one(page, "#info", ".innerText")

    # search: counts per stage, highlight, filter, Enter steps to a hit
    page.type("#search", "Torch.Tanh")             # case-insensitive
    page.wait_for("document.querySelector('#hits').textContent !== ''")
    assert _one(page, f"{PANE0} .tab[data-stage='graph'] .n", ".textContent") == "2"
    assert _texts(page, f"{PANE0} .hit") == _texts(page, f"{PANE0} .ln[data-node^='tanh']")
    page.click("#filter")
    assert _visible(page, f"{PANE0} .ln") == 2
    page.eval("document.querySelector('#search').focus()")
    page.press_enter()                                          # in the pane last used: the graph
    assert "torch.tanh" in _one(page, ".cur", ".textContent")
    page.click("#filter")
    assert _visible(page, f"{PANE0} .ln") == 12

    # one pane
    page.click("#split")
    assert _visible(page, ".pane") == 1

    assert page.requests == [url], "the report must load nothing"
    assert page.errors == []
