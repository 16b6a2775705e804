"""A site past one chunk of history (report/data_files.py): the points and
tables are in data files, an incremental build after one new commit writes only the piece holding it on
each page, and what the pages read back is what a full build of the same files gives."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from chart_data import chart_data, label_page_data, made

from regress.report import site as report_site
from regress.report.data_files import CHUNK, PIECES
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
    assert files("data/bench") == {f"data/bench/{p.stem}/{k}.js" for p in benches for k in names}
    assert _touched(out, "data/bench") == {f"data/bench/{p.stem}/open-0.js" for p in benches}
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


def test_a_file_holding_a_commit_measured_again_is_rewritten_to_what_a_full_build_gives(grown, tmp_path):
    results, out, _, _ = grown
    # A commit of the closed chunk measured again: its chunk's values change, and the file is written afresh.
    site = tmp_path / "site"
    shutil.copytree(out, site)
    folder = tmp_path / "results"
    shutil.copytree(results, folder)
    grown_shape = dict(SHAPE, commits=SHAPE["commits"] + 1)
    fabricate(folder, machines=(MACHINE,), which=[7], **dict(grown_shape, seed=1))
    _age(site)
    report_site.build(Store(folder), site, incremental=True)
    full = tmp_path / "full"
    report_site.build(Store(folder), full)
    for kind in ("bench", "label"):
        for f in (full / "data" / kind).rglob("0.js"):
            assert (site / f.relative_to(full)).read_bytes() == f.read_bytes()
        assert {
            f.relative_to(site).as_posix() for f in (site / "data" / kind).rglob("0.js") if f.stat().st_mtime != OLD
        }
