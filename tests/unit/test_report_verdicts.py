"""The site's colours are the differ's verdicts, and its chart line is the level the change points use.

A fabricated history (results written through `Store`, as `regress run`
writes them, 10 rounds per commit): one benchmark gets a clean 2x slowdown
(every round agrees), another gets a big jump of its median at one commit
whose rounds disagree (one quiet round at the old floor, the rest slowed by
a busy machine). The old colouring, by the ratio of medians, called both
"much slower"; the differ calls the first a regression and the second noisy,
and so must the site. `make_verdict_history` is shared with the browser test
(tests/browser/test_browser_verdicts.py).
"""

from __future__ import annotations

import hashlib
import html
import json
import random
import re
from pathlib import Path

import pytest
from chart_data import chart_data, label_page_data
from markupsafe import escape

from regress.analysis import stats
from regress.analysis.diff import compare
from regress.core.records import (
    BenchmarkResult,
    CommitInfo,
    CommitResult,
    Failure,
    Fingerprint,
    Sample,
    Settings,
    TaskSpec,
)
from regress.report import data as report_data
from regress.report import pages
from regress.report import site as report
from regress.report.data import Series, summarize
from regress.report.data_files import judged_cells, label_inputs, label_tables, layout_for, verdict_class
from regress.storage.store import Store

N_COMMITS = 14
ROUNDS = 10
SLOW_AT = 6  # STEADY is 2x slower from here on, every round agreeing
JUMP_AT = 10  # JUMPY's median jumps here, but only because most rounds were slowed
GONE_AT = 11  # SOMETIMES fails here; at GONE_AT + 1 it is judged against GONE_AT - 1
HOSTILE = 'x<y>&"z"'
SPECS = {
    name: TaskSpec(stmt=f"{name}()", label="ops", sub_label=sub, description="float32", num_threads=1)
    for name, sub in (("steady", "steady"), ("jumpy", "jumpy"), ("calm", HOSTILE), ("sometimes", "sometimes"))
}
STEADY, JUMPY, CALM, SOMETIMES = (SPECS[n].id for n in ("steady", "jumpy", "calm", "sometimes"))
BASE_LEVEL = {"steady": 10e-6, "jumpy": 40e-6, "calm": 3e-6, "sometimes": 120e-6}
MACHINE, ENV = "box", "default"


def _sha(i: int) -> str:
    return hashlib.sha1(f"verdicts {i}".encode()).hexdigest()


def _rounds(rng: random.Random, floor: float, slowdowns: list[float], number: int = 100) -> tuple[Sample, ...]:
    """One Sample per round: 5 blocks, the fastest at floor x that round's slowdown."""
    out = []
    for slow in slowdowns:
        best = floor * slow * rng.lognormvariate(0, 0.002)
        blocks = [best] + [best * (1 + abs(rng.gauss(0, 0.01))) for _ in range(4)]
        rng.shuffle(blocks)
        out.append(Sample(number, tuple(t * number for t in blocks)))
    return tuple(out)


def make_verdict_history(store_root: Path) -> list[CommitResult]:
    """N_COMMITS commits of the four benchmarks on one machine, saved in a Store at store_root; oldest first."""
    rng = random.Random(11)
    store = Store(store_root)
    history = []
    for i in range(N_COMMITS):
        info = CommitInfo(
            _sha(i),
            (_sha(i - 1),) if i else (),
            "Test Author",
            "author@example.com",
            1_700_000_000 + 3600 * i,
            1_700_000_000 + 3600 * i,
            f"Change number {i}",
        )
        results = []
        for name, spec in SPECS.items():
            level = BASE_LEVEL[name]
            slowdowns = [1.0] * ROUNDS
            if name == "steady" and i >= SLOW_AT:
                level *= 2.0
            if name == "jumpy" and i == JUMP_AT:
                # One quiet round at the old floor, the rest slowed 1.6-3x by the neighbours.
                slowdowns = [1.0] + [rng.uniform(1.6, 3.0) for _ in range(ROUNDS - 1)]
            if name == "sometimes" and i == GONE_AT:
                results.append(
                    BenchmarkResult(spec, "benchmarks/ops.py:1", failure=Failure("error", "RuntimeError: flaky"))
                )
                continue
            results.append(BenchmarkResult(spec, "benchmarks/ops.py:1", _rounds(rng, level, slowdowns)))
        fp = Fingerprint(MACHINE, cpu="Test CPU", cores=4, python="3.11.7", torch_version="2.13.0")
        cr = CommitResult(info, MACHINE, ENV, fp, Settings(), tuple(results))
        store.save(cr)
        history.append(cr)
    return history


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> tuple[Path, list[CommitResult]]:
    root = tmp_path_factory.mktemp("verdicts") / "results"
    return root, make_verdict_history(root)


@pytest.fixture(scope="module")
def site(history, tmp_path_factory) -> Path:
    root, _ = history
    out = tmp_path_factory.mktemp("verdict-site") / "site"
    report.build(Store(root), out, threshold=0.05)
    return out


