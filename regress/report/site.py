"""`regress report`: the results folder as a static site, written to one folder.

    index.html                 overview: newest commit vs predecessor and baseline,
                               change points (recent first), every benchmark, machines
    label/<slug>.html          one per label: torch-style Compare tables (medians), one commit at a
                               time, coloured by the differ's verdicts against the previous
                               measured commit (the newest VERDICT_COMMITS commits of a series)
    bench/<slug>.html          one per benchmark: trend chart of levels with the rounds' quartiles
                               and change points on the line (its data inline, nothing else's)
    data/commits.js            every commit's sha, subject, author, date (hover, links)
    assets/plotly-<v>.min.js   Plotly, copied once from the installed plotly package
    assets/regress.{css,js}    the site's own style and script
    regressions.json           change points, for bots
    regressions.atom           the regressions among them, for feed readers
    .regress-site.json         what this folder holds (for --incremental and clean-up)

The site needs no server and no network: pages link only to files beside them.
Everything from commits and benchmark names goes through Jinja's autoescape, or
into JSON that `script_json` makes safe inside <script>, or into JS textContent.
"""

from __future__ import annotations

from regress.core.kinds import Kind
import bisect
import gc
import hashlib
import importlib.util
import json
import os
import re
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import jinja2
from markupsafe import Markup

from regress import __version__
from regress.core.errors import RegressError
from regress.core.records import BenchmarkId, CommitInfo, CommitResult
from regress.report.data import (
    BIG_CHANGE,
    VERDICT_COMMITS,
    Series,
    Step,
    bench_slug,
    commit_order,
    compare,
    fmt_ratio,
    fmt_time,
    grid_for,
    iso,
    label_slug,
    label_tables,
    round6,
    summarize,
)
from regress.report import metrics as report_metrics  # issue 14
from regress.report.tables import UNIT_ENGLISH
from regress.storage.atomic import write_atomic
from regress.storage.store import Store

SITE_FORMAT = 1
MANIFEST = ".regress-site.json"
MAX_CHANGES_ON_OVERVIEW = 100


@dataclass(frozen=True)
class Summary:
    out: Path
    written: int
    kept: int
    incremental: bool
    commits: int
    benchmarks: int
    series: int
    seconds: float

    def describe(self) -> str:
        def n(count: int, what: str) -> str:
            return f"{count} {what}{'' if count == 1 else 's'}"

        kept = f", {self.kept} kept unchanged" if self.incremental else ""
        return (
            f"site written to {self.out / 'index.html'}: {n(self.commits, 'commit')}, {n(self.benchmarks, 'benchmark')}, "
            f"{self.series} machine/env series; {n(self.written, 'page')} written{kept} in {self.seconds:.1f} s"
        )


def build(
    store: Store,
    out: Path,
    *,
    baseline: str | None = None,
    repo_url: str = "",
    threshold: float = 0.05,
    incremental: bool = False,
    title: str = "",
) -> Summary:
    """Write the site for everything in `store` into `out`.

    baseline: full sha the overview compares the newest commit against
    (default: each series' oldest commit). With `incremental`, pages whose
    inputs did not change since the last build in `out` are kept as they are.
    """
    started = time.perf_counter()
    repo_url = _check_repo_url(repo_url)
    previous = _read_manifest(out)
    templates, plotly = _templates(), _plotly_js()
    gc_was_enabled = gc.isenabled()
    gc.disable()  # a million small records: the cyclic collector would triple the load time
    try:
        all_series = _load(store, threshold)
        site = _Site(out, all_series, templates, plotly, repo_url=repo_url, threshold=threshold, title=title or "regress", baseline=baseline)
        written, kept = site.write(previous, keep_unchanged=incremental)
    except OSError as exc:
        raise RegressError(f"cannot write the site to {out}: {exc.strerror} ({exc.filename}); check the folder and free space") from None
    finally:
        if gc_was_enabled:
            gc.enable()
    return Summary(out, written, kept, incremental, len(site.commits), len(site.ids), len(all_series), time.perf_counter() - started)


def _check_repo_url(url: str) -> str:
    url = url.strip().rstrip("/")
    if url and not re.match(r"^https?://[^\s\"'<>]+$", url):
        raise RegressError(
            f"repo_url {url!r} is not an http(s) URL; set repo_url in [tool.regress] to e.g. https://github.com/owner/repo"
        )
    return url


