"""The site being built: its model (every series, benchmark and label) and the one loop that writes
its files, each page with a digest of what it shows, so that `--incremental` keeps a page whose
digest is the last build's."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import jinja2
import numpy as np

from regress import __version__
from regress.core.errors import RegressError
from regress.core.records import BenchmarkId, CommitInfo
from regress.core.units import fmt_time, percent
from regress.report import data_files, detects, explain_panel, pages
from regress.report import metrics as report_metrics
from regress.report.data import VERDICT_COMMITS, Series, Step, commit_order
from regress.report.files import script_json
from regress.report.files import write as write_file
from regress.report.label_data import layout_for
from regress.report.links import bench_slug, iso, label_slug

SITE_FORMAT = 1
MANIFEST = ".regress-site.json"


class Pages:
    """The files one build writes, each recorded in the manifest (with its digest, for pages)."""

    def __init__(self, out: Path, previous: dict[str, str], *, keep_unchanged: bool) -> None:
        self.out, self.previous, self.keep_unchanged = out, previous, keep_unchanged
        self.files: dict[str, str] = {}
        self.written = self.kept = 0
        self._listed: dict[str, set[str]] = {}  # folder -> the files in it, listed once

    def _exists(self, rel: str) -> bool:
        folder, _, name = rel.rpartition("/")
        names = self._listed.get(folder)
        if names is None:
            try:
                with os.scandir(self.out / folder) as it:
                    names = {e.name for e in it if e.is_file()}
            except OSError:
                names = set()
            self._listed[folder] = names
        return name in names

    def page(self, rel: str, digest: str | None, render, *args, counted: bool = True) -> None:
        """A page: kept when incremental and its digest is the last build's, else `render(*args)`ed and
        written. `counted`: False for a page's data file (a chart's chunk of points), left out of the counts."""
        if self.keep_unchanged and digest is not None and self.previous.get(rel) == digest and self._exists(rel):
            self.kept += counted
        else:
            write_file(self.out / rel, render(*args))
            self.written += counted
            folder, _, name = rel.rpartition("/")
            self._listed.get(folder, set()).add(name)
        self.files[rel] = digest or ""

    def file(self, rel: str, content: str | bytes) -> None:
        """A file written every build (assets, data, feeds): not counted as a page."""
        write_file(self.out / rel, content)
        self.files[rel] = ""


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
        # Every change point of every series, most recent commit first.
        self.changes: list[dict] = [
            {"step": st, "series": s, "commit": self.commit(st.sha)} for s in series for st in s.steps
        ]
        self.changes.sort(key=lambda c: (-self.commit_index[c["commit"].sha], -abs(c["step"].ratio - 1)))
        self.runs = [pages.runs_of(s) for s in series]  # the runs behind each commit's level, per series
        self.panels = explain_panel.collect(results, series)
        self.metric_index = report_metrics.Index(series)  # each benchmark's figures beyond time, looked up once
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

    def write(self, previous: dict[str, str], *, keep_unchanged: bool) -> tuple[int, int]:
        """Write the site; returns (pages written, pages kept as they were).

        previous: the manifest of the site already in the folder. Its files that
        this build does not write are removed; with `keep_unchanged`, its pages
        whose digest is the same now are kept as they are.
        """
        out = Pages(self.out, previous, keep_unchanged=keep_unchanged)
        self.out.mkdir(parents=True, exist_ok=True)
        plotly_rel = f"assets/{self.assets['plotly']}"
        target = self.out / plotly_rel
        if not (target.is_file() and target.stat().st_size == self.plotly_path.stat().st_size):
            write_file(target, self.plotly_path.read_bytes())
        out.files[plotly_rel] = ""
        for name, key in (("regress.css", "css"), ("regress.js", "js")):
            out.file(f"assets/{self.assets[key]}", self.static[name])
        out.file("data/commits.js", self._commits_js())
        # A Compare table page per label, with the metric tables beyond time.
        shas = [np.asarray(shas, dtype="S40") for shas in self.shas]
        for label, ids in self.labels.items():
            layout = layout_for(ids)
            chunks = data_files.LabelChunks(self.series, layout, self.threshold, shas)
            srcs, inline = chunks.write(out, self.version, label_slug(label))
            metrics = report_metrics.label_tables(
                self.series, ids, threshold_for=self.threshold_for, index=self.metric_index
            )
            names, judged = chunks.names, chunks.overlay()
            sections = [{"name": name, "judged": judged[name]} for name in names]
            data = script_json({"sections": sections, "judged_commits": VERDICT_COMMITS, "metrics": metrics})
            digest = hashlib.sha1(f"{self.version} {data} {label} {ids} {srcs} {inline}".encode()).hexdigest()
            out.page(self.label_href[label], digest, pages.label_page, self, label, layout, names, data, srcs, inline)
        # A chart page per benchmark; what each can detect, for the line under its title, in one file.
        out.file(detects.REL, detects.script(self.series, self.threshold))
        for bid in self.ids:
            shell, points = pages.bench_data(self, bid)
            slug = shell["slug"] = bench_slug(bid)  # its line under the title in data/detects.js
            srcs, inline = points.write(out, self.version, slug)
            data = script_json(shell)
            digest = hashlib.sha1(f"{self.version} {data} {srcs} {inline}".encode()).hexdigest()
            out.page(self.bench_href[bid], digest, pages.bench_page, self, bid, data, srcs, inline)
        explain_panel.write(self, self.panels, out.file)
        out.page("index.html", None, pages.overview, self)
        out.file("regressions.json", pages.regressions_json(self))
        out.file("regressions.atom", pages.feed(self))
        for rel in set(previous) - set(out.files):  # pages of benchmarks and labels that are gone
            stale = self.out / rel
            if ".." not in Path(rel).parts and stale.is_file():
                stale.unlink()
        manifest = {"format": SITE_FORMAT, "regress": __version__, "files": out.files}
        write_file(self.out / MANIFEST, json.dumps(manifest, indent=0, sort_keys=True))
        return out.written, out.kept

    def _commits_js(self) -> str:
        """Every commit's sha, subject, author and date, and per series by history position each commit's
        sha and the runs behind its level (the chart pages' points name these by position)."""
        table = {c.sha: [i, c.short, c.subject, c.author, iso(c.committed_at)] for i, c in enumerate(self.commits)}
        series = {s.name: {"sha": shas, "runs": runs[0]} for s, shas, runs in zip(self.series, self.shas, self.runs)}
        data = {"repo": self.repo_url, "commits": table, "series": series}
        return f"window.REGRESS_COMMITS = {script_json(data)};\n"
