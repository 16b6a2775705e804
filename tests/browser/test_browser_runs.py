"""The chart of a history of paired pushes on two CPU models, in real headless Chromium."""

from __future__ import annotations

from dataclasses import replace

import factories
import pytest
from playwright.sync_api import sync_playwright
from test_browser_report import CHROMIUM_ARGS
from test_report import bench_page

from regress.core.records import Fingerprint
from regress.storage.store import Store

pytestmark = pytest.mark.usefixtures("chromium")


def test_chart_hover_names_the_runs_and_cpu_models_and_the_line_ignores_the_switch(repo, chromium):
    # Pushes 0-5 on one CPU model, 6-11 on one 30% slower; paired, so no level moves.
    history = factories.pushes([1e-3] * 12, [1.0] * 6 + [1.3] * 6)
    cpu = {f"20260101T{k:06d}-run{k}": ("Intel Xeon" if k < 6 else "AMD EPYC") for k in range(12)}
    store = Store(repo.path / ".regress")
    for c in history:
        runs = tuple(replace(r, fingerprint=Fingerprint("testbox", cpu=cpu[r.id], cores=2)) for r in c.runs)
        store.save(replace(c, machine="testbox", runs=runs, fingerprint=Fingerprint("testbox", cores=2)))
    repo.regress("report", check=True)
    site = repo.path / "site"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1300, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(bench_page(site, "ops-add").resolve().as_uri())
        page.wait_for_function("document.getElementById('chart').data !== undefined")
        line = page.evaluate(
            "document.getElementById('chart').data.filter(t => t.meta && t.meta.kind === 'level')"
            ".map(t => ({name: t.name, y: t.y}))"
        )
        (only,) = line
        assert only["name"] == "testbox / default (2 CPU models)"
        assert max(only["y"]) / min(only["y"]) < 1.01  # the switch moved no level
        # Commit 5: its own push on the old model, the next push's pair on the new one.
        at = page.evaluate("document.getElementById('chart').data.findIndex(t => t.meta && t.meta.kind === 'level')")
        level = page.locator("#chart .scatterlayer .trace").nth(at)
        box = level.locator(".point").nth(5).bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        label = page.locator("#chart .hoverlayer .hovertext")
        label.wait_for()
        assert "2 runs on Intel Xeon, AMD EPYC" in label.text_content()
        assert errors == []
        browser.close()