def _tables(history: list[CommitResult]) -> tuple[Series, list, list[dict]]:
    series = summarize(Series(MACHINE, ENV, history), threshold=0.05)
    grid = layout_for([s.id for s in SPECS.values()])
    tables = label_tables(series, grid)
    over = judged_cells(series, label_inputs(series, grid))  # the verdicts over the cells, as the page lays them
    for t in tables:
        t["judged"] = t["c"] >= series.judged_from
        for k, v in enumerate(over.get(t["c"], ())):
            if v is not None and t["cells"][k] is not None and t["cells"][k][1] != "fail":
                t["cells"][k] = [t["cells"][k][0], *v]
    return series, grid, tables


def _cell(grid, table: dict, bid) -> list:
    return table["cells"][grid.cells.index(bid)]


def _json(page: Path, element: str) -> dict:
    return json.loads(
        re.search(rf'id="{element}">(.*?)</script>', page.read_text(encoding="utf-8"), re.DOTALL).group(1)
    )


def _shas(site: Path, s: dict) -> list[str]:
    """A chart series' commits: its points name them by position in the series' history, in data/commits.js."""
    text = (site / "data" / "commits.js").read_text(encoding="utf-8")
    named = json.loads(text.removeprefix("window.REGRESS_COMMITS = ").rstrip().removesuffix(";"))["series"]
    return [named[s["name"]]["sha"][k] for k in s["at"]]


def test_cells_are_coloured_by_verdicts_not_by_medians(history):
    _, results = history
    _, grid, tables = _tables(results)
    assert [t["c"] for t in tables] == list(range(N_COMMITS)) and all(t["judged"] for t in tables)
    median = lambda bid, at: results[at].by_id()[bid].median  # torch's, every block pooled

    # STEADY at SLOW_AT: 2x slower in every round: a regression, the strong class.
    v = {x.id: x for x in compare(results[SLOW_AT - 1], results[SLOW_AT], threshold=0.05)}
    assert v[STEADY].verdict == "regression" and 1.9 < v[STEADY].ratio < 2.1
    _, cls, title = _cell(grid, tables[SLOW_AT], STEADY)
    assert cls == "up2"
    assert title == f"regression against {_sha(SLOW_AT - 1)[:10]}: {v[STEADY].reason}"
    assert title.startswith(f"regression against {_sha(SLOW_AT - 1)[:10]}: +") and "slower" in title
    assert median(STEADY, SLOW_AT) / median(STEADY, SLOW_AT - 1) > 1.9

    # JUMPY at JUMP_AT: the median more than 1.5x up (the old colouring said "up2"), but its
    # rounds disagree and its level did not move: the differ says noisy, and so does the cell.
    assert median(JUMPY, JUMP_AT) / median(JUMPY, JUMP_AT - 1) > 1.5
    v = {x.id: x for x in compare(results[JUMP_AT - 1], results[JUMP_AT], threshold=0.05)}
    assert v[JUMPY].verdict == "noisy"
    _, cls, title = _cell(grid, tables[JUMP_AT], JUMPY)
    assert cls == "noisy" and title == f"noisy against {_sha(JUMP_AT - 1)[:10]}: {v[JUMPY].reason}"

    # Unchanged benchmarks get their own neutral class; the first commit has no verdict.
    assert _cell(grid, tables[SLOW_AT], CALM)[1] == "unchanged"
    assert (
        _cell(grid, tables[SLOW_AT + 1], STEADY)[1] == "unchanged"
    )  # 2x slower than two commits ago, not than the last
    assert all(c[1:] == ["", ""] for c in tables[0]["cells"])


def test_every_cell_is_the_verdict_against_the_previous_measured_commit(history):
    _, results = history
    series, grid, tables = _tables(results)
    for table in tables[1:]:
        i = table["c"]
        for bid, cell in zip(grid.cells, table["cells"]):
            if bid == SOMETIMES and i == GONE_AT:
                assert cell[:2] == ["failed", "fail"] and cell[2] == "error: RuntimeError: flaky"
                continue
            # SOMETIMES failed at GONE_AT, so at GONE_AT + 1 its previous measured commit is GONE_AT - 1.
            base = GONE_AT - 1 if bid == SOMETIMES and i == GONE_AT + 1 else i - 1
            (v,) = [x for x in compare(results[base], results[i], threshold=0.05) if x.id == bid]
            assert cell[1] == verdict_class(v), (i, bid)
            assert cell[2] == f"{v.verdict} against {_sha(base)[:10]}: {v.reason}"
    assert {verdict_class(v) for _, v in series.verdicts[SLOW_AT].values()} >= {"up2", "unchanged"}