def _load(store: Store, threshold: float) -> list[Series]:
    series = []
    for machine in store.machines():
        for env in store.envs(machine):
            history = store.history(machine, env)
            if history:
                series.append(summarize(Series(machine, env, history), threshold=threshold))
    if not series:
        raise RegressError(f"no results in {store.root}; measure some commits first with `regress run`")
    return series


# -- reading and writing the folder -------------------------------------------


def _read_manifest(out: Path) -> dict[str, str]:
    """{relative path: digest of its inputs} of the site already in `out`."""
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
        files = {}
    return files if isinstance(files, dict) else {}


def _write(path: Path, data: str | bytes) -> None:
    write_atomic(path, data, sync=False)  # a site can be rebuilt: no fsync per page


def script_json(obj) -> Markup:
    """JSON that is safe inside <script>: no '<', '>' or '&' can end the element or open a comment."""
    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    for ch, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(ch, escaped)
    return Markup(text)


def _templates() -> Path:
    """The templates folder, inside the package beside this module."""
    folder = Path(__file__).resolve().parent / "templates"
    if not (folder / "base.html").is_file():
        raise RegressError(f"regress's report templates are missing ({folder}); reinstall regress")
    return folder


def _plotly_js() -> tuple[str, Path]:
    spec = importlib.util.find_spec("plotly")
    if spec is None or not spec.submodule_search_locations:
        raise RegressError("the report needs plotly's JavaScript; install it with `pip install plotly`")
    path = Path(list(spec.submodule_search_locations)[0]) / "package_data" / "plotly.min.js"
    if not path.is_file():
        raise RegressError(f"plotly is installed without {path.name}; reinstall it with `pip install --force-reinstall plotly`")
    with path.open("rb") as fh:
        found = re.search(rb"plotly\.js v([0-9][0-9A-Za-z.\-]*)", fh.read(400))
    version = found.group(1).decode() if found else "bundle"
    return f"plotly-{version}.min.js", path


# -- the pages ----------------------------------------------------------------


def _short_name(bid: BenchmarkId) -> str:
    """The benchmark without its label (shown under the label's heading)."""
    return str(bid)[len(bid.label) + 3 :]


