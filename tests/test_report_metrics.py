"""The site's metric switch (issue 14): chart series and Compare tables of memory,
compile figures and tracked values, bytes with binary prefixes, from stored results."""

from __future__ import annotations

import json
import re

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


def _save(repo, sha, allocated, breaks, params):
    c = repo.git("show", "-s", "--format=%H%n%ct%n%s", sha).split("\n")
    info = CommitInfo(c[0], (), "Test Author", "author@example.com", int(c[1]), int(c[1]), c[2])
    timed = BenchmarkResult(
        TaskSpec("f()", label="ops", sub_label="f"), "benchmarks/b.py:1 f",
        tuple(Sample(10, (1e-4, 1.01e-4), float(i)) for i in range(3)),
        memory=(MemoryUse(allocated, allocated, "cpu", 1.0),),
        compiled=(CompileStats(0.5, 1 + breaks, breaks, 0, 1.0),),
    )
    tracked = BenchmarkResult(TaskSpec("track: track_params()", label="ops", sub_label="track_params"), "benchmarks/b.py:9 track_params",
                              tracked=(TrackedValue(params, "parameters", "lower", 1.0),))
    Store(repo.path / ".regress").save(CommitResult(info, "testbox", "default", Fingerprint("testbox"), Settings(), (timed, tracked)))


def _json(page, element):
    return json.loads(re.search(rf'id="{element}">(.*?)</script>', page.read_text()).group(1))


def test_chart_and_label_pages_carry_each_metric(repo):
    base = repo.git("rev-parse", "HEAD")
    head = repo.commit("clone and a graph break")
    _save(repo, base, 256 << 10, 0, 1000)
    _save(repo, head, 512 << 10, 1, 1000)
    repo.regress("report", check=True)
    site = repo.path / "site"
    (bench,) = [p for p in (site / "bench").glob("*.html") if "track" not in p.name]
    data = _json(bench, "bench-data")
    by = {m["metric"]: m for m in data["metrics"]}
    assert {"allocated", "peak", "compile_time", "graphs", "graph_breaks", "recompiles"} <= set(by)
    assert by["allocated"]["series"][0]["text"] == ["256.00 KiB", "512.00 KiB"]
    assert by["allocated"]["title"] == "bytes allocated per call (KiB)" and by["allocated"]["series"][0]["y"] == [256, 512]
    assert 'id="metrics"' in bench.read_text() and "wall time" in bench.read_text()
    (label,) = (site / "label").glob("*.html")
    tables = {t["metric"]: t for t in _json(label, "label-data")["metrics"]}
    row = tables["allocated"]["rows"][0]
    assert (row["value"], row["change"], row["verdict"]) == ("512.00 KiB", "+100.0%", "regression")
    assert tables["graph_breaks"]["rows"][0]["verdict"] == "regression"
    assert tables["tracked"]["rows"][0]["verdict"] == "unchanged"
