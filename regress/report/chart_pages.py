"""The chart pages: one per benchmark (trend of levels) and one per label (Compare tables)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import jinja2
import numpy as np

from regress.core.records import BenchmarkId, CommitInfo
from regress.report import metrics as report_metrics
from regress.report.data import BIG_CHANGE, VERDICT_COMMITS, Series
from regress.report.data_files import Chunks, Line
from regress.report.label_data import round6


def _cpus(commit) -> list[str]:
    return [r.fingerprint.cpu for r in commit.runs if r.fingerprint is not None and r.fingerprint.cpu]


def _describe_runs(commit) -> str:
    """ "2 runs (pushes measured it): Intel Xeon x2" for the chart's hover."""
    n = len(commit.runs)
    if not n:
        return ""
    models = ", ".join(f"{cpu} ×{k}" if k > 1 else cpu for cpu, k in Counter(_cpus(commit)).items())
    return f"{n} run{'s' if n != 1 else ''}" + (f" on {models}" if models else "")


def short_name(bid: BenchmarkId) -> str:
    """The benchmark without its label (shown under the label's heading)."""
    return str(bid)[len(bid.label) + 3 :]


class SiteFields:
    """What the page renderers read of `Site` (report/builder.py), which sets or defines each."""

    series: list[Series]
    shas: list[list[str]]
    commits: list[CommitInfo]
    ids: list[BenchmarkId]
    labels: dict[str, list[BenchmarkId]]
    bench_href: dict[BenchmarkId, str]
    label_href: dict[str, str]
    changes: list[dict]
    threshold: float
    baseline: str | None
    title: str
    repo_url: str
    metric_index: report_metrics.Index
    env: jinja2.Environment
    context: Callable[[str], dict]
    _commit: Callable[[str], CommitInfo]
    _change_row: Callable[[dict, str], dict]


