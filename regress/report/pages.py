"""The site rendered from its model (`Site`), in one loop (`write`): the chart, label, overview and explain
pages, their data files, the change points as JSON and the feed, each page with a digest of what it
shows, so that `--incremental` keeps a page whose digest is the last build's."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import jinja2
import numpy as np

from regress import __version__
from regress.analysis import explanation
from regress.analysis.judge import Verdict
from regress.core.errors import RegressError
from regress.core.kinds import Kind
from regress.core.records import BenchmarkId, CommitInfo
from regress.core.units import fmt_time, percent
from regress.output import detects
from regress.output.explain import row_cells
from regress.report import data_files
from regress.report.data import BIG_CHANGE, VERDICT_COMMITS, Series, Step, commit_order
from regress.report.data_files import Chunks, Line, layout_for, script_json, short_name
from regress.report.links import bench_slug, iso, label_slug
from regress.storage.atomic import write_atomic
from regress.storage.store import profile_pair

SITE_FORMAT = 1
MANIFEST = ".regress-site.json"
DETECTS = "data/detects.js"
MAX_CHANGES_ON_OVERVIEW = 100
TOP = 25  # operators an explain panel lists


def read_manifest(out: Path) -> dict[str, str]:
    """{relative path: digest of what it shows} of the site already in `out`."""
    if out.exists() and not out.is_dir():
        raise RegressError(f"{out} is a file, not a folder; pass --out a folder for the site")
    path = out / MANIFEST
    if not path.is_file():
        if (out / "index.html").exists():
            raise RegressError(
                f"{out} already has an index.html that regress did not write; pass --out an empty folder (or delete {out})"
            )
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        files = data["files"] if data.get("format") == SITE_FORMAT else {}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}
    ok = isinstance(files, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in files.items())
    return files if ok else {}


def runs_of(s) -> tuple[list[str], list[frozenset], np.ndarray]:
    """Per commit of a series: the runs behind its level for the chart's hover ("2 runs on Intel Xeon ×2"),
    and the few distinct sets of their CPU models with each commit's set."""
    described, which = [], []
    sets: dict[frozenset, int] = {}
    for c in s.history:
        n, cpus = len(c.runs), [r.fingerprint.cpu for r in c.runs if r.fingerprint is not None and r.fingerprint.cpu]
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
        self.panels = explain_panels(results, series)
        self.metric_index = data_files.MetricIndex(series)
        self.env = jinja2.Environment(
            loader=jinja2.FunctionLoader(lambda name: (templates / name).read_text(encoding="utf-8")),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.filters["iso"] = iso
        self.static = {kind: (templates / "static" / f"regress.{kind}").read_bytes() for kind in ("css", "js")}
        plotly_name, self.plotly_path = plotly
        # Assets are named by content, so a browser never runs a stale copy from its cache.
        named = {kind: f"regress-{hashlib.sha1(b).hexdigest()[:8]}.{kind}" for kind, b in self.static.items()}
        self.assets = {"plotly": plotly_name, **named}
        # A page is rewritten when its inputs or anything that renders it changes.
        names = ("base.html", "macros.html", "label.html", "bench.html", "metrics_switch.html")
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


class Pages:
    """The files one build writes, each recorded in the manifest (with its digest, for pages); unsynced, as a
    site can be rebuilt."""

    def __init__(self, out: Path, previous: dict[str, str], *, keep_unchanged: bool) -> None:
        self.out, self.previous, self.keep_unchanged = out, previous, keep_unchanged
        self.files: dict[str, str] = {}
        self.written = self.kept = 0

    def page(self, rel: str, digest: str | None, render, *args, counted: bool = True) -> None:
        """Kept when incremental and its digest is the last build's, else `render(*args)`ed and written."""
        if (
            self.keep_unchanged
            and digest is not None
            and self.previous.get(rel) == digest
            and (self.out / rel).is_file()
        ):
            self.kept += counted
        else:
            self.file(rel, render(*args))
            self.written += counted
        self.files[rel] = digest or ""

    def file(self, rel: str, content: str | bytes) -> None:
        """A file written every build (assets, data, feeds): not counted as a page."""
        write_atomic(self.out / rel, content, sync=False)
        self.files[rel] = ""


def write(site: Site, previous: dict[str, str], *, keep_unchanged: bool) -> tuple[int, int]:
    """Write the site's files, removing those of `previous` (the last manifest) it does not write; with
    `keep_unchanged`, a page whose digest is the same is kept. Returns (pages written, pages kept)."""
    out = Pages(site.out, previous, keep_unchanged=keep_unchanged)
    site.out.mkdir(parents=True, exist_ok=True)
    plotly_rel = f"assets/{site.assets['plotly']}"
    target = site.out / plotly_rel
    if not (target.is_file() and target.stat().st_size == site.plotly_path.stat().st_size):
        write_atomic(target, site.plotly_path.read_bytes(), sync=False)
    out.files[plotly_rel] = ""
    for kind, content in site.static.items():
        out.file(f"assets/{site.assets[kind]}", content)
    # Every commit's sha, subject, author and date, and per series each position's sha and runs.
    table = {c.sha: [i, c.short, c.subject, c.author, iso(c.committed_at)] for i, c in enumerate(site.commits)}
    series = {s.name: {"sha": shas, "runs": runs[0]} for s, shas, runs in zip(site.series, site.shas, site.runs)}
    data = script_json({"repo": site.repo_url, "commits": table, "series": series})
    out.file("data/commits.js", f"window.REGRESS_COMMITS = {data};\n")
    # A Compare table page per label, with the metric tables beyond time.
    shas = [np.asarray(x, dtype="S40") for x in site.shas]
    for label, ids in site.labels.items():
        layout = layout_for(ids)
        chunks = data_files.LabelChunks(site.series, layout, site.threshold, shas)
        srcs, inline = chunks.write(out, site.version, label_slug(label))
        metrics = data_files.metric_tables(site.series, ids, threshold_for=site.threshold_for, index=site.metric_index)
        sections = [{"name": name, "judged": judged} for name, judged in chunks.overlay().items()]
        data = script_json({"sections": sections, "judged_commits": VERDICT_COMMITS, "metrics": metrics})
        digest = hashlib.sha1(f"{site.version} {data} {label} {ids} {srcs} {inline}".encode()).hexdigest()
        out.page(site.label_href[label], digest, label_page, site, label, layout, chunks.names, data, srcs, inline)
    # A chart page per benchmark; what each can detect, for the line under its title, in one file: per
    # series, by chart slug, [the line, whether the threshold is within reach].
    reach = {
        s.name: {
            bench_slug(b): [detects.line(x), x.found is not None and x.found.reaches] for b, x in s.detects.items()
        }
        for s in site.series
    }
    out.file(DETECTS, f"window.REGRESS_DETECTS = {script_json({'threshold': site.threshold, 'series': reach})};\n")
    for bid in site.ids:
        shell, points = bench_data(site, bid)
        slug = shell["slug"] = bench_slug(bid)  # its line under the title in data/detects.js
        srcs, inline = points.write(out, site.version, slug)
        data = script_json(shell)
        digest = hashlib.sha1(f"{site.version} {data} {srcs} {inline}".encode()).hexdigest()
        out.page(site.bench_href[bid], digest, bench_page, site, bid, data, srcs, inline)
    template = site.env.get_template("explain.html")  # each explain panel's page, and its two traces
    for p in site.panels.values():
        links = ["", ""]
        for k, (rel, stored) in enumerate(p.traces):
            if stored is not None and stored.is_file():
                out.file(rel, stored.read_bytes())
                links[k] = rel.removeprefix("explain/")
        html = template.render(
            **site.context("../"),
            p=p,
            rows=[row_cells(p.diff, r) for r in p.diff.rows[:TOP]],
            base_trace=links[0],
            head_trace=links[1],
            more=max(0, len(p.diff.rows) - TOP),
        )
        out.file(p.rel, html)
    out.page("index.html", None, overview, site)
    out.file("regressions.json", regressions_json(site))
    out.file("regressions.atom", feed(site))
    for rel in set(previous) - set(out.files):  # pages of benchmarks and labels that are gone
        stale = site.out / rel
        if ".." not in Path(rel).parts and stale.is_file():
            stale.unlink()
    manifest = {"format": SITE_FORMAT, "regress": __version__, "files": out.files}
    write_atomic(site.out / MANIFEST, json.dumps(manifest, indent=0, sort_keys=True), sync=False)
    return out.written, out.kept


def detects_cell(v: Verdict | None, threshold: float, cores: int) -> dict:
    """A verdict's figure as an overview cell: its text ("3.1%"), its tooltip, and whether it falls short."""
    if v is None or v.detectable is None:
        return {"text": "", "note": "", "short": False}
    return {
        "text": detects.pct(v.detectable),
        "note": detects.note(v, threshold, cores),
        "short": not detects.reaches(v, threshold),
    }


def round6(values) -> np.ndarray:
    """Values to 6 significant figures, as floats whose JSON form is short: n / 10**k is the double
    nearest to the decimal n×10⁻ᵏ, so its repr has at most 6 digits."""
    a = np.asarray(values, dtype=np.float64)
    if a.size == 0:
        return a
    with np.errstate(divide="ignore", invalid="ignore"):
        k = np.clip(5 - np.floor(np.log10(np.abs(a))), -22, 22)
    k = np.where(np.isfinite(k), k, 0)
    p = 10.0 ** np.abs(k)
    up = k >= 0
    r = np.round(np.where(up, a * p, a / p))
    return np.where(up, r / p, r * p)


def bench_data(site: Site, bid: BenchmarkId) -> tuple[dict, Chunks]:
    """The chart's data: per series its failures and change points, and its points in data files."""
    out, lines = [], []
    for s, shas, (_, models, which) in zip(site.series, site.shas, site.runs):
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
            fails.append([shas[f.commit], round6([y]).tolist()[0], f.message[:500]])
        steps = []
        for st in s.steps:
            if st.id == bid:
                k = int(np.searchsorted(commits, st.index))
                on = k < len(commits) and commits[k] == st.index
                y = round6([levels[k] if on else st.after]).tolist()[0]
                steps.append([st.sha, *round6([st.before, st.after, st.ratio]).tolist(), st.direction, y])
        cpus = sorted(set().union(*(models[k] for k in np.unique(which[commits]).tolist())))
        instr = [[shas[c], n] for c, n in counted]
        out.append({"name": s.name, "cpus": cpus, "failed": fails, "steps": steps, "instr": instr})
        if track is not None:
            shown = {"level": levels, "lo": track.lo, "hi": track.hi}  # as the chart shows them: 6 figures
            lines.append(Line("series", s.name, commits, {k: round6(v) for k, v in shown.items()}))
    metrics, metric_lines = data_files.metric_lines(site.series, bid, site.metric_index)
    longest = max(len(s.history) for s in site.series)
    return {"series": out, "metrics": metrics}, Chunks.of(lines + metric_lines, longest)


def bench_page(site: Site, bid: BenchmarkId, data, chunks: list[str], inline=None) -> str:
    steps = [site.change_row(ch, "../") for ch in site.changes if ch["step"].id == bid]
    instructions: list[dict] = []  # newest first, per series, with the change against the previous count
    for s, shas in zip(site.series, site.shas):
        counted = s.counts.get(bid, [])
        for k in range(len(counted) - 1, max(-1, len(counted) - 31), -1):
            ci, n = counted[k]
            prev = counted[k - 1][1] if k > 0 else None
            instructions.append(
                {
                    "series": s.name,
                    "commit": site.commit(shas[ci]),
                    "count": f"{n:,}",
                    "change": f"{(n / prev - 1) * 100:+.2f}%" if prev else "",
                }
            )
    return site.env.get_template("bench.html").render(
        **site.context("../"),
        bid=bid,
        name=str(bid),
        label_href="../" + site.label_href[bid.label],
        steps=steps,
        instructions=instructions,
        data=data,
        chunks=chunks,
        inline=inline,
    )


def label_page(site: Site, label: str, layout, names: list[str], data, chunks: list[str], inline=None) -> str:
    return site.env.get_template("label.html").render(
        **site.context("../"),
        label=label,
        layout=layout,
        sections=names,
        chunks=chunks,
        inline=inline,
        hrefs={bid: "../" + site.bench_href[bid] for bid in site.labels[label]},
        threshold_pct=f"{site.threshold * 100:g}%",
        big_pct=f"{(BIG_CHANGE - 1) * 100:g}%",
        big_faster_pct=f"{(1 - 1 / BIG_CHANGE) * 100:.0f}%",
        verdict_commits=VERDICT_COMMITS,
        data=data,
    )


def overview(site: Site) -> str:
    series = []
    for s in site.series:
        n, newest = len(s.history), s.history[-1]
        measured = site.baseline is None or any(c.commit.sha == site.baseline for c in s.history)
        baseline = "Against the baseline" + ("" if site.baseline else " (the oldest measured commit)")
        missing = "The newest commit is the baseline." if measured else ""
        missing = missing or f"The baseline {(site.baseline or '')[:10]} was not measured on this series."
        only = "This is the only commit measured on this series."
        comparisons = [
            _comparison(site, s, "previous", "Against the previous measured commit", only),
            _comparison(site, s, "baseline", baseline, missing),
        ]
        series.append(
            {
                "name": s.name,
                "machine": s.machine,
                "env": s.env,
                "newest": newest.commit,
                "comparisons": comparisons,
                "n_commits": n,
                "first": s.history[0].commit.committed_at,
                "last": newest.commit.committed_at,
                "fp": newest.fingerprint,
            }
        )
    labels = []
    # The newest commit's verdicts against the commit before it: each benchmark's figure beside its level.
    newest_verdicts = [s.verdicts.get(len(s.history) - 1, {}) for s in site.series]
    cores = [s.history[-1].fingerprint.cores for s in site.series]
    for label, ids in site.labels.items():
        benchmarks = []
        for bid in ids:
            latest, figures = [], []
            for s, recent, n in zip(site.series, newest_verdicts, cores):
                track = s.tracks.get(bid)
                latest.append(fmt_time(float(track.level[-1]), "") if track is not None else "")
                figures.append(detects_cell(recent.get(bid, (0, None))[1], site.threshold, n))
            benchmarks.append(
                {
                    "name": str(bid),
                    "short": short_name(bid),
                    "href": site.bench_href[bid],
                    "latest": latest,
                    "detects": figures,
                }
            )
        labels.append({"name": label, "href": site.label_href[label], "benchmarks": benchmarks})
    return site.env.get_template("index.html").render(
        **site.context(""),
        built_at=time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
        n_commits=len(site.commits),
        series=series,
        benchmarks=site.ids,
        labels=labels,
        changes=[site.change_row(ch, "") for ch in site.changes[:MAX_CHANGES_ON_OVERVIEW]],
        n_changes=len(site.changes),
        threshold_pct=f"{site.threshold * 100:g}%",
    )


def _comparison(site: Site, s: Series, kind: str, title: str, missing: str) -> dict:
    """The overview's comparison `kind` of the series' newest commit (`Series.overview`), or `missing`."""
    if kind not in s.overview:
        return {"kind": kind, "title": title, "base": None, "missing": missing}
    at, verdicts = s.overview[kind]
    base, head = s.history[at], s.history[-1]
    counts = Counter(v.verdict for v in verdicts)
    notable = sorted(
        (v for v in verdicts if v.verdict != Kind.UNCHANGED), key=lambda v: (v.verdict.rank, -abs((v.ratio or 1) - 1))
    )
    return {
        "kind": kind,
        "title": title,
        "base": base.commit,
        "counts": sorted(counts.items(), key=lambda kv: kv[0].rank),
        "notable": [
            {
                "name": str(v.id),
                "href": site.bench_href.get(v.id, ""),
                "base": fmt_time(v.base_level, ""),
                "head": fmt_time(v.head_level, ""),
                "change": percent(v.ratio),
                "verdict": v.verdict,
                "reason": v.reason,  # the differ's own words; they quote the interval and p where there is one
                "detects": detects_cell(v, site.threshold, head.fingerprint.cores),
            }
            for v in notable
        ],
    }


def regressions_json(site: Site) -> str:
    rows = []
    for ch in site.changes:
        st: Step = ch["step"]
        c = ch["commit"]
        rows.append(
            {
                "machine": ch["series"].machine,
                "env": ch["series"].env,
                "sha": c.sha,
                "subject": c.subject,
                "author": c.author,
                "committed_at": iso(c.committed_at),
                "url": f"{site.repo_url}/commit/{c.sha}" if site.repo_url else None,
                "benchmark": dataclasses.asdict(st.id),
                "name": str(st.id),
                "before": st.before,
                "after": st.after,
                "ratio": st.ratio,
                "direction": st.direction,
                "span": st.span,
                "total_ratio": st.total,
                "chart": site.bench_href[st.id],
            }
        )
    data = {"format": 1, "generator": f"regress {__version__}", "threshold": site.threshold, "changes": rows}
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def feed(site: Site) -> str:
    entries = []
    for ch in site.changes:
        if ch["step"].direction != "regression":
            continue
        row = site.change_row(ch, "")
        st: Step = ch["step"]
        row["key"] = hashlib.sha1(f"{ch['series'].name} {st.sha} {st.id!r}".encode()).hexdigest()
        row["updated"] = _rfc3339(ch["commit"].committed_at)
        row["slower"] = f"{(st.ratio - 1) * 100:.1f}%"
        entries.append(row)
    newest = max((c.committed_at for c in site.commits), default=0)
    return site.env.get_template("feed.atom").render(
        title=site.title,
        feed_id=hashlib.sha1(site.title.encode()).hexdigest()[:16],
        updated=_rfc3339(newest),
        entries=entries,
        repo_url=site.repo_url,
    )


def _rfc3339(ts: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


@dataclass(frozen=True)
class Panel:
    rel: str  # the page, relative to the site root
    name: str
    series: str
    base: CommitInfo
    head: CommitInfo
    change: str
    diff: explanation.OpDiff
    traces: tuple[tuple[str, Path | None], tuple[str, Path | None]]  # (site path, stored file) for base, head


def explain_panels(results: Path, series: list) -> dict[tuple, Panel]:
    """The explain panels by (series name, step sha, benchmark id): a change point whose two commits have
    profiles `regress explain` stored gets a page with the op diff and both traces (copied into the site)."""
    panels = {}
    for s in series:
        for st in s.steps:
            if st.index == 0:
                continue
            base, head = s.history[st.index - 1].commit, s.history[st.index].commit
            stored = profile_pair(results, s.machine, s.env, base.sha, head.sha, st.id)
            if stored is None:
                continue
            b, h = stored
            key = (s.name, st.sha, st.id)
            slug = hashlib.sha1(repr(key).encode()).hexdigest()[:16]
            traces = ((f"explain/traces/{slug}-base.json", b.trace), (f"explain/traces/{slug}-head.json", h.trace))
            panels[key] = Panel(
                f"explain/{slug}.html",
                str(st.id),
                s.name,
                base,
                head,
                percent(st.ratio),
                explanation.diff(b.table, h.table),
                traces,
            )
    return panels
