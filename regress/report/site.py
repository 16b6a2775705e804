"""`regress report`: the results folder as a static site in one folder, needing no server or network.

    index.html, label/<slug>.html, bench/<slug>.html   overview, Compare tables, charts
    data/bench|label/<slug>/<k>.js, data/commits.js    their data (report/data_files.py)
    assets/, regressions.json, regressions.atom        Plotly and the site's own, change points, feed
    .regress-site.json                                 the manifest (for --incremental and clean-up)

What commits and benchmarks name goes through Jinja's autoescape, `script_json` or JS textContent.
"""

from __future__ import annotations

import functools
import importlib.util
import re
import time
from dataclasses import dataclass
from pathlib import Path

from regress.analysis import changepoints, detectable, diff
from regress.analysis import table as figures_table
from regress.analysis.levels import trusted
from regress.analysis.table import Table
from regress.core.config import DEFAULT
from regress.core.errors import RegressError
from regress.report import data, pages
from regress.report.data import CachedCompare, Series
from regress.report.pages import Site
from regress.storage import summary
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
    """Write the site for everything in `store` into `out`; `incremental` keeps the pages whose inputs
    did not change. `baseline`: the sha the overview compares against (default: each series' oldest);
    `code`: shas -> {sha: code digest}; `rounds`: the plan's least and most; `memo`: default the results'."""
    started = time.perf_counter()
    repo_url = repo_url.strip().rstrip("/")
    if repo_url and not re.match(r"^https?://[^\s\"'<>]+$", repo_url):
        raise RegressError(
            f"repo_url {repo_url!r} is not an http(s) URL; set repo_url in [tool.regress] to e.g. https://github.com/owner/repo"
        )
    previous = pages.read_manifest(out)
    templates, plotly = _templates(), _plotly_js()
    own = memo is None
    memo = Memo(store) if memo is None else memo
    try:
        all_series = _model(store, memo, threshold, code, rounds, baseline)
        site = Site(
            out,
            all_series,
            templates,
            plotly,
            results=store.root,
            repo_url=repo_url,
            threshold=threshold,
            threshold_for=threshold_for or DEFAULT.threshold_for,
            title=title or "regress",
            baseline=baseline,
        )
        written, kept = pages.write(site, previous, keep_unchanged=incremental)
    except OSError as exc:
        raise RegressError(
            f"cannot write the site to {out}: {exc.strerror} ({exc.filename}); check the folder and free space"
        ) from None
    finally:
        if own:
            memo.close()
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


def _model(
    store: Store,
    memo: Memo,
    threshold: float,
    code,
    rounds=(DEFAULT.min_rounds, DEFAULT.max_rounds),
    baseline: str | None = None,
) -> list[Series]:
    """Every series complete (`_series`)."""
    series = []
    for machine in store.machines():
        for env in store.envs(machine):
            # Each file's figures kept in the memo (a new file's computed), else the light history's.
            files = summary.per_file(store, memo, machine, env, figures_table.compute)
            table = Table.kept(files, functools.partial(summary.history, store, machine, env))
            if table.history:
                ids = code([c.commit.sha for c in table.history]) if code is not None else {}
                digests = files.by_sha if files is not None else summary.digests(store, machine, env)
                s = Series(machine, env, table.history, table=table)
                series.append(_series(store, memo, s, ids, digests, threshold, rounds, baseline))
    if not series:
        raise RegressError(f"no results in {store.root}; measure some commits first with `regress run`")
    return series


def _series(
    store: Store,
    memo: Memo,
    s: Series,
    code: dict[str, str],
    digests: dict[str, str],
    threshold: float,
    rounds,
    baseline: str | None,
) -> Series:
    """One series made whole: its change points, verdicts, overview and detects, kept in the memo by `digests`."""
    shas = [c.commit.sha for c in s.history]
    inputs = data.steps_inputs(digests, shas, threshold=threshold, code=code)  # the noise's too
    judge = CachedCompare(store, memo, s.machine, s.env, digests=digests)
    data.summarize(s, threshold=threshold, code=code, whole=False)
    levels = functools.cache(lambda: trusted(s.table, threshold=threshold, code=code))
    apart = diff.Apart(s.table, code)  # one allowance for the steps and the verdicts

    def steps() -> list[changepoints.Step]:  # judged through the kept verdicts across candidate steps
        kept = memo.values(changepoints.CHECKPOINT)
        return changepoints.find_steps(
            s.table, threshold=threshold, code=code, judge_one=judge.across, apart=apart, kept=kept, levels=levels()
        )

    s.steps = memo.get(data.STEPS, inputs, steps, from_tree=data.steps_of)
    data.judge_recent(s, threshold=threshold, code=code, judge=judge, apart=apart)
    n, h = len(s.history), s.history

    def against(base: int, before=None) -> list:  # the newest against `base`, as `regress compare` judges them
        same = data.same_code(code, h[base], h[n - 1])
        return judge(h[base], h[n - 1], threshold=threshold, before=before, apart=apart, same_code=same)

    if n >= 2:  # against the one before it: judged with the recent verdicts where any benchmark has one
        found = s.compared.get((n - 2, n - 1))
        s.overview["previous"] = (n - 2, found if found is not None else against(n - 2, h[n - 3] if n >= 3 else None))
    at = 0 if baseline is None else next((i for i, c in enumerate(h) if c.commit.sha == baseline), n - 1)
    if at < n - 1:  # and against the baseline
        s.overview["baseline"] = (at, against(at))
    noise = detectable.kept_noise(memo, inputs, s.table, threshold=threshold, code=code, levels=levels)
    light = summary.light_or_file(store, s.machine, s.env, shas[-2:])
    newest = light.get(shas[-1])
    if newest is not None:  # what each benchmark can detect at the newest commit
        seen = detectable.each(
            newest,
            threshold=threshold,
            rounds=rounds[0],
            most_rounds=rounds[1],
            before=light.get(shas[-2]) if n > 1 else None,
            history=noise,
            apart=apart,  # s.apart: judge_recent's
            across_runs=not detectable.shares_a_run(s.table, n - 1),
        )
        s.detects = {x.id: x for x in seen}
    pairs = apart.pairs  # the verdicts' allowances' pairs, for `regress compare`
    if pairs is not None:
        kept = files_digest(digests, shas, sorted(code.items()))
        memo.get(diff.PAIRS, kept, lambda: pairs, diff.pairs_tree, diff.pairs_from_tree)
    return s


def _templates() -> Path:
    """`regress/templates` in a wheel, else the checkout's top-level `templates/`."""
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