class _Site:
    def __init__(
        self,
        out: Path,
        series: list[Series],
        templates,
        plotly: tuple[str, Path],
        *,
        repo_url: str,
        threshold: float,
        title: str,
        baseline: str | None,
    ):
        self.out = out
        self.series = series
        self.repo_url = repo_url
        self.threshold = threshold
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
            seen.update(dict.fromkeys(r.id for r in s.history[-1].results))
        for s in series:
            seen.update(dict.fromkeys(s.tracks))
            seen.update(dict.fromkeys(s.failed))
            seen.update(dict.fromkeys(s.counts))
        self.ids = list(seen)
        self.labels: dict[str, list[BenchmarkId]] = {}
        for bid in self.ids:
            self.labels.setdefault(bid.label, []).append(bid)
        self.bench_href = {bid: f"bench/{bench_slug(bid)}.html" for bid in self.ids}
        self.label_href = {label: f"label/{label_slug(label)}.html" for label in self.labels}
        self.changes = self._changes()
        self._option_texts: dict[str, str] = {}
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
        sources = "".join((folder / n).read_text(encoding="utf-8") for n in ("base.html", "macros.html", "label.html", "bench.html",
                                                                           *report_metrics.TEMPLATES))  # issue 14
        self.version = hashlib.sha1(
            f"{SITE_FORMAT} {__version__} {sources} {self.assets} {title} {repo_url}".encode()
        ).hexdigest()

    # -- shared bits ----------------------------------------------------------

    def _context(self, root: str) -> dict:
        return {"root": root, "title": self.title, "assets": self.assets, "repo_url": self.repo_url}

    def _changes(self) -> list[dict]:
        """Every change point of every series, most recent commit first."""
        out = []
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
            "change": fmt_ratio(st.ratio),
            "direction": st.direction,
        }

    # -- writing --------------------------------------------------------------

    def write(self, previous: dict[str, str], *, keep_unchanged: bool) -> tuple[int, int]:
        """Write the site; returns (pages written, pages kept as they were).

        previous: the manifest of the site already in the folder. Its files that
        this build does not write are removed; with `keep_unchanged`, its pages
        whose inputs have the same digest now are kept as they are.
        """
        files: dict[str, str] = {}
        written = kept = 0

        def page(rel: str, digest: str | None, render) -> None:
            nonlocal written, kept
            if keep_unchanged and digest is not None and previous.get(rel) == digest and (self.out / rel).is_file():
                kept += 1
            else:
                _write(self.out / rel, render())
                written += 1
            files[rel] = digest or ""

        self.out.mkdir(parents=True, exist_ok=True)
        plotly_rel = f"assets/{self.assets['plotly']}"
        target = self.out / plotly_rel
        if not (target.is_file() and target.stat().st_size == self.plotly_path.stat().st_size):
            _write(target, self.plotly_path.read_bytes())
        files[plotly_rel] = ""
        for name, key in (("regress.css", "css"), ("regress.js", "js")):
            _write(self.out / "assets" / self.assets[key], self.static[name])
            files[f"assets/{self.assets[key]}"] = ""
        _write(self.out / "data" / "commits.js", self._commits_js())
        files["data/commits.js"] = ""

        for bid in self.ids:
            data = script_json(self._bench_data(bid))
            digest = hashlib.sha1(f"{self.version} {data}".encode()).hexdigest()
            page(self.bench_href[bid], digest, lambda bid=bid, data=data: self._bench_page(bid, data))
        for label, ids in self.labels.items():
            grid = grid_for(ids)
            sections = self._label_data(grid)
            data = script_json({"sections": sections, "judged_commits": VERDICT_COMMITS,
                                "metrics": report_metrics.label_tables(self.series, ids)})  # issue 14
            digest = hashlib.sha1(f"{self.version} {data} {label} {ids}".encode()).hexdigest()
            page(self.label_href[label], digest, lambda label=label, grid=grid, sections=sections, data=data: self._label_page(label, grid, sections, data))

        page("index.html", None, self._overview)
        for rel, render in (("regressions.json", self._regressions_json), ("regressions.atom", self._feed)):
            _write(self.out / rel, render())
            files[rel] = ""

        for rel in set(previous) - set(files):  # pages of benchmarks and labels that are gone
            stale = self.out / rel
            if ".." not in Path(rel).parts and stale.is_file():
                stale.unlink()
        manifest = {"format": SITE_FORMAT, "regress": __version__, "files": files}
        _write(self.out / MANIFEST, json.dumps(manifest, indent=0, sort_keys=True))
        return written, kept

    def _commits_js(self) -> str:
        table = {c.sha: [i, c.short, c.subject, c.author, iso(c.committed_at)] for i, c in enumerate(self.commits)}
        return f"window.REGRESS_COMMITS = {script_json({'repo': self.repo_url, 'commits': table})};\n"

    # -- chart pages ------------------------------------------------------------

    def _bench_data(self, bid: BenchmarkId) -> dict:
        """The chart's data: per series, the level per commit, the rounds' quartiles, failures, change points.

        The line is the level the differ and the change points use (the
        fastest round's fastest block), not the median, so a change point's
        marker is drawn on the line, at its commit's level; its before and
        after (the levels of the segments either side) are in its hover.
        """
        out = []
        for s, shas in zip(self.series, self.shas):
            track = s.tracks.get(bid)
            failed = s.failed.get(bid, [])
            counted = s.counts.get(bid, [])
            if track is None and not failed and not counted:
                continue
            commits = track.commits.tolist() if track is not None else []
            levels = round6(track.level) if track is not None else []
            fails = []
            for f in failed:  # drawn at the level of the last measurement before it (or after it)
                k = bisect.bisect_left(commits, f.commit)
                y = levels[k - 1] if k > 0 else (levels[0] if levels else 0.0)
                fails.append([shas[f.commit], y, f.message[:500]])
            at = {c: y for c, y in zip(commits, levels)}
            steps = []
            for st in s.steps:
                if st.id == bid:
                    y = at.get(st.index, round6([st.after])[0])
                    steps.append([st.sha, *round6([st.before, st.after, st.ratio]), st.direction, y])
            out.append(
                {
                    "name": s.name,
                    "sha": [shas[c] for c in commits],
                    "level": levels,
                    "lo": round6(track.lo) if track is not None else [],
                    "hi": round6(track.hi) if track is not None else [],
                    "failed": fails,
                    "steps": steps,
                    "instr": [[shas[c], n] for c, n in counted],
                }
            )
        return {"series": out, **report_metrics.bench(self.series, self.shas, bid)}  # issue 14: metrics beyond time

    def _instruction_rows(self, bid: BenchmarkId) -> list[dict]:
        """Newest first, per series, with the change against the previous count."""
        rows = []
        for s, shas in zip(self.series, self.shas):
            counted = s.counts.get(bid, [])
            for k in range(len(counted) - 1, max(-1, len(counted) - 31), -1):
                ci, n = counted[k]
                prev = counted[k - 1][1] if k > 0 else None
                rows.append({
                    "series": s.name,
                    "commit": self._commit(shas[ci]),
                    "count": f"{n:,}",
                    "change": f"{(n / prev - 1) * 100:+.2f}%" if prev else "",
                })
        return rows

    def _bench_page(self, bid: BenchmarkId, data) -> str:
        steps = [self._change_row(ch, "../") for ch in self.changes if ch["step"].id == bid]
        return self.env.get_template("bench.html").render(
            **self._context("../"),
            bid=bid,
            name=str(bid),
            label_href="../" + self.label_href[bid.label],
            steps=steps,
            instructions=self._instruction_rows(bid),
            data=data,
        )

    # -- label pages ------------------------------------------------------------

    def _label_data(self, grid) -> list[dict]:
        """Per series: its Compare tables (`label_tables`), oldest first, with each commit's sha."""
        sections = []
        for s in self.series:
            tables = label_tables(s, grid, threshold=self.threshold)
            if tables:
                for t in tables:
                    t["sha"] = s.history[t.pop("c")].commit.sha
                    t["unit_name"] = UNIT_ENGLISH.get(t["unit"], "")
                sections.append({"name": s.name, "tables": tables})
        return sections

    def _label_page(self, label: str, grid, sections: list[dict], data) -> str:
        return self.env.get_template("label.html").render(
            **self._context("../"),
            label=label,
            grid=grid,
            sections=[{"name": sec["name"], "options": self._options([t["sha"] for t in sec["tables"]])} for sec in sections],
            hrefs={bid: "../" + self.bench_href[bid] for bid in self.labels[label]},
            threshold_pct=f"{self.threshold * 100:g}%",
            big_pct=f"{(BIG_CHANGE - 1) * 100:g}%",
            big_faster_pct=f"{(1 - 1 / BIG_CHANGE) * 100:.0f}%",
            verdict_commits=VERDICT_COMMITS,
            data=data,
        )

    def _options(self, shas: list[str]) -> list[tuple[int, str]]:
        """The commit picker's (table index, text), newest first; texts made once per commit."""
        texts = self._option_texts
        for sha in shas:
            if sha not in texts:
                c = self._commit(sha)
                subject = c.subject if len(c.subject) <= 90 else c.subject[:89] + "…"
                texts[sha] = f"{c.short} · {iso(c.committed_at)} · {subject}"
        return [(i, texts[sha]) for i, sha in reversed(list(enumerate(shas)))]

    # -- overview, JSON and feed --------------------------------------------------

    def _overview(self) -> str:
        series = []
        for s in self.series:
            newest = s.history[-1]
            base = next((cr for cr in s.history if cr.commit.sha == self.baseline), None) if self.baseline else s.history[0]
            comparisons = [
                self._comparison(
                    "previous",
                    "Against the previous measured commit",
                    s.history[-2] if len(s.history) > 1 else None,
                    newest,
                    "This is the only commit measured on this series.",
                    before=s.history[-3] if len(s.history) > 2 else None,
                ),
                self._comparison(
                    "baseline",
                    "Against the baseline" + ("" if self.baseline else " (the oldest measured commit)"),
                    base if base is not newest else None,
                    newest,
                    "The newest commit is the baseline." if base is newest else f"The baseline {self.baseline[:10] if self.baseline else ''} was not measured on this series.",
                ),
            ]
            series.append(
                {
                    "name": s.name,
                    "machine": s.machine,
                    "env": s.env,
                    "newest": newest.commit,
                    "comparisons": comparisons,
                    "n_commits": len(s.history),
                    "first": s.history[0].commit.committed_at,
                    "last": newest.commit.committed_at,
                    "fp": newest.fingerprint,
                }
            )
        labels = []
        for label, ids in self.labels.items():
            benchmarks = []
            for bid in ids:
                latest = []
                for s in self.series:
                    track = s.tracks.get(bid)
                    latest.append(fmt_time(float(track.median[-1])) if track is not None else "")
                benchmarks.append({"name": str(bid), "short": _short_name(bid), "href": self.bench_href[bid], "latest": latest})
            labels.append({"name": label, "href": self.label_href[label], "benchmarks": benchmarks})
        return self.env.get_template("index.html").render(
            **self._context(""),
            built_at=time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
            n_commits=len(self.commits),
            series=series,
            benchmarks=self.ids,
            labels=labels,
            changes=[self._change_row(ch, "") for ch in self.changes[:MAX_CHANGES_ON_OVERVIEW]],
            n_changes=len(self.changes),
        )

    def _comparison(self, kind: str, title: str, base: CommitResult | None, head: CommitResult, missing: str,
                    before: CommitResult | None = None) -> dict:
        if base is None:
            return {"kind": kind, "title": title, "base": None, "missing": missing}
        # As `regress compare` judges it: with the commit before base as history, when there is one.
        verdicts = compare(base, head, threshold=self.threshold, before=before)
        counts = {}
        for v in verdicts:
            counts[v.verdict] = counts.get(v.verdict, 0) + 1
        notable = sorted(
            (v for v in verdicts if v.verdict != Kind.UNCHANGED),
            key=lambda v: (v.verdict.rank, -abs((v.ratio or 1) - 1)),
        )
        return {
            "kind": kind,
            "title": title,
            "base": base.commit,
            "counts": sorted(counts.items(), key=lambda kv: kv[0].rank),
            "notable": [
                {
                    "name": str(v.id),
                    "href": self.bench_href.get(v.id, ""),
                    "base": fmt_time(v.base_level),
                    "head": fmt_time(v.head_level),
                    "change": fmt_ratio(v.ratio),
                    "verdict": v.verdict,
                    "reason": v.reason,  # the differ's own words; they quote the interval and p where there is one
                }
                for v in notable
            ],
        }

    def _regressions_json(self) -> str:
        rows = []
        for ch in self.changes:
            st: Step = ch["step"]
            c: CommitInfo = ch["commit"]
            rows.append(
                {
                    "machine": ch["series"].machine,
                    "env": ch["series"].env,
                    "sha": c.sha,
                    "subject": c.subject,
                    "author": c.author,
                    "committed_at": iso(c.committed_at),
                    "url": f"{self.repo_url}/commit/{c.sha}" if self.repo_url else None,
                    "benchmark": {"label": st.id.label, "sub_label": st.id.sub_label, "description": st.id.description, "num_threads": st.id.num_threads},
                    "name": str(st.id),
                    "before": st.before,
                    "after": st.after,
                    "ratio": st.ratio,
                    "direction": st.direction,
                    "chart": self.bench_href[st.id],
                }
            )
        return json.dumps({"format": 1, "generator": f"regress {__version__}", "threshold": self.threshold, "changes": rows}, indent=1, ensure_ascii=False) + "\n"

    def _feed(self) -> str:
        entries = []
        for ch in self.changes:
            if ch["step"].direction != "regression":
                continue
            row = self._change_row(ch, "")
            st: Step = ch["step"]
            row["key"] = hashlib.sha1(f"{ch['series'].name} {st.sha} {st.id!r}".encode()).hexdigest()
            row["updated"] = _rfc3339(ch["commit"].committed_at)
            row["slower"] = f"{(st.ratio - 1) * 100:.1f}%"
            entries.append(row)
        newest = max((c.committed_at for c in self.commits), default=0)
        return self.env.get_template("feed.atom").render(
            title=self.title,
            feed_id=hashlib.sha1(self.title.encode()).hexdigest()[:16],
            updated=_rfc3339(newest),
            entries=entries,
            repo_url=self.repo_url,
        )


def _rfc3339(ts: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))

