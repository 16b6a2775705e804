"""The site being built: every series, benchmark and label, and the pages' shared state."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import jinja2

from regress import __version__
from regress.core.errors import RegressError
from regress.core.records import BenchmarkId, CommitInfo
from regress.core.units import fmt_time, percent
from regress.report import metrics as report_metrics
from regress.report.chart_pages import ChartPages
from regress.report.data import Series, Step, commit_order
from regress.report.files import script_json
from regress.report.files import write as _write
from regress.report.links import bench_slug, iso, label_slug
from regress.report.overview_pages import OverviewPages
from regress.report.publishers import PUBLISHERS, Pages

SITE_FORMAT = 1
MANIFEST = ".regress-site.json"


class Site(ChartPages, OverviewPages):
    def __init__(
        self,
        out: Path,
        series: list[Series],
        templates,
        plotly: tuple[str, Path],
        *,
        repo_url: str,
        threshold: float,
        threshold_for,
        title: str,
        baseline: str | None,
    ):
        self.out = out
        self.series = series
        self.repo_url = repo_url
        self.threshold = threshold
        self.threshold_for = threshold_for  # Metric -> the project's threshold, for the metric tables
        self.title = title
        self.baseline = baseline
        self.commits = commit_order(series)
        self.shas = [[cr.commit.sha for cr in s.history] for s in series]
        self.commit_index = {c.sha: i for i, c in enumerate(self.commits)}
        if baseline is not None and baseline not in self.commit_index:
            raise RegressError(
                f"baseline {baseline[:10]} has no results on any machine; "
                f"measure it with `regress run {baseline[:10]}` or pass --baseline a measured commit"
            )
        # Benchmarks in the order of the newest results (torch orders a table by its
        # results), then those no longer measured.
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
        self.changes = self._changes()
        self.publishers = [make() for make in PUBLISHERS]
        self.metric_index = report_metrics.Index(series)  # each benchmark's figures beyond time, looked up once
        folder = templates
        self.env = jinja2.Environment(
            loader=jinja2.FunctionLoader(lambda name: (folder / name).read_text(encoding="utf-8")),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.filters["iso"] = iso
        self.static = {name: (folder / "static" / name).read_bytes() for name in ("regress.css", "regress.js")}
        plotly_name, self.plotly_path = plotly
        # Assets are named by content, so a browser never runs a stale copy from its cache.
        self.assets = {
            "plotly": plotly_name,
            "css": f"regress-{hashlib.sha1(self.static['regress.css']).hexdigest()[:8]}.css",
            "js": f"regress-{hashlib.sha1(self.static['regress.js']).hexdigest()[:8]}.js",
        }
        # A page is rewritten when its inputs or anything that renders it changes.
        pages = ("base.html", "macros.html", "label.html", "bench.html", *report_metrics.TEMPLATES)
        sources = "".join((folder / n).read_text(encoding="utf-8") for n in pages)
        self.version = hashlib.sha1(
            f"{SITE_FORMAT} {__version__} {sources} {self.assets} {title} {repo_url}".encode()
        ).hexdigest()

    # -- shared bits ----------------------------------------------------------

    def context(self, root: str) -> dict:
        """What every page's template is rendered with (the explain panels' too)."""
        return {"root": root, "title": self.title, "assets": self.assets, "repo_url": self.repo_url}

    def _changes(self) -> list[dict]:
        """Every change point of every series, most recent commit first."""
        out: list[dict] = []
        for s in self.series:
            for st in s.steps:
                out.append({"step": st, "series": s, "commit": self._commit(st.sha)})
        out.sort(key=lambda c: (-self.commit_index[c["commit"].sha], -abs(c["step"].ratio - 1)))
        return out

    def _commit(self, sha: str) -> CommitInfo:
        return self.commits[self.commit_index[sha]]

    def _change_row(self, ch: dict, root: str) -> dict:
        st: Step = ch["step"]
        return {
            "commit": ch["commit"],
            "name": str(st.id),
            "href": root + self.bench_href[st.id],
            "series": ch["series"].name,
            "before": fmt_time(st.before),
            "after": fmt_time(st.after),
            "change": percent(st.ratio),
            "direction": st.direction,
        } | {k: v for p in self.publishers for k, v in p.change_fields(self, ch, root).items()}

    # -- writing --------------------------------------------------------------

    def write(self, previous: dict[str, str], *, keep_unchanged: bool, results: Path) -> tuple[int, int]:
        """Write the site; returns (pages written, pages kept as they were).

        previous: the manifest of the site already in the folder. Its files that
        this build does not write are removed; with `keep_unchanged`, its pages
        whose digest is the same now are kept as they are. `results`: the folder
        publishers read beyond the model (stored explain profiles, ...).
        """
        pages = Pages(self.out, previous, keep_unchanged=keep_unchanged)
        self.out.mkdir(parents=True, exist_ok=True)
        plotly_rel = f"assets/{self.assets['plotly']}"
        target = self.out / plotly_rel
        if not (target.is_file() and target.stat().st_size == self.plotly_path.stat().st_size):
            _write(target, self.plotly_path.read_bytes())
        pages.files[plotly_rel] = ""
        for name, key in (("regress.css", "css"), ("regress.js", "js")):
            pages.file(f"assets/{self.assets[key]}", self.static[name])
        pages.file("data/commits.js", self._commits_js())
        for p in self.publishers:
            p.gather(self, results)
        for p in self.publishers:
            p.write(self, pages)
        for rel in set(previous) - set(pages.files):  # pages of benchmarks and labels that are gone
            stale = self.out / rel
            if ".." not in Path(rel).parts and stale.is_file():
                stale.unlink()
        manifest = {"format": SITE_FORMAT, "regress": __version__, "files": pages.files}
        _write(self.out / MANIFEST, json.dumps(manifest, indent=0, sort_keys=True))
        return pages.written, pages.kept

    def _commits_js(self) -> str:
        table = {c.sha: [i, c.short, c.subject, c.author, iso(c.committed_at)] for i, c in enumerate(self.commits)}
        data = {"repo": self.repo_url, "commits": table, "series": self.series_commits()}
        return f"window.REGRESS_COMMITS = {script_json(data)};\n"
