"""The site as a model: every series, benchmark and label, and what the pages share of them, made
once; `pages.write` renders it into files."""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

import jinja2
import numpy as np

from regress import __version__
from regress.core.errors import RegressError
from regress.core.records import BenchmarkId, CommitInfo
from regress.core.units import fmt_time, percent
from regress.report import explain_panel
from regress.report import metrics as report_metrics
from regress.report.data import Series, Step, commit_order
from regress.report.links import bench_slug, iso, label_slug

SITE_FORMAT = 1


def _cpus(commit) -> list[str]:
    return [r.fingerprint.cpu for r in commit.runs if r.fingerprint is not None and r.fingerprint.cpu]


def runs_of(s) -> tuple[list[str], list[frozenset], np.ndarray]:
    """Per commit of a series: the runs behind its level for the chart's hover ("2 runs on Intel Xeon ×2"),
    and the few distinct sets of their CPU models with each commit's set."""
    described, which = [], []
    sets: dict[frozenset, int] = {}
    for c in s.history:
        n, cpus = len(c.runs), _cpus(c)
        models = ", ".join(f"{cpu} ×{k}" if k > 1 else cpu for cpu, k in Counter(cpus).items())
        described.append(f"{n} run{'s' if n != 1 else ''}" + (f" on {models}" if models else "") if n else "")
        which.append(sets.setdefault(frozenset(cpus), len(sets)))
    return described, list(sets), np.asarray(which, dtype=np.int64)


class Site:
    def __init__(
        self,
        out: Path,
        series: list[Series],
        templates: Path,
        plotly: tuple[str, Path],
        *,
        results: Path,
        repo_url: str,
        threshold: float,
        threshold_for,
        title: str,
        baseline: str | None,
    ):
        """`results`: the folder the explain panels are read from (`explain_panel.collect`);
        `threshold_for`: Metric -> the project's threshold, for the metric tables."""
        self.out, self.series, self.repo_url, self.title, self.baseline = out, series, repo_url, title, baseline
        self.threshold, self.threshold_for = threshold, threshold_for
        self.commits = commit_order(series)
        self.shas = [[cr.commit.sha for cr in s.history] for s in series]
        self.commit_index = {c.sha: i for i, c in enumerate(self.commits)}
        if baseline is not None and baseline not in self.commit_index:
            raise RegressError(
                f"baseline {baseline[:10]} has no results on any machine; "
                f"measure it with `regress run {baseline[:10]}` or pass --baseline a measured commit"
            )
        # Benchmarks in the order of the newest results (torch's table order), then those no longer measured.
        seen: dict[BenchmarkId, None] = {}
        for s in series:
            assert s.table is not None  # `summarize` gave every series its table
            seen.update(dict.fromkeys(s.table.ids_at(len(s.history) - 1)))
        for s in series:
            seen.update(dict.fromkeys([*s.tracks, *s.failed, *s.counts]))
        self.ids = list(seen)
        self.labels: dict[str, list[BenchmarkId]] = {}
        for bid in self.ids:
            self.labels.setdefault(bid.label, []).append(bid)
        self.bench_href = {bid: f"bench/{bench_slug(bid)}.html" for bid in self.ids}
        self.label_href = {label: f"label/{label_slug(label)}.html" for label in self.labels}
        # Every change point of every series, most recent commit first.
        self.changes: list[dict] = [
            {"step": st, "series": s, "commit": self.commit(st.sha)} for s in series for st in s.steps
        ]
        self.changes.sort(key=lambda c: (-self.commit_index[c["commit"].sha], -abs(c["step"].ratio - 1)))
        self.runs = [runs_of(s) for s in series]
        self.panels = explain_panel.collect(results, series)
        self.metric_index = report_metrics.Index(series)
        self.env = jinja2.Environment(
            loader=jinja2.FunctionLoader(lambda name: (templates / name).read_text(encoding="utf-8")),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.filters["iso"] = iso
        self.static = {name: (templates / "static" / name).read_bytes() for name in ("regress.css", "regress.js")}
        plotly_name, self.plotly_path = plotly
        # Assets are named by content, so a browser never runs a stale copy from its cache.
        self.assets = {
            "plotly": plotly_name,
            "css": f"regress-{hashlib.sha1(self.static['regress.css']).hexdigest()[:8]}.css",
            "js": f"regress-{hashlib.sha1(self.static['regress.js']).hexdigest()[:8]}.js",
        }
        # A page is rewritten when its inputs or anything that renders it changes.
        names = ("base.html", "macros.html", "label.html", "bench.html", *report_metrics.TEMPLATES)
        sources = "".join((templates / n).read_text(encoding="utf-8") for n in names)
        self.version = hashlib.sha1(
            f"{SITE_FORMAT} {__version__} {sources} {self.assets} {title} {repo_url}".encode()
        ).hexdigest()

    def context(self, root: str) -> dict:
        """What every page's template is rendered with (the explain panels' too)."""
        return {"root": root, "title": self.title, "assets": self.assets, "repo_url": self.repo_url}

    def commit(self, sha: str) -> CommitInfo:
        return self.commits[self.commit_index[sha]]

    def change_row(self, ch: dict, root: str) -> dict:
        """A change point's row in the change lists."""
        st: Step = ch["step"]
        panel = self.panels.get((ch["series"].name, st.sha, st.id))
        return {
            "commit": ch["commit"],
            "name": str(st.id),
            "href": root + self.bench_href[st.id],
            "series": ch["series"].name,
            "before": fmt_time(st.before),
            "after": fmt_time(st.after),
            "change": percent(st.ratio),
            "direction": st.direction,
            "explain": root + panel.rel if panel is not None else "",
        }