class ChartPages(SiteFields):
    """Page renderers of `Site`: the chart and label pages."""

    def bench_data(self, bid: BenchmarkId) -> tuple[dict, Chunks]:
        """The chart's data: per series its failures (its change points are added by `bench_steps`), and
        its points in data files: the level the differ and the change points use (so a change point's
        marker is drawn on the line), the rounds' quartiles, each metric's values."""
        out, lines = [], []
        for s, shas in zip(self.series, self.shas):
            track = s.tracks.get(bid)
            failed = s.failed.get(bid, [])
            counted = s.counts.get(bid, [])
            if track is None and not failed and not counted:
                continue
            commits = track.commits if track is not None else np.zeros(0, dtype=np.int64)
            levels = track.level if track is not None else np.zeros(0)
            fails = []
            for f in failed:  # drawn at the level of the last measurement before it (or after it)
                k = int(np.searchsorted(commits, f.commit))
                y = levels[k - 1] if k > 0 else (levels[0] if len(levels) else 0.0)
                fails.append([shas[f.commit], round6([y])[0], f.message[:500]])
            out.append(
                {
                    "name": s.name,
                    "cpus": self._cpus_at(s, commits),
                    "failed": fails,
                    "steps": [],
                    "instr": [[shas[c], n] for c, n in counted],
                }
            )
            if track is not None:
                # Positions in the series' history: its commits and their runs are named once,
                # for every page, in data/commits.js (`series_commits`).
                band = {"lo": track.lo, "hi": track.hi}
                lines.append(Line("series", s.name, commits, {"level": levels, **band}, rounded=True))
        metrics, metric_lines = report_metrics.bench(self.series, bid, self.metric_index)  # metrics beyond time
        longest = max(len(s.history) for s in self.series)
        return {"series": out, "metrics": metrics}, Chunks.of(lines + metric_lines, longest)

    def bench_steps(self, bid: BenchmarkId, data: dict) -> dict:
        """`bench_data`'s page data with each series' change points of `bid`, each drawn on the
        line at its commit's level (or at its level after, where the commit has no point)."""
        by_name = {s.name: s for s in self.series}
        for entry in data["series"]:
            s = by_name[entry["name"]]
            track = s.tracks.get(bid)
            commits = track.commits if track is not None else np.zeros(0, dtype=np.int64)
            steps = []
            for st in s.steps:
                if st.id == bid:
                    k = int(np.searchsorted(commits, st.index))
                    on = k < len(commits) and commits[k] == st.index
                    y = round6([track.level[k] if on and track is not None else st.after])[0]
                    steps.append([st.sha, *round6([st.before, st.after, st.ratio]), st.direction, y])
            entry["steps"] = steps
        return data

    def series_commits(self) -> dict[str, dict[str, list[str]]]:
        """Per series, by history position: each commit's sha and the runs behind its level (the chart
        pages' points name these by position)."""
        return {s.name: {"sha": shas, "runs": self._runs_of(s)[0]} for s, shas in zip(self.series, self.shas)}

    def _runs_of(self, s) -> tuple[list[str], list[list[str]]]:
        """Per commit of a series: the runs behind its level, and their CPU models (once per series)."""
        cache = self.__dict__.setdefault("_runs_cache", {})
        if id(s) not in cache:
            cache[id(s)] = [_describe_runs(c) for c in s.history], [_cpus(c) for c in s.history]
        return cache[id(s)]

    def _cpus_at(self, s, commits: np.ndarray) -> list[str]:
        """The CPU models behind a benchmark's points (its commits' runs'), by the few distinct sets of
        a series' commits."""
        cache = self.__dict__.setdefault("_cpu_sets", {})
        if id(s) not in cache:
            sets: dict[frozenset, int] = {}
            which = [sets.setdefault(frozenset(cpus), len(sets)) for cpus in self._runs_of(s)[1]]
            cache[id(s)] = list(sets), np.asarray(which, dtype=np.int64)
        models, which = cache[id(s)]
        found: set[str] = set()
        return sorted(found.union(*(models[k] for k in np.unique(which[commits]).tolist())))

    def _instruction_rows(self, bid: BenchmarkId) -> list[dict]:
        """Newest first, per series, with the change against the previous count."""
        rows = []
        for s, shas in zip(self.series, self.shas):
            counted = s.counts.get(bid, [])
            for k in range(len(counted) - 1, max(-1, len(counted) - 31), -1):
                ci, n = counted[k]
                prev = counted[k - 1][1] if k > 0 else None
                rows.append(
                    {
                        "series": s.name,
                        "commit": self._commit(shas[ci]),
                        "count": f"{n:,}",
                        "change": f"{(n / prev - 1) * 100:+.2f}%" if prev else "",
                    }
                )
        return rows

    def bench_page(self, bid: BenchmarkId, data, chunks: list[str], inline=None) -> str:
        steps = [self._change_row(ch, "../") for ch in self.changes if ch["step"].id == bid]
        return self.env.get_template("bench.html").render(
            **self.context("../"),
            bid=bid,
            name=str(bid),
            label_href="../" + self.label_href[bid.label],
            steps=steps,
            instructions=self._instruction_rows(bid),
            data=data,
            chunks=chunks,
            inline=inline,
        )

    # -- label pages ------------------------------------------------------------

    def label_page(self, label: str, layout, names: list[str], data, chunks: list[str], inline=None) -> str:
        """`names`: the series with tables of this label; the tables are in `chunks` (report/data_files.py),
        or in the page's `inline` chunk script."""
        return self.env.get_template("label.html").render(
            **self.context("../"),
            label=label,
            layout=layout,
            sections=names,
            chunks=chunks,
            inline=inline,
            hrefs={bid: "../" + self.bench_href[bid] for bid in self.labels[label]},
            threshold_pct=f"{self.threshold * 100:g}%",
            big_pct=f"{(BIG_CHANGE - 1) * 100:g}%",
            big_faster_pct=f"{(1 - 1 / BIG_CHANGE) * 100:.0f}%",
            verdict_commits=VERDICT_COMMITS,
            data=data,
        )
