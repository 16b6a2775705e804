"""What each benchmark can detect, on the site in real headless Chromium from file://: the overview's
"detects" column beside each benchmark's newest level and in the newest-against-previous table, and the
line under each chart's title, which a new commit moves.

Rounds of known spread, on a 2-core machine, each push measured with its parent in one run: "calm" (every
round within 0.3% of its floor), "busy" (rounds spread evenly up to 10% above their floor: more rounds
would catch 5%), "wide" (two threads on two cores: no number of rounds would) and a benchmark whose name is
markup.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_browser_report import browser, visit  # noqa: F401 (fixtures)

from regress.analysis import diff
from regress.analysis.diff import compare
from regress.core.records import BenchmarkResult, CommitInfo, CommitResult, Fingerprint, Sample, Settings, TaskSpec
from regress.report import site as report_site
from regress.report.links import bench_slug
from regress.storage.store import Store

pytestmark = pytest.mark.usefixtures("chromium")

EVIL = '<img src=x onerror="alert(1)">'


def _result(sub: str, level: float, top: float, runs_: list[str], threads: int = 1) -> BenchmarkResult:
    values = (level * np.exp(np.linspace(0.0, top, 8))).tolist()
    samples = tuple(
        Sample(10, (v * 10, v * 10.1, v * 10.2), float(i), run=r) for r in runs_ for i, v in enumerate(values)
    )
    return BenchmarkResult(TaskSpec(f"{sub}()", label="ops", sub_label=sub, num_threads=threads), "b.py:1", samples)


def _commit(k: int, n: int, *, busy_top: float = 0.10, at: list[str] | None = None) -> CommitResult:
    """Commit k of n: measured by its push's run, and again by the next push's where there is one (or by `at`)."""
    sha = f"{k:040x}"
    info = CommitInfo(sha, (f"{k - 1:040x}",) if k else (), "A", "a@x", 1000 + k, 1000 + k, f"change {k}")
    at = at or [f"run-{k}"] + ([f"run-{k + 1}"] if k + 1 < n else [])
    level = 1e-4 * (1 + 0.002 * (k % 3))
    results = (
        _result("calm", level, 0.003, at),
        _result("busy", level, busy_top, at),
        _result("wide", 2 * level, 0.003, at, threads=2),
        _result(EVIL, 3 * level, 0.003, at),
    )
    return CommitResult(info, "box", "default", Fingerprint("box", cores=2), Settings(), results)


def _save(store: Store, n: int, **kw) -> list[CommitResult]:
    history = [_commit(k, n, **kw) for k in range(n)]
    for c in history:
        store.save(c)
    return history


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, list[CommitResult]]:
    root = tmp_path_factory.mktemp("browser-detects")
    history = _save(Store(root / "results"), 6)
    report_site.build(Store(root / "results"), root / "site", threshold=0.05, rounds=(5, 15))
    return root, history


def _newest_verdicts(history: list[CommitResult]) -> dict[str, object]:
    """The newest commit against the one before, as the site's recent verdicts judge it (`data.judge_recent`)."""
    apart = diff.Apart(history, {}, cores=2)
    found = compare(history[-2], history[-1], threshold=0.05, before=history[-3], apart=apart)
    return {v.id.sub_label: v for v in found}


def test_the_overview_shows_each_benchmarks_figure_with_what_would_help(built, visit):  # noqa: F811
    root, history = built
    site = root / "site"
    v = visit(site / "index.html")
    v.assert_clean(site)
    page = v.page
    verdicts = _newest_verdicts(history)
    heads = page.locator("table.index thead th").all_inner_texts()
    assert heads == ["benchmark", "box / default", "detects"]
    # Every benchmark's row, by its name as the page holds it (the markup in one of them is text).
    rows = {r.get_attribute("data-name"): r for r in page.locator("table.index tr[data-name]").all()}
    assert len(rows) == len(verdicts) == 4
    cell = {}
    for sub, verdict in verdicts.items():
        cell[sub] = rows[str(verdict.id)].locator("td.detects")
        assert cell[sub].inner_text() == f"{verdict.detectable * 100:.1f}%", sub
        assert f"detects {verdict.detectable * 100:.1f}% at 8 rounds a side" in verdict.reason
    assert "short" not in cell["calm"].get_attribute("class") and "within reach" in cell["calm"].get_attribute("title")
    assert "short" in cell["busy"].get_attribute("class")
    assert f"a 5% change needs {verdicts['busy'].detect_rounds} rounds a side" in cell["busy"].get_attribute("title")
    assert "short" in cell["wide"].get_attribute("class")
    assert "what would help: fewer threads (it uses 2 of 2 cores)" in cell["wide"].get_attribute("title")

    # The newest-against-previous table (what changed or is noisy) carries the same figure in a column of its own.
    previous = page.locator('.comparison[data-kind="previous"] table.verdicts')
    assert previous.locator("thead th").all_inner_texts()[-1] == "detects"
    listed = previous.locator("tbody tr").all()
    assert "ops / wide [2 threads]" in [r.get_attribute("data-name") for r in listed]  # noisy: it can't tell
    for row in listed:
        sub = row.get_attribute("data-name").removeprefix("ops / ").rsplit(" [", 1)[0]
        assert row.locator("td.detects").inner_text() == f"{verdicts[sub].detectable * 100:.1f}%"
    assert page.locator("img").count() == 0  # the markup in a benchmark's name stays text


def _line(visit, site: Path, sub: str, threads: str = "1 thread"):  # noqa: F811
    from regress.core.records import BenchmarkId

    page_path = site / "bench" / f"{bench_slug(BenchmarkId('ops', sub, '', 2 if threads != '1 thread' else 1))}.html"
    v = visit(page_path)
    v.page.wait_for_function("document.getElementById('chart').data !== undefined")
    v.assert_clean(site)
    line = v.page.locator("#detects")
    assert line.is_visible()
    (span,) = line.locator("span").all()
    return v, span, page_path


def test_each_chart_says_what_it_can_detect_and_a_new_commit_moves_the_line(built, visit, tmp_path):  # noqa: F811
    root, _ = built
    site = root / "site"
    _, calm, _ = _line(visit, site, "calm")
    assert calm.get_attribute("class") == "reaches"
    text = calm.inner_text()
    assert text.startswith("detects ") and "in a paired push at 5 rounds" in text and "in the history" in text
    assert "would help" not in text and "needs" not in text
    _, busy, _ = _line(visit, site, "busy")
    assert busy.get_attribute("class") == "short" and "rounds a side (`--min-rounds" in busy.inner_text()
    _, wide, _ = _line(visit, site, "wide", "2 threads")
    assert wide.get_attribute("class") == "short"
    assert "no number of rounds catches a 5% change here; what would help: fewer threads (it uses 2 of 2 cores)" in (
        wide.inner_text()
    )
    v, evil, _ = _line(visit, site, EVIL)
    assert evil.inner_text().startswith("detects ") and v.page.locator("#detects img").count() == 0

    # A new commit whose busy rounds agree: the busy line now within reach (tests/unit/test_site_chunks.py: in
    # a history past one chunk, the chart pages themselves are kept as they were).
    store = Store(root / "results")
    store.save(_commit(5, 7, at=["run-6"]))  # the new push's run measures its parent again
    store.save(_commit(6, 7, busy_top=0.003))
    report_site.build(store, site, threshold=0.05, rounds=(5, 15), incremental=True)
    _, busy, _ = _line(visit, site, "busy")
    assert busy.get_attribute("class") == "reaches" and "needs" not in busy.inner_text()
