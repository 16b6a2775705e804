"""The published site in real headless Chromium, opened from file:// with no network.

Screenshots of the overview, a label page and a chart page are saved for a
reviewer to look at, in $REGRESS_SCREENSHOTS or else regress-site-screenshots/
under the temp folder (never in the checkout).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import Repo
from playwright.sync_api import Browser, Page, sync_playwright
from test_report import (
    B_EVERY,
    EVIL_AUTHOR,
    EVIL_LABEL,
    EVIL_SUBJECT,
    FAIL_AT,
    N_COMMITS,
    SPECS,
    STEP_AT,
    bench_page,
    make_project,
)

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SHOTS = Path(os.environ.get("REGRESS_SCREENSHOTS") or Path(tempfile.gettempdir()) / "regress-site-screenshots")
REPO_URL = "https://github.com/owner/demo"
# Before any fixture builds a site: without Chromium, one line saying so.
pytestmark = pytest.mark.usefixtures("chromium")


@dataclass
class Sites:
    shas: list[str]
    local: Path  # no repo_url: a click shows the commit on the page
    linked: Path  # repo_url set: a click opens the commit on GitHub


@pytest.fixture(scope="module")
def sites(tmp_path_factory) -> Sites:
    root = tmp_path_factory.mktemp("browser")
    project = make_project(root / "demo")
    project.repo.regress("report", check=True)
    linked = root / "linked"
    shutil.copytree(project.repo.path, linked, ignore=shutil.ignore_patterns("site"))
    (linked / "pyproject.toml").write_text(f'[tool.regress]\nrepo_url = "{REPO_URL}"\n')
    Repo(linked).regress("report", check=True)
    return Sites(project.shas, project.repo.path / "site", linked / "site")


@pytest.fixture(scope="module")
def browser(chromium):
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        yield b
        b.close()


@dataclass
class Visit:
    page: Page
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def assert_clean(self, site: Path) -> None:
        """No console error, no script error, no alert, and every request a file of the site."""
        assert self.errors == [] and self.dialogs == []
        assert self.requests, "nothing was loaded"
        for url in self.requests:
            assert url.startswith(site.resolve().as_uri() + "/"), f"request outside the site: {url}"


@pytest.fixture
def visit(browser: Browser):
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    # window.open is recorded, not followed: nothing may leave the machine.
    context.add_init_script(
        "window.__opened = []; window.open = function (u) { window.__opened.push(u); return null; };"
    )

    def open_(path: Path) -> Visit:
        page = context.new_page()
        v = Visit(page)
        page.on("console", lambda m: v.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: v.errors.append(str(e)))
        page.on("request", lambda r: v.requests.append(r.url))
        page.on("dialog", lambda d: (v.dialogs.append(d.message), d.dismiss()))
        page.goto(path.resolve().as_uri())
        page.wait_for_load_state("load")
        return v

    yield open_
    context.close()


def _open_chart(visit, site: Path, name_part: str) -> Visit:
    """A chart page, once Plotly has drawn it, checked for errors and network use."""
    v = visit(bench_page(site, name_part))
    v.page.wait_for_function(
        "document.getElementById('chart').data !== undefined && document.querySelector('#chart .scatterlayer') !== null"
    )
    v.assert_clean(site)
    return v


def _traces(page: Page, kind: str) -> list[dict]:
    return page.evaluate(
        """kind => document.getElementById('chart').data.map((t, i) => ({i, t}))
            .filter(o => o.t.meta && o.t.meta.kind === kind)
            .map(o => {
                const g = document.querySelector('#chart .scatterlayer .trace' + document.getElementById('chart')._fullData[o.i].uid);
                return {index: o.i, name: o.t.name, x: o.t.x, visible: o.t.visible === undefined ? true : o.t.visible,
                        drawn: g ? g.querySelectorAll('.point').length : 0};
            })""",
        kind,
    )


def test_overview_opens_offline_and_shows_hostile_text_as_text(sites, visit):
    v = visit(sites.local / "index.html")
    v.assert_clean(sites.local)
    page = v.page
    assert page.title() == "demo benchmarks · regress"
    body = page.inner_text("body")
    assert EVIL_SUBJECT in body and EVIL_AUTHOR in body  # shown, not run (no dialog)
    assert page.evaluate("document.querySelectorAll('script').length") == 2
    assert page.locator("table.machines tbody tr").count() == 2
    assert page.locator("table.changes tbody tr").count() >= 2
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "overview.png"), full_page=True)


def test_search_box_filters_benchmarks_by_name(sites, visit):
    page = visit(sites.local / "index.html").page
    rows = page.locator("table.index tr[data-name]")
    assert rows.count() == len(SPECS)

    def visible() -> list[str]:
        return page.eval_on_selector_all(
            "table.index tr[data-name]", "rs => rs.filter(r => !r.hidden).map(r => r.dataset.name)"
        )

    assert len(visible()) == len(SPECS)
    page.fill("#search", "float64")
    assert sorted(visible()) == sorted(str(s.id) for s in SPECS if s.id.description == "float64")
    assert page.inner_text("#search-status") == "4 of 9 benchmarks match “float64”"
    assert page.is_hidden("table.changes")  # the only change point (a float32 one) is filtered out too
    page.fill("#search", "N=128 threads")
    assert sorted(visible()) == ["matmul / n=128 / float32 [2 threads]", "matmul / n=128 / float64 [2 threads]"]
    page.fill("#search", "alert(3)")
    assert visible() == [f"{EVIL_LABEL} / x & y [1 thread]"]
    page.fill("#search", "")
    assert len(visible()) == len(SPECS)


def test_label_page_shows_compare_tables_for_the_chosen_commit(sites, visit):
    label = next((sites.local / "label").glob("matmul-*.html"))
    v = visit(label)
    v.assert_clean(sites.local)
    page = v.page
    box_a, box_b = page.locator(".compare-section").all()
    assert box_a.locator("h2").inner_text() == "box-a / default"
    assert box_a.locator("option").count() == N_COMMITS and box_b.locator("option").count() == N_COMMITS // B_EVERY
    cells = box_a.locator("table.compare td")
    assert cells.count() == 8
    assert all(re.fullmatch(r"\d+(\.\d+)?", t) for t in cells.all_inner_texts())  # newest commit, all measured
    assert box_a.locator(".unit").inner_text().startswith("Times are in ")
    stepped = (
        box_a.locator("table.compare tbody").nth(0).locator("tr").nth(1).locator("td").nth(0)
    )  # n=64 float32, 1 thread

    box_a.locator("select").select_option(str(STEP_AT))
    assert EVIL_SUBJECT in box_a.locator(".selected-commit").inner_text()
    assert stepped.get_attribute("class") in ("num up", "num up2")
    # Colour and hover are the differ's verdict against the previous measured commit, with its reason.
    assert re.fullmatch(
        rf"regression against {sites.shas[STEP_AT - 1][:10]}: \+(4[5-9]|5[0-5])\.\d% slower \(95% interval .*\)",
        stepped.get_attribute("title"),
    )
    others = [c for i, c in enumerate(cells.all()) if i != 0]
    assert all(c.get_attribute("class") in ("num unchanged", "num noisy") for c in others)

    box_a.locator("select").select_option(str(FAIL_AT))
    failing = (
        box_a.locator("table.compare tbody").nth(1).locator("tr").nth(2).locator("td").nth(1)
    )  # n=128 float64, 2 threads
    assert failing.inner_text() == "failed" and failing.get_attribute("class") == "num fail"
    assert failing.get_attribute("title") == "error: RuntimeError: <boom>"
    assert failing.locator("a").get_attribute("href").startswith("../bench/matmul-n-128-float64-2-threads-")
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "label.png"), full_page=True)


def test_evil_label_page_shows_its_name_as_text(sites, visit):
    label = next(p for p in (sites.local / "label").glob("*.html") if not p.name.startswith("matmul-"))
    v = visit(label)
    v.assert_clean(sites.local)
    assert v.page.inner_text("h1") == EVIL_LABEL
    assert v.page.locator("table.compare th.row-name").all_inner_texts() == ["x & y", "x & y"]  # box-a, box-b


def test_trend_chart_points_change_points_hover_and_local_commit(sites, visit):
    v = _open_chart(visit, sites.local, "matmul-n-64-float32-1-thread")
    page = v.page
    medians = _traces(page, "level")  # the line is the level per commit
    assert [(t["name"], len(t["x"]), t["drawn"]) for t in medians] == [
        ("box-a / default", N_COMMITS, N_COMMITS),
        ("box-b / default", N_COMMITS // B_EVERY, N_COMMITS // B_EVERY),
    ]
    steps = _traces(page, "steps")
    assert [(len(t["x"]), t["drawn"]) for t in steps] == [(1, 1), (1, 1)]
    short = sites.shas[STEP_AT][:10]
    assert steps[0]["x"] == [short] and steps[1]["x"] == [short]
    labels = page.locator("#chart .scatterlayer .trace .textpoint").all_text_contents()
    assert len(labels) == 2 and all(re.fullmatch(r"\+(4[5-9]|5[0-5])\.\d%", t) for t in labels)
    # Commits in history order along x.
    assert page.evaluate("document.getElementById('chart').layout.xaxis.categoryarray") == [s[:10] for s in sites.shas]

    def hover(trace: int, point: int) -> tuple[str, dict]:
        page.mouse.move(5, 5)
        page.wait_for_function("!document.querySelector('#chart .hoverlayer .hovertext')")
        box = page.locator("#chart .scatterlayer .trace").nth(trace).locator(".point").nth(point).bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        label = page.locator("#chart .hoverlayer .hovertext")
        label.wait_for()
        return label.text_content(), box

    text, _ = hover(medians[0]["index"], STEP_AT - 1)
    date = time.strftime("%Y-%m-%d %H:%M", time.gmtime(1_700_000_000 + 3600 * (STEP_AT - 1)))
    assert f"{sites.shas[STEP_AT - 1][:10]} Change number {STEP_AT - 1}Test Author · {date} UTClevel " in text
    assert text.startswith("box-a / default")
    # The change point at the commit whose subject is a script tag: shown as text, not run.
    text, box = hover(steps[0]["index"], 0)
    assert f"{sites.shas[STEP_AT][:10]} {EVIL_SUBJECT}{EVIL_AUTHOR} · " in text
    assert "change point (regression)" in text
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "chart.png"), full_page=True)

    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    detail = page.locator("#commit-detail")
    detail.wait_for()
    assert detail.locator(".subject").inner_text() == EVIL_SUBJECT
    assert sites.shas[STEP_AT] in detail.locator(".meta").inner_text()
    assert "No repository URL is configured" in detail.locator(".link").inner_text()
    assert page.evaluate("window.__opened") == []
    assert v.dialogs == [] and v.errors == []


def test_chart_marks_failures_switches_axis_and_hides_series(sites, visit):
    v = _open_chart(visit, sites.local, "matmul-n-128-float64-2-threads")
    page = v.page
    failed = _traces(page, "failed")
    assert [(len(t["x"]), t["drawn"]) for t in failed] == [(1, 1)]
    assert failed[0]["x"] == [sites.shas[FAIL_AT][:10]]
    assert [len(t["x"]) for t in _traces(page, "level")] == [N_COMMITS - 1, N_COMMITS // B_EVERY]

    page.locator("#chart .legend .traces").nth(1).click()  # hide box-b
    page.wait_for_function("document.getElementById('chart').data.some(t => t.visible === 'legendonly')")
    page.check("input[name=xaxis][value=date]")
    page.wait_for_function("document.getElementById('chart').layout.xaxis.type === 'date'")
    medians = _traces(page, "level")
    assert [m["visible"] for m in medians] == [True, "legendonly"]  # a series stays hidden across the switch
    assert medians[0]["x"][0].startswith("2023-11-14")
    hidden = page.evaluate("document.getElementById('chart').data.filter(t => t.meta.series === 1).map(t => t.visible)")
    assert hidden and set(hidden) == {"legendonly"}  # its band and markers go with it
    assert v.errors == []


def test_click_opens_commit_on_repository_host(sites, visit):
    v = _open_chart(visit, sites.linked, "matmul-n-64-float32-1-thread")
    page = v.page
    median = _traces(page, "level")[0]
    point = page.locator("#chart .scatterlayer .trace").nth(median["index"]).locator(".point").nth(3)
    box = point.bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_function("window.__opened.length > 0")
    assert page.evaluate("window.__opened") == [f"{REPO_URL}/commit/{sites.shas[3]}"]
    assert page.locator("#commit-detail .link a").get_attribute("href") == f"{REPO_URL}/commit/{sites.shas[3]}"
