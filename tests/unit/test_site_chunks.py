"""A site past one chunk of history (report/chunk_grid.py, bench_chunks.py, label_chunks.py): the points and
tables are in data files, an incremental build after one new commit writes only the piece holding it on
each page, and what the pages read back is what a full build of the same files gives."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from chart_data import chart_data, label_page_data, made

from regress.report import forked
from regress.report import site as report_site
from regress.report.chunk_grid import CHUNK, PIECES
from regress.report.publishers import BenchPages
from regress.storage.store import Store
from scripts.fabricate_history import fabricate

MACHINE = "ci-runner"
SHAPE = {"commits": CHUNK + 40, "benchmarks": 4, "rounds": "3-5", "times": "3-5"}
OLD = 1_000_000_000


def _age(out) -> None:
    for f in out.rglob("*"):
        if f.is_file():
            os.utime(f, (OLD, OLD))


@pytest.fixture(scope="module")
def grown(tmp_path_factory):
    """(results, site built before the new commit and then incrementally after it, the files that build made)."""
    root = tmp_path_factory.mktemp("chunks")
    results, out = root / "results", root / "site"
    fabricate(results, machines=(MACHINE,), **SHAPE)
    report_site.build(Store(results), out)
    _age(out)
    fabricate(results, machines=(MACHINE,), which=[SHAPE["commits"]], **dict(SHAPE, commits=SHAPE["commits"] + 1))
    with made() as found:
        summary = report_site.build(Store(results), out, incremental=True)
    return results, out, summary, found


def _touched(out, folder: str) -> set[str]:
    return {f.relative_to(out).as_posix() for f in (out / folder).rglob("*.js") if f.stat().st_mtime != OLD}


def test_only_the_piece_holding_the_new_commit_is_written(grown):
    _, out, summary, _ = grown
    benches, labels = sorted((out / "bench").glob("*.html")), sorted((out / "label").glob("*.html"))
    assert len(benches) == SHAPE["benchmarks"] and labels

    def files(folder: str) -> set[str]:
        return {f.relative_to(out).as_posix() for f in (out / folder).rglob("*.js")}

    names = ("0", *(f"open-{j}" for j in range(PIECES)))
    assert files("data/label") == {f"data/label/{p.stem}/{k}.js" for p in labels for k in names}
    assert _touched(out, "data/label") == {f"data/label/{p.stem}/open-0.js" for p in labels}
    # A chart's closed chunk is its own; its newest pieces are shared by its label's charts (one label here).
    (label,) = labels
    assert files("data/bench") == {f"data/bench/{p.stem}/0.js" for p in benches}
    assert files("data/open") == {f"data/open/{label.stem}/open-{j}.js" for j in range(PIECES)}
    assert _touched(out, "data/bench") == set()
    assert _touched(out, "data/open") == {f"data/open/{label.stem}/open-0.js"}  # one file for the four charts
    assert summary.kept >= len(benches) - 1  # chart pages whose change points stayed are kept


def test_what_each_chart_can_detect_is_one_file_written_at_every_build_and_the_pages_stay(grown):
    _, out, summary, _ = grown
    benches = sorted((out / "bench").glob("*.html"))
    detects = out / "data" / "detects.js"
    assert detects.stat().st_mtime != OLD  # the newest commit's figures: written again
    text = detects.read_text()
    assert text.startswith("window.REGRESS_DETECTS = ")
    lines = json.loads(text.removeprefix("window.REGRESS_DETECTS = ").rstrip(";\n"))["series"]["ci-runner / default"]
    assert set(lines) == {p.stem for p in benches}  # a line for every chart (3-5 rounds a run: some can't tell)
    assert all(line.startswith(("detects ", "too few rounds to tell")) for line, _ in lines.values())
    assert all('src="../data/detects.js"' in p.read_text() for p in benches)
    assert summary.kept >= len(benches) - 1  # while the chart pages whose change points stayed are kept


def test_the_chunks_read_back_as_a_full_build_of_the_same_files(grown, tmp_path):
    results, out, _, _ = grown
    full = tmp_path / "full"
    report_site.build(Store(results), full)
    for page in (out / "bench").glob("*.html"):
        data = chart_data(page)
        assert data == chart_data(full / "bench" / page.name)
        at = data["series"][0]["at"]
        assert at[-1] == SHAPE["commits"] and len(at) > CHUNK  # the new commit's point last, both chunks
    for page in (out / "label").glob("*.html"):
        data = label_page_data(page)
        assert data == label_page_data(full / "label" / page.name)
        tables = data["sections"][0]["tables"]
        assert len(tables) > CHUNK and tables[-1]["judged"] and not tables[0]["judged"]
        assert sum(t["judged"] for t in tables) == 30  # the newest commits' verdicts laid over their tables


def test_a_settled_file_is_kept_unmade_and_made_again_once_a_commit_it_holds_changes(grown, tmp_path):
    results, out, _, found = grown
    pages = {("bench", p.stem) for p in (out / "bench").glob("*.html")} | {
        ("label", p.stem) for p in (out / "label").glob("*.html")
    }
    # Positions 0-499 lie in kept figure blocks (analysis/table_blocks.py): their closed chunk's values are
    # never made after one new commit; every piece past it is (its positions are not settled yet).
    assert {(kind, slug) for kind, slug, k in found} == pages
    assert not [k for _, _, k in found if k < CHUNK]
    # A commit of that chunk measured again: its block's key moves, and the chunk is made afresh.
    site = tmp_path / "site"
    shutil.copytree(out, site)
    folder = tmp_path / "results"
    shutil.copytree(results, folder)
    grown_shape = dict(SHAPE, commits=SHAPE["commits"] + 1)
    fabricate(folder, machines=(MACHINE,), which=[7], **dict(grown_shape, seed=1))
    _age(site)
    with made() as again:
        report_site.build(Store(folder), site, incremental=True)
    assert {(kind, slug) for kind, slug, k in again if k == 0} == pages
    full = tmp_path / "full"
    report_site.build(Store(folder), full)
    for kind in ("bench", "label"):
        for f in (full / "data" / kind).rglob("0.js"):
            assert (site / f.relative_to(full)).read_bytes() == f.read_bytes()
        assert {
            f.relative_to(site).as_posix() for f in (site / "data" / kind).rglob("0.js") if f.stat().st_mtime != OLD
        }


def test_chart_files_made_beside_the_build_are_the_ones_made_in_it_and_a_failed_child_changes_nothing(
    grown, tmp_path, monkeypatch
):
    results, _, _, _ = grown

    def files(out):
        return {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}

    def built(name: str) -> dict:
        out = tmp_path / name
        report_site.build(Store(results), out)
        return files(out)

    starts = []
    real_start = forked.Forked._start
    monkeypatch.setattr(forked.Forked, "_start", lambda self, work: starts.append(1) or real_start(self, work))
    monkeypatch.setattr(forked, "can_fork", lambda: False)
    alone = built("alone")
    assert starts == []
    monkeypatch.setattr(forked, "can_fork", lambda: True)
    assert built("beside") == alone and len(starts) == 1  # the chart files (the change points were kept)
    # A child that fails, or answers what does not read: the build makes the files itself, the same.
    real_sent = BenchPages._sent
    monkeypatch.setattr(BenchPages, "_sent", lambda self, site, part: 1 / 0)
    assert built("failed") == alone and len(starts) == 2
    monkeypatch.setattr(BenchPages, "_sent", lambda self, site, part: real_sent(self, site, part)[:-9])
    assert built("garbled") == alone and len(starts) == 3
