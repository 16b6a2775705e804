"""The label page's colours and hover text are the differ's verdicts, in real headless Chromium from file://.

The history is tests/unit/test_report_verdicts.py's: a clean 2x slowdown (a
regression) and a median jump whose rounds disagree (noisy). Browser and
page fixtures come from tests/browser/test_browser_report.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_browser_report import SHOTS, browser, visit  # noqa: F401 (fixtures)
from test_report_verdicts import (
    JUMP_AT,
    JUMPY,
    N_COMMITS,
    SLOW_AT,
    STEADY,
    _sha,
    make_verdict_history,
)

from regress.analysis.diff import compare
from regress.report import site as report
from regress.storage.store import Store

pytestmark = pytest.mark.usefixtures("chromium")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, list]:
    root = tmp_path_factory.mktemp("browser-verdicts")
    history = make_verdict_history(root / "results")
    report.build(Store(root / "results"), root / "site", threshold=0.05)
    return root / "site", history


def test_label_cells_show_verdict_class_and_reason(built, visit):  # noqa: F811
    site, history = built
    (label,) = (site / "label").glob("ops-*.html")
    v = visit(label)
    v.assert_clean(site)
    page = v.page
    section = page.locator(".compare-section")
    assert section.locator("option").count() == N_COMMITS
    cells = section.locator("table.compare td")
    rows = section.locator("table.compare th.row-name").all_inner_texts()
    assert len(rows) == cells.count() == 4  # one column (float32), one thread group: a cell per row

    def cell(bid):
        return cells.nth(rows.index(bid.sub_label))

    section.locator("select").select_option(str(SLOW_AT))
    (regression,) = [x for x in compare(history[SLOW_AT - 1], history[SLOW_AT], threshold=0.05) if x.id == STEADY]
    assert regression.verdict == "regression"
    steady = cell(STEADY)
    assert steady.get_attribute("class") == "num up2"
    assert steady.get_attribute("title") == f"regression against {_sha(SLOW_AT - 1)[:10]}: {regression.reason}"
    assert "slower (95% interval" in steady.get_attribute("title")
    colour = steady.evaluate("td => getComputedStyle(td).backgroundColor")
    assert colour == "rgb(255, 168, 168)"  # --up2-bg
    assert cell(JUMPY).get_attribute("class") == "num unchanged"
    assert page.is_hidden(".judged-note")

    section.locator("select").select_option(str(JUMP_AT))
    jumpy = cell(JUMPY)
    assert jumpy.get_attribute("class") == "num noisy"
    assert jumpy.get_attribute("title").startswith(f"noisy against {_sha(JUMP_AT - 1)[:10]}: ")
    assert jumpy.evaluate("td => getComputedStyle(td).backgroundColor") not in (colour, "rgb(255, 227, 227)")

    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "label-verdicts.png"), full_page=True)

    section.locator("select").select_option("0")
    assert cell(STEADY).get_attribute("class") == "num none"
    assert cell(STEADY).get_attribute("title").startswith("no verdict: the first measurement")
    assert v.errors == [] and v.dialogs == []


def test_chart_markers_sit_on_the_fitted_line(built, visit):  # noqa: F811
    site, _ = built
    page_path = next(p for p in (site / "bench").glob("*.html") if p.name.startswith("ops-steady-"))
    v = visit(page_path)
    page = v.page
    page.wait_for_function(
        "document.getElementById('chart').data !== undefined && document.querySelector('#chart .scatterlayer') !== null"
    )
    v.assert_clean(site)
    line, marks = page.evaluate(
        """() => { const d = document.getElementById('chart').data;
                   const f = k => d.find(t => t.meta && t.meta.kind === k);
                   return [{x: f('fitted').x, y: f('fitted').y}, {x: f('steps').x, y: f('steps').y}]; }"""
    )
    # The line is the fitted levels; the change point's marker sits where it jumps (its level after).
    assert marks["x"] == [_sha(SLOW_AT)[:10]]
    at = line["x"].index(marks["x"][0])
    assert marks["y"] == [line["y"][at]] and line["y"][at] != line["y"][at - 1]
    title = page.evaluate("document.getElementById('chart').layout.yaxis.title.text")
    assert "level" in title and "quartiles of the rounds" in title
    # Hovering the marker (on the fitted line) tells of the change point and the level.
    steps_index = page.evaluate(
        "document.getElementById('chart').data.findIndex(t => t.meta && t.meta.kind === 'steps')"
    )
    uid = page.evaluate(f"document.getElementById('chart')._fullData[{steps_index}].uid")
    box = page.locator(f"#chart .scatterlayer .trace{uid} .point").first.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    label = page.locator("#chart .hoverlayer .hovertext")
    label.wait_for()
    text = label.text_content()
    assert "change point (regression): +" in text and "level " in text and _sha(SLOW_AT)[:10] in text
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "chart-verdicts.png"), full_page=True)
