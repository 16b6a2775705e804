"""The site's metric switch (issue 14): chart series and Compare tables of memory,
compile figures and tracked values, bytes with binary prefixes, from stored results."""

from __future__ import annotations

import json
import re

from chart_data import chart_data

from regress.core.records import (
    BenchmarkResult,
    CommitInfo,
    CommitResult,
    CompileStats,
    Fingerprint,
    MemoryUse,
    Sample,
    Settings,
    TaskSpec,
    TrackedValue,
)
from regress.storage.store import Store


def _save(repo, sha, allocated, breaks, params, later=0):
    c = repo.git("show", "-s", "--format=%H%n%ct%n%s", sha).split("\n")
    when = int(c[1]) + later  # commits made in one second: the history's order must not be a tie
    info = CommitInfo(c[0], (), "Test Author", "author@example.com", when, when, c[2])
    timed = BenchmarkResult(
        TaskSpec("f()", label="ops", sub_label="f"),
        "benchmarks/b.py:1 f",
        tuple(Sample(10, (1e-4, 1.01e-4), float(i)) for i in range(3)),
        memory=(MemoryUse(allocated, allocated, "cpu", 1.0),),
        compiled=(CompileStats(0.5, 1 + breaks, breaks, 0, 1.0),),
    )
    tracked = BenchmarkResult(
        TaskSpec("track: track_params()", label="ops", sub_label="track_params"),
        "benchmarks/b.py:9 track_params",
        tracked=(TrackedValue(params, "parameters", "lower", 1.0),),
    )
    Store(repo.path / ".regress").save(
        CommitResult(info, "testbox", "default", Fingerprint("testbox"), Settings(), (timed, tracked))
    )


def _json(page, element):
    return json.loads(re.search(rf'id="{element}">(.*?)</script>', page.read_text()).group(1))


def test_chart_and_label_pages_carry_each_metric(repo):
    base = repo.git("rev-parse", "HEAD")
    head = repo.commit("clone and a graph break")
    _save(repo, base, 256 << 10, 0, 1000)
    _save(repo, head, 512 << 10, 1, 1000, later=60)
    repo.regress("report", check=True)
    site = repo.path / "site"
    (bench,) = [p for p in (site / "bench").glob("*.html") if "track" not in p.name]
    data = chart_data(bench)
    by = {m["metric"]: m for m in data["metrics"]}
    assert {"allocated", "peak", "compile_time", "graphs", "graph_breaks", "recompiles"} <= set(by)
    assert by["allocated"]["series"][0]["text"] == ["256.00 KiB", "512.00 KiB"]
    assert by["allocated"]["title"] == "bytes allocated per call (KiB)" and by["allocated"]["series"][0]["y"] == [
        256,
        512,
    ]
    assert 'id="metrics"' in bench.read_text() and "wall time" in bench.read_text()
    (label,) = (site / "label").glob("*.html")
    tables = {t["metric"]: t for t in _json(label, "label-data")["metrics"]}
    row = tables["allocated"]["rows"][0]
    assert (row["value"], row["change"], row["verdict"]) == ("512.00 KiB", "+100.0%", "regression")
    assert tables["graph_breaks"]["rows"][0]["verdict"] == "regression"
    assert tables["tracked"]["rows"][0]["verdict"] == "unchanged"


def test_the_metric_switch_works_in_a_browser(repo, chromium):
    from playwright.sync_api import sync_playwright

    base = repo.git("rev-parse", "HEAD")
    head = repo.commit("clone")
    _save(repo, base, 256 << 10, 0, 1000)
    _save(repo, head, 512 << 10, 1, 1000, later=60)
    repo.regress("report", check=True)
    site = repo.path / "site"
    (bench,) = [p for p in (site / "bench").glob("*.html") if "track" not in p.name]
    (label,) = (site / "label").glob("*.html")
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(chromium), args=["--headless", "--no-sandbox", "--disable-gpu"])
        page = browser.new_page()
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(bench.resolve().as_uri())
        page.wait_for_selector("#chart .main-svg")
        options = page.eval_on_selector_all("#metrics option", "os => os.map(o => o.textContent)")
        assert options[0] == "wall time" and "bytes allocated per call (KiB)" in options
        page.select_option("#metrics select", label="bytes allocated per call (KiB)")
        page.wait_for_selector("#metrics .metric-view .main-svg")
        assert page.eval_on_selector("#chart", "e => e.hidden") is True
        # Each point at its own commit (named by position in its series' history, in data/commits.js).
        drawn = page.eval_on_selector("#metrics .metric-view", "e => e.data.map(t => [t.x, t.text])")
        assert drawn == [[[base[:10], head[:10]], ["256.00 KiB", "512.00 KiB"]]]
        page.select_option("#metrics select", value="time")
        assert page.eval_on_selector("#chart", "e => e.hidden") is False
        (tracked,) = [p for p in (site / "bench").glob("*.html") if "track" in p.name]
        page.goto(tracked.resolve().as_uri())
        page.wait_for_selector("#metrics .metric-view .main-svg")  # nothing timed: the tracked value's chart
        assert (
            page.eval_on_selector("#metrics select", "s => s.selectedOptions[0].textContent")
            == "tracked value (parameters)"
        )
        page.goto(label.resolve().as_uri())
        page.select_option("#metrics select", label="bytes allocated per call")
        cells = page.eval_on_selector_all("#metrics .metric-table tbody td", "ts => ts.map(t => t.textContent)")
        assert "512.00 KiB" in cells and "regression" in cells
        assert page.eval_on_selector(".compare-section", "e => e.hidden") is True
        browser.close()
    assert errors == []
