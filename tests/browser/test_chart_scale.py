"""A benchmark's chart at 10,000 commits in real headless Chromium: drawn with WebGL within a few
seconds, no page error, hover working, and its line the history's fitted levels with one jump per
step that `regress regressions` reports for that benchmark."""

from __future__ import annotations

import json
import time

import pytest
from conftest import Repo
from playwright.sync_api import sync_playwright
from test_browser_report import CHROMIUM_ARGS

from scripts.fabricate_history import fabricate

COMMITS = 10_000
MACHINE = "ci-runner"
# fabricate_history gives its 4th benchmark a 1.3x step (every 10th from the 4th).
STEPPED = "suite000.op / small / float64 [4 threads]"

pytestmark = pytest.mark.usefixtures("chromium")


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("scale")
    repo = Repo(root / "project")
    repo.path.mkdir()
    repo.git("init", "-q", "-b", "main")
    repo.commit(
        "project", {"pyproject.toml": f'[tool.regress]\nresults = "{root / "results"}"\nmachine = "{MACHINE}"\n'}
    )
    fabricate(root / "results", commits=COMMITS, benchmarks=4, rounds="5", times="5", machines=(MACHINE,), direct=True)
    repo.regress("report", "--out", str(root / "site"), check=True, timeout=600)
    found = json.loads(repo.regress("regressions", "--format", "json", check=True).stdout)
    return root / "site", found


def test_a_10000_point_chart_draws_fast_with_hover_and_one_jump_per_step(project, chromium):
    site, found = project
    steps = [s for s in found["steps"] if s["id"] == STEPPED]
    assert steps, found["steps"]  # the fabricated step is found
    (page_path,) = [p for p in (site / "bench").glob("*.html") if "suite000-op-small-float64-4-threads" in p.name]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1300, "height": 900})
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        started = time.perf_counter()
        page.goto(page_path.resolve().as_uri())
        page.wait_for_function(
            "document.getElementById('chart').data !== undefined && document.querySelector('#chart .gl-container canvas') !== null",
            timeout=30_000,
        )
        drawn = time.perf_counter() - started
        traces = page.evaluate(
            "document.getElementById('chart').data.map(t => ({type: t.type, kind: t.meta && t.meta.kind, n: t.x.length, y: t.y}))"
        )
        level = next(t for t in traces if t["kind"] == "level")
        fitted = next(t for t in traces if t["kind"] == "fitted")
        assert level["type"] == "scattergl" and level["n"] >= COMMITS - 200  # a few commits failed or were unsettled
        jumps = sum(1 for a, b in zip(fitted["y"], fitted["y"][1:]) if a != b)
        assert jumps == len(steps)
        # Hover: the mouse on a commit's point about halfway along finds it (Plotly's WebGL picking);
        # a point with no other trace's marker (a failure, a change point) within 40 pixels, which the
        # mouse could find first. Distances are the axis's pixels: a failed commit has no level point,
        # so it is not in the level trace's x at all (the build failure sits mid-history).
        where = page.evaluate(
            """() => { const gd = document.getElementById('chart'), r = gd.getBoundingClientRect();
                       const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
                       const t = gd.data.find(t => t.meta && t.meta.kind === 'level');
                       const marks = gd.data.filter(o => o.meta && ['failed', 'steps'].includes(o.meta.kind))
                                            .flatMap(o => Array.from(o.x, x => xa.d2p(x)));
                       const clear = k => t.y[k] != null && marks.every(p => Math.abs(p - xa.d2p(t.x[k])) > 40);
                       let i = Math.floor(t.x.length / 2);
                       while (i < t.x.length - 1 && !clear(i)) i += 40;
                       return [r.left + xa._offset + xa.d2p(t.x[i]), r.top + ya._offset + ya.d2p(t.y[i]), clear(i)]; }"""
        )
        assert where[2], "no level point clear of the failure and change-point markers"
        page.mouse.move(where[0] - 3, where[1] - 3)
        page.mouse.move(where[0], where[1])
        label = page.locator("#chart .hoverlayer .hovertext").first
        label.wait_for(timeout=10_000)
        text = label.text_content()
        assert "level" in text and "UTC" in text, text
        browser.close()
    assert errors == []
    assert drawn < 15, f"the chart took {drawn:.1f} s to draw"  # a few seconds here; generous for a loaded machine