def test_only_the_newest_commits_are_judged(history, monkeypatch):
    """Verdicts cost a bootstrap each: older tables are left uncoloured, and marked so."""
    _, results = history
    monkeypatch.setattr(report_data, "VERDICT_COMMITS", 4)
    series, grid, tables = _tables(results)
    assert series.judged_from == N_COMMITS - 4 and sorted(series.verdicts) == list(range(N_COMMITS - 4, N_COMMITS))
    for t in tables:
        assert t["judged"] == (t["c"] >= N_COMMITS - 4)
        if not t["judged"]:
            assert all(c is None or c[0] == "failed" or c[1:] == ["", ""] for c in t["cells"])
    # The slowdown is older than the newest 4: no colour, though its median doubled.
    assert _cell(grid, tables[SLOW_AT], STEADY)[1:] == ["", ""]
    assert _cell(grid, tables[JUMP_AT], JUMPY)[1] == "noisy"


def test_chart_line_is_the_level_and_change_points_sit_on_it(history, site):
    _, results = history
    page = next(p for p in (site / "bench").glob("*.html") if p.name.startswith("ops-steady-"))
    (s,) = chart_data(page)["series"]
    assert _shas(site, s) == [_sha(i) for i in range(N_COMMITS)]
    levels = [stats.level(stats.round_values(cr.by_id()[STEADY])) for cr in results]
    assert s["level"] == pages.round6(levels).tolist()
    quartiles = [stats.spread(stats.round_values(cr.by_id()[STEADY])) for cr in results]
    assert s["lo"] == pages.round6([q[0] for q in quartiles]).tolist()
    assert s["hi"] == pages.round6([q[1] for q in quartiles]).tolist()
    # Not the median: the median of a round's blocks is above its fastest block.
    medians = [cr.by_id()[STEADY].median for cr in results]
    assert all(m > y * 1.001 for m, y in zip(medians, s["level"]))

    (step,) = s["steps"]
    sha, before, after, ratio, direction, y = step
    assert sha == _sha(SLOW_AT) and direction == "regression" and 1.9 < ratio < 2.1
    assert y == s["level"][SLOW_AT]  # the marker is drawn on the line, at its commit's level
    assert (
        abs(after / y - 1) < 0.01 and abs(before / s["level"][SLOW_AT - 1] - 1) < 0.01
    )  # Step's levels are the line's

    # A failure is drawn at the level of the last measurement before it.
    page = next(p for p in (site / "bench").glob("*.html") if p.name.startswith("ops-sometimes-"))
    (s,) = chart_data(page)["series"]
    assert [f[0] for f in s["failed"]] == [_sha(GONE_AT)]
    assert s["failed"][0][1] == s["level"][_shas(site, s).index(_sha(GONE_AT - 1))]


def test_pages_say_what_the_numbers_and_colours_are(site):
    (label,) = (site / "label").glob("ops-*.html")
    text = label.read_text(encoding="utf-8")
    caption = re.sub(r"<[^>]+>", "", re.search(r'<p class="muted caption">(.*?)</p>', text, re.DOTALL).group(1))
    assert "The numbers are levels" in caption  # what the overview and the charts show, and the verdicts use
    assert (
        "The colours are the differ's verdicts" in caption
        and "against the benchmark's previous measured commit" in caption
    )
    assert f"Colours for the newest {report_data.VERDICT_COMMITS} commits" in caption
    footer = "level: the fastest round's fastest block, per commit; band: quartiles of the rounds"
    for page in [site / "index.html", label, *(site / "bench").glob("*.html")]:
        assert footer in html.unescape(page.read_text(encoding="utf-8")), page
    assert (
        "level per run (line: fitted between change points; points: each commit); band: quartiles of the rounds"
        in next((site / "assets").glob("regress-*.js")).read_text()
    )  # the axis title

    # The label page's data: verdict titles, kept inside the JSON, hostile names escaped.
    data = label_page_data(label)
    (section,) = data["sections"]
    grid = layout_for([s.id for s in SPECS.values()])
    table = section["tables"][SLOW_AT]
    assert table["sha"] == _sha(SLOW_AT) and table["judged"] is True
    assert _cell(grid, table, STEADY)[1] == "up2" and _cell(grid, table, STEADY)[2].startswith("regression against ")
    assert HOSTILE not in text and str(escape(HOSTILE)) in text


def test_overview_shows_verdicts_with_their_reasons(history, site):
    _, results = history
    index = (site / "index.html").read_text(encoding="utf-8")
    baseline = index.split('data-kind="baseline"')[1].split("</section>")[0]
    (v,) = [x for x in compare(results[0], results[-1], threshold=0.05) if x.id == STEADY]
    assert v.verdict == "regression"
    row = re.search(
        r'<tr data-name="ops / steady / float32 \[1 thread\]" title="([^"]*)">(.*?)</tr>', baseline, re.DOTALL
    )
    assert row, baseline
    assert html.unescape(row.group(1)) == f"regression: {v.reason}"
    assert 'class="badge regression"' in row.group(2) and f'title="{escape(f"regression: {v.reason}")}"' in row.group(2)
    assert "level before" in baseline and "level after" in baseline
