"""`regress explain`: why a benchmark changed, operator by operator.

Selects the benchmarks to explain (those `compare` calls a regression or an
improvement, or those `--bench` names), profiles each at both commits in
fresh workers in worktrees built as for measuring, keeps the op tables and
traces beside the results, and diffs them (`analysis.explanation`).
"""

from __future__ import annotations

from regress.analysis.diff import Verdict
from regress.analysis.explanation import Explained, Explanation, diff
from regress.core.config import Config
from regress.core.errors import RegressError
from regress.core.kinds import CHANGES
from regress.core.records import WORKTREE
from regress.flows import comparison, runner
from regress.flows.rounds import exact_filter
from regress.measure import engine
from regress.measure.profile_commit import profile_target
from regress.measure.worker_process import close_servers
from regress.storage import gitrepo
from regress.storage.session import Session
from regress.storage.store import Store, save_profile


def _verdicts(cfg: Config, base: str, head: str) -> list[Verdict]:
    """compare's verdicts from what is stored; none when a side was never measured."""
    sides = comparison.Sides(base, head, cfg.env, cfg.env)
    with Session(cfg) as session:
        store = session.store
        b, h = store.load(cfg.machine_name, cfg.env, base), store.load(cfg.machine_name, cfg.env, head)
        if b is None or h is None:
            return []
        return comparison.judge(session, sides, b, h, threshold=cfg.threshold)


def explain(cfg: Config, base: str, head: str, *, bench: str = "", ids: list | None = None) -> Explained:
    """Profile and diff the chosen benchmarks of `base` and `head` (full shas)."""
    repo = gitrepo.open_repo(cfg.root)
    if WORKTREE in (base, head):
        raise RegressError(f"explain profiles commits, not the {WORKTREE}; commit first, or name two commits")
    info = {sha: gitrepo.commit_info(repo, sha) for sha in (base, head)}
    verdicts = {v.id: v for v in _verdicts(cfg, base, head)}
    if ids is None and not bench:
        ids = [i for i, v in verdicts.items() if v.verdict in CHANGES]
        if not ids:
            why = (
                "no stored verdict is a regression or improvement"
                if verdicts
                else f"neither is measured; run `regress compare {base[:10]} {head[:10]} --measure` first"
            )
            return Explained(
                info[base], info[head], note=f"nothing to explain: {why}; or name benchmarks with --bench REGEX"
            )
    wanted = exact_filter(ids) if ids is not None else bench
    settings = runner.settings_for(cfg, runner.Options(bench=wanted))
    got, problems = {}, []
    try:
        with (
            Store(cfg.results_dir).lock(),
            engine.checked_out(cfg, repo, [base, head], lambda sha: settings, {}) as targets,
        ):
            for t in targets:
                found, trouble = profile_target(cfg, t, wanted)
                got[t.info.sha] = found
                problems += [f"{t.info.short}: {p}" for p in trouble]
    finally:
        close_servers()
    items = []
    for bid in sorted(set(got[base]) | set(got[head])):
        kept = {}
        failures = []
        for sha in (base, head):
            p = got[sha].get(bid)
            if p is None:
                failures.append(f"not in the suite at {sha[:10]}")
            elif p.table is None:
                failures.append(f"at {sha[:10]}: {p.failure}")
            else:
                kept[sha] = save_profile(cfg.results_dir, cfg.machine_name, cfg.env, sha, bid, p.table, p.trace)
        d = diff(kept[base].table, kept[head].table) if len(kept) == 2 else None
        traces = [kept[sha].trace if sha in kept else None for sha in (base, head)]
        items.append(Explanation(bid, verdicts.get(bid), d, traces[0], traces[1], "; ".join(failures)))
    note = "" if items else f"no benchmark matches {wanted!r} at either commit"
    return Explained(info[base], info[head], items, problems, note)
