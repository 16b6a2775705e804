"""`regress report`: the results folder as a static site, written to one folder.

    index.html                 overview: newest commit vs predecessor and baseline,
                               change points (recent first), every benchmark, machines
    label/<slug>.html          one per label: torch-style Compare tables (levels), one commit at a
                               time, coloured by the differ's verdicts against the previous
                               measured commit (the newest VERDICT_COMMITS commits of a series)
    bench/<slug>.html          one per benchmark: trend chart of levels with the rounds' quartiles
                               and change points on the line (its change points and failures inline)
    data/bench/<slug>/<k>.js   a chart's points, 500 history positions a file (`open-<j>.js`: the
                               newest, in pieces of 100), so a new commit rewrites one small file
                               per benchmark (report/chunk_grid.py)
    data/label/<slug>/<k>.js   a label page's tables, the same way (report/*_chunks.py)
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

import gc
import importlib.util
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from regress.analysis import changepoints, run_pairs, runs
from regress.analysis import table as figures_table
from regress.analysis.table import Table
from regress.core.config import DEFAULT
from regress.core.errors import RegressError
from regress.report import detects, prefix_cache, settled, verdict_cache
from regress.report.builder import MANIFEST, SITE_FORMAT, Site
from regress.report.data import Series, judge_recent, summarize
from regress.report.steps_beside import Beside
from regress.report.verdict_cache import STEPS, CachedCompare
from regress.storage import series_figures, summary
from regress.storage.memo import Memo, files_digest
from regress.storage.store import Store


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
    threshold: float = DEFAULT.threshold,
    threshold_for=None,
    incremental: bool = False,
    title: str = "",
    code=None,
    rounds: tuple[int, int] = (DEFAULT.min_rounds, DEFAULT.max_rounds),
    memo: Memo | None = None,
) -> Summary:
    """Write the site for everything in `store` into `out`.

    baseline: full sha the overview compares the newest commit against
    (default: each series' oldest commit). `threshold_for`: Metric -> the project's threshold
    (`Config.threshold_for`; default: the defaults), which the metric tables judge with. With
    `incremental`, pages whose inputs did not change since the last build in `out` are kept as they are.
    `code`: shas -> {sha: code digest} (`storage.code_identity`): commits of identical code share a level.
    `rounds`: the plan's least and most rounds a commit (what each benchmark can detect is stated at them).
    `memo`: the command's memo (`storage/memo.py`; default: the results folder's, opened and closed here).
    """
    started = time.perf_counter()
    repo_url = _check_repo_url(repo_url)
    previous, settled_before = _read_manifest(out)
    templates, plotly = _templates(), _plotly_js()
    gc_was_enabled = gc.isenabled()
    gc.disable()  # a million small records: the cyclic collector would triple the load time
    own = memo is None
    memo = Memo(store.root) if memo is None else memo
    later = _LaterSteps(store, memo, threshold)
    try:
        all_series, judge = _load(store, memo, threshold, code, later, rounds)
        site = Site(
            out,
            all_series,
            templates,
            plotly,
            repo_url=repo_url,
            threshold=threshold,
            threshold_for=threshold_for or DEFAULT.threshold_for,
            title=title or "regress",
            baseline=baseline,
        )
        written, kept = site.write(
            previous,
            keep_unchanged=incremental,
            results=store.root,
            settle=later.settle,
            settled=settled_before,
            judge=judge,
        )
    except OSError as exc:
        raise RegressError(
            f"cannot write the site to {out}: {exc.strerror} ({exc.filename}); check the folder and free space"
        ) from None
    finally:
        later.close()
        if own:
            memo.close()
        if gc_was_enabled:
            gc.enable()
    return Summary(
        out,
        written,
        kept,
        incremental,
        len(site.commits),
        len(site.ids),
        len(all_series),
        time.perf_counter() - started,
    )


def _check_repo_url(url: str) -> str:
    url = url.strip().rstrip("/")
    if url and not re.match(r"^https?://[^\s\"'<>]+$", url):
        raise RegressError(
            f"repo_url {url!r} is not an http(s) URL; set repo_url in [tool.regress] to e.g. https://github.com/owner/repo"
        )
    return url


def _load(
    store: Store,
    memo: Memo,
    threshold: float,
    code,
    later: _LaterSteps,
    rounds=(DEFAULT.min_rounds, DEFAULT.max_rounds),
) -> tuple[list[Series], Callable[[], None]]:
    """Every series with its tracks; its change points are `later`'s (found beside the build), and its recent
    verdicts are the returned call's to judge (the build makes them while its chart files are made beside it)."""
    series, verdicts = [], []
    for machine in store.machines():
        for env in store.envs(machine):
            table, digests = _table(store, memo, machine, env)
            history = table.history
            if history:
                ids = code([c.commit.sha for c in history]) if code is not None else {}
                # The recent verdicts decode their commits in full, or come from the last build's.
                judge = CachedCompare(store, memo, machine, env, digests=digests)
                found = Series(machine, env, history, table=table)
                later.start(found, ids, judge, digests)  # first: the search runs while the verdicts are judged
                chart = prefix_cache.ChartLevels(memo, machine, env)
                series.append(
                    summarize(found, threshold=threshold, code=ids, steps=None, fit_levels=chart, verdicts=False)
                )
                found.settled = settled.of(found.table, chart.fixed)
                verdicts.append((found, ids, judge, digests))
    if not series:
        raise RegressError(f"no results in {store.root}; measure some commits first with `regress run`")

    def judge_all() -> None:
        for found, ids, judge, digests in verdicts:
            judge_recent(found, threshold=threshold, code=ids, judge=judge)
            least, most = rounds
            found.detects = detects.of_series(store, found, threshold=threshold, rounds=least, most_rounds=most)
            _keep_pairs(store, memo, found, ids, digests)

    return series, judge_all


