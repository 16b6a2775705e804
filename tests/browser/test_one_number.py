"""One number for one benchmark at one commit, wherever the site shows it (issue 21).

The overview's benchmark list, its latest-commit table, the label page's
Compare table and the trend chart's hover all show the level the verdicts
use (the fastest round's fastest block), in real Chromium. A median in one
place and a level in the next was what a user read as a bug; the rounds here
have 1% noise, so the two differ in the third significant figure.
"""

from __future__ import annotations

import re
from decimal import Decimal

from playwright.sync_api import sync_playwright
from test_browser_report import CHROMIUM_ARGS
from test_report import N_COMMITS, STEPPED, bench_page, make_project

from regress.analysis import stats
from regress.storage.store import Store

SCALE = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9, "m": 1e-3, "µ": 1e-6, "n": 1e-9, "": 1.0}


def seconds(text: str, unit: str | None = None) -> tuple[float, float]:
    """A shown time in seconds, and half its last digit's worth (what rounding to the shown digits may move it)."""
    m = re.fullmatch(r"\s*([0-9.]+)\s*([a-zµ]*)\s*", text)
    assert m, text
    number, shown_unit = Decimal(m.group(1)), unit if unit is not None else m.group(2).removesuffix("s") or ""
    scale = SCALE[shown_unit] if shown_unit in SCALE else SCALE[shown_unit + "s"]
    half = Decimal(1).scaleb(number.as_tuple().exponent) / 2
    return float(number) * scale, float(half) * scale


def assert_shows(text: str, level: float, where: str, unit: str | None = None) -> None:
    value, half = seconds(text, unit)
    assert abs(value - level) <= half * 1.01 + 1e-15, f"{where} shows {text!r}, the level is {level:.6g} s"
    assert half / level < 5e-3, f"{where} shows {text!r}: too few digits to tell a level from a median"


def test_overview_label_page_and_chart_hover_show_the_same_number(tmp_path, chromium):
    project = make_project(tmp_path / "demo")
    project.repo.regress("report", check=True)
    site = project.repo.path / "site"
    newest = Store(project.repo.path / ".regress").load("box-a", "default", project.shas[-1])
    result = newest.by_id()[STEPPED]
    level = stats.level(stats.round_values(result))
    assert abs(result.median / level - 1) > 5e-3  # the median would read differently at 4 figures
    name = str(STEPPED)

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1300, "height": 900})

        # The overview: the benchmark list (box-a is the first series column) and the latest-commit
        # table against the baseline (the oldest commit; the step makes it a regression there).
        page.goto((site / "index.html").resolve().as_uri())
        listed = page.locator(f'table.index tr[data-name="{name}"] td.num').first.inner_text()
        assert_shows(listed, level, "the overview's benchmark list")
        assert "newest level" in page.locator("table.index").locator("xpath=..").locator("h2").inner_text()
        latest = page.locator("section.latest").first.locator('.comparison[data-kind="baseline"]')
        row = latest.locator(f'table.verdicts tr[data-name="{name}"] td.num')
        assert_shows(row.nth(1).inner_text(), level, "the latest-commit table")
        assert latest.locator("th").nth(2).inner_text() == "level after"

        # The label page, at its default commit (the newest): the cell and the table's unit.
        label = next((site / "label").glob("matmul-*.html"))
        page.goto(label.resolve().as_uri())
        box = page.locator(".compare-section").first
        assert box.locator("select").input_value() == str(N_COMMITS - 1)
        unit = re.search(r"\(([a-z]+)\)", box.locator(".unit").inner_text()).group(1)
        cell = box.locator("table.compare tbody").nth(0).locator("tr").nth(1).locator("td").nth(0)
        assert "n=64" in box.locator("table.compare tbody").nth(0).locator("tr").nth(1).inner_text()
        assert_shows(cell.inner_text(), level, "the label page", unit)
        assert "The numbers are levels" in page.inner_text("p.caption")

        # The chart: hover the newest point of box-a's line.
        page.goto(bench_page(site, "matmul-n-64-float32-1-thread").resolve().as_uri())
        page.wait_for_function("document.getElementById('chart').data !== undefined")
        index = page.evaluate(
            "document.getElementById('chart').data.findIndex(t => t.meta && t.meta.kind === 'level' && t.meta.series === 0)"
        )
        point = page.locator("#chart .scatterlayer .trace").nth(index).locator(".point").nth(N_COMMITS - 1)
        b = point.bounding_box()
        page.mouse.move(b["x"] + b["width"] / 2, b["y"] + b["height"] / 2)
        hover = page.locator("#chart .hoverlayer .hovertext")
        hover.wait_for()
        text = hover.text_content()
        assert project.shas[-1][:10] in text
        shown = re.search(r"level ([0-9.]+\s*[µmn]?)s", text).group(1)
        assert_shows(shown, level, "the chart's hover")
        browser.close()
