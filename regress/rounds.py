"""More rounds for a comparison: base and head in turn, each round in a fresh worker process.

Alternating puts base's and head's rounds in the same minutes, so a machine
that slows down for a while slows both; fresh processes make each round an
independent draw of process luck. Every round is saved as soon as it is
taken (the store appends it to the commit's samples), so an interrupted
`compare --measure` keeps what it measured.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Callable

from . import gitrepo, runner
from .config import Config
from .errors import RegressError
from .model import WORKTREE, CommitInfo, CommitResult, Fingerprint, Settings, merge_results
from .store import Store


def _settings(cfg: Config, existing: CommitResult | None, bench: str) -> Settings:
    """The settings the commit was measured with, so new rounds match the old."""
    benchmarks_from = existing.settings.benchmarks_from if existing is not None else "worktree"
    return runner.settings_for(cfg, runner.Options(bench=bench, benchmarks_from=benchmarks_from))


def _suite(cfg: Config, code_dir: Path, settings: Settings) -> tuple[Path, Path]:
    if settings.benchmarks_from == "commit":
        return code_dir / cfg.benchmarks, code_dir
    return cfg.benchmarks_dir, cfg.root


def measure_rounds(
    cfg: Config,
    shas: list[str],
    *,
    rounds: int,
    bench: str = "",
    announce: Callable[[int, int, CommitInfo], None] | None = None,
) -> dict[str, CommitResult]:
    """Take `rounds` more rounds of every commit in `shas`, in turn; return what is stored after."""
    repo = gitrepo.open_repo(cfg.root)
    store = Store(cfg.results_dir)
    with store.lock(), contextlib.ExitStack() as stack:
        gitrepo.prune_stale_worktrees(repo)
        plan = []
        for sha in dict.fromkeys(shas):
            info = gitrepo.worktree_info(repo) if sha == WORKTREE else gitrepo.commit_info(repo, sha)
            existing = store.load(cfg.machine_name, cfg.env, sha)
            settings = _settings(cfg, existing, bench)
            if settings.benchmarks_from == "worktree" and not cfg.benchmarks_dir.is_dir():
                raise RegressError(
                    f"no benchmark folder {cfg.benchmarks_dir}; create it with a bench_*.py suite, "
                    'or set benchmarks = "..." in [tool.regress] of pyproject.toml'
                )
            code_dir = cfg.root if sha == WORKTREE else stack.enter_context(gitrepo.worktree(repo, sha))
            build_failure = runner._build(cfg, code_dir)  # noqa: SLF001 - runner's one build step, reused as is
            plan.append((info, settings, code_dir, build_failure))
        # The store re-measures the WORKTREE from scratch on every save, so its
        # rounds are gathered here and saved together each time.
        worktree_rounds: CommitResult | None = None
        for k in range(1, rounds + 1):
            for info, settings, code_dir, build_failure in plan:
                if announce is not None:
                    announce(k, rounds, info)
                result = _one_round(cfg, info, settings, code_dir, build_failure)
                if info.sha == WORKTREE:
                    worktree_rounds = result if worktree_rounds is None else merge_results(worktree_rounds, result)
                    result = worktree_rounds
                store.save(result)
        return {info.sha: store.load(cfg.machine_name, cfg.env, info.sha) for info, *_ in plan}


def _one_round(cfg: Config, info: CommitInfo, settings: Settings, code_dir: Path, build_failure) -> CommitResult:
    started = time.time()
    got = runner._Collector()  # noqa: SLF001 - measure_commit's own result type
    if build_failure is not None:
        got.failures.append(build_failure)
    else:
        suite_dir, shown_root = _suite(cfg, code_dir, settings)
        runner.measure_commit(
            cfg,
            code_dir=code_dir,
            suite_dir=suite_dir,
            shown_root=shown_root,
            info=info,
            settings=settings,
            progress=runner.NoProgress(),
            collector=got,
        )
    return CommitResult(
        commit=info,
        machine=cfg.machine_name,
        env=cfg.env,
        fingerprint=got.fingerprint or Fingerprint(machine=cfg.machine_name),
        settings=settings,
        results=tuple(got.results.values()),
        failures=tuple(got.failures),
        complete=True,
        started_at=started,
        finished_at=time.time(),
    )


# Never take more than this many rounds in one `compare --measure`.
MAX_ROUNDS = 40


def plan_more(verdicts, *, rounds: int | None = None) -> tuple[int, list]:
    """How many more rounds `compare --measure` takes, and of which benchmarks.

    Without `rounds`: the noisy benchmarks that more rounds can help, up to
    the rounds their verdicts ask for (at least RECOMMENDED_ROUNDS per side). With it: every benchmark
    measured at both commits, up to `rounds` per side.
    """
    from .stats import RECOMMENDED_ROUNDS

    comparable = [v for v in verdicts if v.base_rounds and v.head_rounds]
    if rounds is None:
        chosen = [v for v in comparable if v.verdict == "noisy" and v.rounds_needed]
        target = max([RECOMMENDED_ROUNDS, *(v.rounds_needed or 0 for v in chosen)])
    else:
        chosen, target = comparable, rounds
    if not chosen:
        return 0, []
    have = min(min(v.base_rounds, v.head_rounds) for v in chosen)
    return max(0, min(target, MAX_ROUNDS) - have), chosen


def exact_filter(ids) -> str:
    """A --bench regex that matches exactly these benchmark identities."""
    import re

    return "^(?:" + "|".join(re.escape(str(i)) for i in ids) + ")$"