class _LaterSteps:
    """Each series' change points: the ones the last build or `regressions` kept for these very files
    (kind STEPS in the memo), else found beside the rest of the build (report/steps_beside.py) and
    judged, through the kept verdicts across candidate steps, when a page first needs them."""

    def __init__(self, store: Store, memo: Memo, threshold: float) -> None:
        self.store, self.memo, self.threshold = store, memo, threshold
        self.pending: list[tuple] = []  # (series, code identities, judge, steps' inputs, search, kept prefix)

    def start(self, s: Series, code: dict[str, str], judge: CachedCompare, digests: dict[str, str] | None) -> None:
        shas = [c.commit.sha for c in s.history]
        digests = summary.digests(self.store, s.machine, s.env) if digests is None else digests
        inputs = verdict_cache.steps_inputs(digests, shas, threshold=self.threshold, code=code)
        beside, prefix = None, None
        if inputs is None or self.memo.find(STEPS, inputs) is None:
            # The sealed prefix the last build kept: read here, decoded and checked in the search.
            prefix = prefix_cache.Entry(self.memo, s.machine, s.env, self.threshold)
            table, threshold, found = s.table, self.threshold, prefix.found
            beside = Beside(
                lambda: changepoints.search(table, threshold=threshold, code=code, kept=prefix_cache.decode(found))
            )
        self.pending.append((s, code, judge, inputs, beside, prefix))

    def settle(self) -> None:
        for s, code, judge, inputs, beside, prefix in self.pending:

            def steps(s=s, code=code, judge=judge, beside=beside, prefix=prefix) -> list[changepoints.Step]:
                found = None
                if beside is not None:
                    searched = beside.get()
                    found = searched.candidates
                    if searched.keep is not None:
                        prefix.keep(searched.keep)
                return changepoints.find_steps(
                    s.table, threshold=self.threshold, code=code, found=found, judge_one=judge.across
                )

            s.steps = self.memo.get(STEPS, inputs, steps, verdict_cache.steps_tree, verdict_cache.steps_from_tree)
        self.close()

    def close(self) -> None:
        """A search still running (the build failed) stopped."""
        for _, _, judge, _, beside, _ in self.pending:
            if beside is not None:
                beside.stop()
            judge.close()
        self.pending = []


def _table(store: Store, memo: Memo, machine: str, env: str) -> tuple[Table, dict[str, str] | None]:
    """The series' figures: each file's kept in the memo (one new file's computed), else from its light
    history; and its files' content digests as the summary had them (None: read them where needed)."""
    files = series_figures.per_file(store, memo, machine, env, figures_table.compute)
    digests = files.by_sha if files is not None else None
    return Table.kept(files, lambda: summary.history(store, machine, env)), digests


def _keep_pairs(store: Store, memo: Memo, s: Series, code: dict[str, str], digests: dict[str, str] | None) -> None:
    """The same-code pairs this build's verdicts computed, kept for `regress compare` (which would read
    the whole history for them)."""
    pairs = runs.pairs_found(s.table, code)
    if pairs is not None:
        digests = summary.digests(store, s.machine, s.env) if digests is None else digests
        inputs = files_digest(digests, [c.commit.sha for c in s.history], sorted(code.items()))
        memo.get(run_pairs.PAIRS, inputs, lambda: pairs, run_pairs.pairs_tree, run_pairs.pairs_from_tree)


# -- reading the folder ------------------------------------------------------


def _read_manifest(out: Path) -> tuple[dict[str, str], dict[str, str]]:
    """{relative path: digest of its inputs} of the site already in `out`, and {data file: its settled
    key} (report/settled.py)."""
    if out.exists() and not out.is_dir():
        raise RegressError(f"{out} is a file, not a folder; pass --out a folder for the site")
    path = out / MANIFEST
    if not path.is_file():
        if (out / "index.html").exists():
            raise RegressError(
                f"{out} already has an index.html that regress did not write; pass --out an empty folder (or delete {out})"
            )
        return {}, {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        files = data["files"] if data.get("format") == SITE_FORMAT else {}
        keys = data.get("settled", {}) if isinstance(files, dict) and files else {}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        files, keys = {}, {}
    if not isinstance(files, dict):
        return {}, {}
    ok = isinstance(keys, dict) and all(isinstance(v, str) for v in keys.values())
    return files, keys if ok else {}


def _templates() -> Path:
    """The templates folder: `regress/templates` in an installed wheel (pyproject.toml maps the
    project's top-level `templates/` there), or that top-level folder itself beside the package
    in a source checkout or an editable install."""
    package = Path(__file__).resolve().parents[1]
    installed, checkout = package / "templates", package.parent / "templates"
    if (installed / "base.html").is_file():
        return installed
    if (package.parent / "pyproject.toml").is_file() and (checkout / "base.html").is_file():
        return checkout
    raise RegressError(f"regress's report templates are missing ({installed}); reinstall regress")


def _plotly_js() -> tuple[str, Path]:
    spec = importlib.util.find_spec("plotly")
    if spec is None or not spec.submodule_search_locations:
        raise RegressError("the report needs plotly's JavaScript; install it with `pip install plotly`")
    path = Path(list(spec.submodule_search_locations)[0]) / "package_data" / "plotly.min.js"
    if not path.is_file():
        raise RegressError(
            f"plotly is installed without {path.name}; reinstall it with `pip install --force-reinstall plotly`"
        )
    with path.open("rb") as fh:
        found = re.search(rb"plotly\.js v([0-9][0-9A-Za-z.\-]*)", fh.read(400))
    version = found.group(1).decode() if found else "bundle"
    return f"plotly-{version}.min.js", path
