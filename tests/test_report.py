"""The HTML report of ``fxla-dump --format html`` (fxla.tools.report), read as data: what links which line to
which graph node, the module groups, and that the page is self-contained.  tests/test_report_browser.py checks
its behaviour in a real browser."""
import contextlib
import io
import json
import os
import re

import pytest

from fxla.tools import dump, report

MODEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "report_model.py")
DATA = re.compile(r"<script type='application/json' id='report-data'>(.*?)</script>", re.S)


@pytest.fixture(scope="module")
def page():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert dump.main([f"{MODEL}:net", "--format", "html"]) == 0
    return out.getvalue()


@pytest.fixture(scope="module")
def data(page):
    return json.loads(DATA.search(page).group(1))


def _node(data, name):
    return next(i for i, n in enumerate(data["nodes"]) if n["name"] == name)


def _linked(data, stage, name):
    st = next(s for s in data["stages"] if s["id"] == stage)
    return [line for line, n in zip(st["lines"], st["links"]) if n == _node(data, name)]


def test_resolve_loc_expands_aliases():
    aliases = {"loc1": '"/m/model.py":23:22', "loc7": '"fc1"(#loc1)'}
    assert report.resolve_loc("#loc7", aliases) == ("fc1", "/m/model.py", 23)
    assert report.resolve_loc('fused["add"("/m/a.py":3:1), "x"]', {}) == ("add", "/m/a.py", 3)
    assert report.resolve_loc("unknown", {}) == (None, None, None)


def test_mlir_lines_lose_their_locations_and_link_by_the_trailing_loc():
    text = "\n".join(['#loc1 = loc("/m.py":5:3)', '#loc2 = loc("relu"(#loc1))',
                      'func.func @main(%arg0: tensor<2xf32> loc("x"(#loc1))) -> tensor<2xf32> {',
                      '  %0 = fxla.relu %arg0 : tensor<2xf32> -> tensor<2xf32> loc(#loc2)',
                      '  return %0 : tensor<2xf32> loc(unknown)', '} loc(#loc1)'])
    lines, names = report._read_mlir(text)
    assert lines == ["func.func @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {",
                     "  %0 = fxla.relu %arg0 : tensor<2xf32> -> tensor<2xf32>", "  return %0 : tensor<2xf32>", "}"]
    assert names == [None, "relu", None, None]        # the func line's locs are its arguments'


def test_hlo_lines_lose_metadata_and_link_by_op_name():
    lines, names = report._read_hlo(
        '  %fc1.3 = f32[8,128]{1,0} dot(%p0, %p1), lhs_contracting_dims={1}, '
        'metadata={op_name="jit(fxla_main)/fxla_call/fc1" stack_frame_id=14}\n  %c = f32[] constant(0)')
    assert lines == ["  %fc1.3 = f32[8,128]{1,0} dot(%p0, %p1), lhs_contracting_dims={1}", "  %c = f32[] constant(0)"]
    assert names == ["fc1", None]


def test_report_names_the_model_and_has_every_stage(page, data):
    assert "<title>Net · fxla report</title>" in page
    assert data["title"] == "Net" and data["subtitle"].endswith("report_model.py:net")
    assert [s["id"] for s in data["stages"]] == list(dump.STAGES)


def test_each_stage_links_the_lines_of_a_node(data):
    assert _linked(data, "graph", "blocks_1_fc")[0].startswith("%blocks_1_fc : ")
    assert _linked(data, "code", "blocks_1_fc")[0].lstrip().startswith("blocks_1_fc = ")
    assert ["fxla.linear" in line for line in _linked(data, "fxla", "blocks_1_fc")] == [True]
    assert any("stablehlo.dot_general" in line for line in _linked(data, "stablehlo", "blocks_1_fc"))
    assert any(" dot(" in line for line in _linked(data, "hlo", "blocks_1_fc"))
    assert any("stablehlo.tanh" in line for line in _linked(data, "stablehlo", "tanh_1"))


def test_displayed_ir_has_no_locations_or_metadata(data):
    for st in data["stages"]:
        assert not any(" loc(" in line or line.startswith("#loc") for line in st["lines"]), st["id"]
    assert not any("metadata=" in line for line in data["stages"][-1]["lines"])


def test_nodes_carry_module_type_path_and_source(data):
    fc = data["nodes"][_node(data, "blocks_1_fc")]
    assert (fc["op"], fc["type"], fc["path"]) == ("call_module", "Linear", "blocks.1")
    src = data["sources"][fc["src"]]
    assert src["file"] == MODEL and "self.fc(self.ln(x))" in src["text"]
    assert [n for n, _ in src["context"]] == list(range(src["line"] - 2, src["line"] + 3))
    assert data["nodes"][_node(data, "head")]["type"] == "Linear"


def test_graph_is_grouped_by_module_path(data):
    top = [item for item in data["tree"] if isinstance(item, dict)]
    assert [(g["path"], g["type"]) for g in top] == [("blocks", "ModuleList")]
    blocks = [(g["path"], g["type"], [data["nodes"][i]["name"] for i in g["items"]]) for g in top[0]["items"]]
    assert blocks == [("blocks.0", "Block", ["blocks_0_ln", "blocks_0_fc", "tanh", "add"]),
                      ("blocks.1", "Block", ["blocks_1_ln", "blocks_1_fc", "tanh_1", "add_1"])]
    assert all(g["open"] for g in top + top[0]["items"])          # a small graph starts unfolded


def test_big_graph_starts_folded_below_the_top_level(monkeypatch):
    import fxla
    from report_model import net          # (tests/ is on sys.path: conftest.py)

    model, _ = net()
    monkeypatch.setattr(report, "FOLD_ABOVE", 5)
    data = report.report_data({}, ("graph",), fxla.compile(model).graph_module, model, title="Net")
    assert data["tree"][1]["open"] and not any(g["open"] for g in data["tree"][1]["items"])


def test_page_is_self_contained(page):
    assert not re.search(r"https?://|<link|\bsrc=|@import|url\(", page)
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    # the user's source line holds "</script>": it must not end the data element
    assert page.count("</script>") == 2 and "<b>a comment, not markup</b>" not in page


def test_model_name():
    import torch

    def step(x):
        return x

    assert report.model_name(torch.nn.Linear(2, 2)) == "Linear"
    assert report.model_name(step) == "test_model_name.<locals>.step"
