"""An issue for each commit on the default branch that made benchmarks slower (`regress notify`).

After a push's results are saved, the regressions those results newly
confirm (`changepoints.newly_found`) are grouped by the commit they start at. Each
such commit gets one issue, found again by a hidden marker (machine, env,
full sha) among the issues carrying the label; every issue and comment also
lists, hidden, the benchmarks it reported. So a rerun posts nothing, a later
push that shows more benchmarks slowed by the same commit comments on its
issue, and a closed issue is left closed and silent.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote

from regress.analysis import changepoints
from regress.analysis.changepoints import Culprit
from regress.analysis.explanation import Explanation, diff
from regress.ci.github import GitHub
from regress.core.config import Config
from regress.core.errors import RegressError
from regress.core.records import CommitInfo
from regress.output import regression_issue as render
from regress.output.pr_comment import fit
from regress.storage import gitrepo
from regress.storage.store import Store, profile_pairs

LABEL = "performance-regression"
NEED = "issues: write"
_REPORTED = re.compile(r"<!-- regress:benchmarks ([0-9a-f ]*) -->")


def issue_marker(machine: str, env: str, sha: str) -> str:
    return f"<!-- regress:regression {machine}/{env}/{sha} -->"


def bench_key(bid) -> str:
    return hashlib.sha1(str(bid).encode()).hexdigest()[:12]


def bench_marker(steps) -> str:
    return f"<!-- regress:benchmarks {' '.join(sorted(bench_key(s.id) for s in steps))} -->"


def reported(text: str) -> set[str]:
    return {k for m in _REPORTED.findall(text or "") for k in m.split()}


@dataclass(frozen=True)
class Filed:
    sha: str
    action: str  # "opened" | "commented" | "known" (nothing new) | "closed" (left alone)
    number: int = 0
    url: str = ""
    benchmarks: int = 0


@dataclass(frozen=True)
class Found:
    """What the saved history newly shows, with what each culprit's issue tells besides the steps."""

    at: CommitInfo
    culprits: list[Culprit]
    gaps: dict[str, int]  # by culprit sha: commits between it and the measured one before, not measured
    operators: dict[str, list]  # by culprit sha: stored operator diffs (`regress explain`), where kept


def find(cfg: Config, rev: str, *, threshold: float | None = None, store: Store | None = None) -> Found:
    """The culprits of regressions newly found once `rev`'s results are in the history."""
    repo = gitrepo.open_repo(cfg.root)
    sha = gitrepo.resolve_one(repo, rev, what="notify", worktree=False)
    history = (store or Store(cfg.results_dir)).history(cfg.machine_name, cfg.env)
    steps = changepoints.newly_found(history, sha, threshold=cfg.threshold if threshold is None else threshold)
    culprits = changepoints.by_culprit(steps, history)
    gaps, operators = {}, {}
    for c in culprits:
        if c.previous is None:
            continue
        try:
            gaps[c.commit.sha] = gitrepo.count_between(repo, c.previous.sha, c.commit.sha) or 0
        except Exception:  # noqa: BLE001 - a shallow clone or a commit git no longer has: nothing to count
            gaps[c.commit.sha] = 0
        kept = profile_pairs(cfg.results_dir, cfg.machine_name, cfg.env, c.previous.sha, c.commit.sha)
        operators[c.commit.sha] = [
            Explanation(i, None, diff(b.table, h.table), b.trace, h.trace) for i, (b, h) in kept.items()
        ]
    at = next(c.commit for c in history if c.commit.sha == sha)
    return Found(at, culprits, gaps, operators)


def ensure_label(gh: GitHub, label: str) -> None:
    repo = gh.target.repo_path
    what = f"read the label {label!r}"
    if (
        gh.call(
            "GET", f"{repo}/labels/{quote(label, safe='')}", what=what, need="issues: read", allow=(404,)
        ).status_code
        == 404
    ):
        gh.post(
            f"{repo}/labels",
            {"name": label, "color": "d93f0b", "description": "A commit made benchmarks slower (regress)"},
            what=f"create the label {label!r}",
            need=NEED,
        )


def file_issues(
    gh: GitHub,
    found: Found,
    *,
    machine: str,
    env: str,
    label: str = LABEL,
    chart_url: Callable | None = None,
    run_url: str = "",
) -> list[Filed]:
    """Open or comment on one issue per culprit; never a second issue for a commit, never on a closed one."""
    if not found.culprits:
        return []
    repo = gh.target.repo_path
    if not re.fullmatch(r"[^,\s][^,]{0,49}", label):
        raise RegressError(f"{label!r} is not a label name (1 to 50 characters, no comma); fix --label")
    ensure_label(gh, label)
    listed = gh.paged(
        f"{repo}/issues",
        what=f"list the issues labelled {label!r}",
        need="issues: read",
        params={"state": "all", "labels": label},
    )
    issues = sorted((i for i in listed if "pull_request" not in i), key=lambda i: i["number"])
    out = []
    for c in found.culprits:
        mark = issue_marker(machine, env, c.commit.sha)
        ctx = render.Context(
            found.at, found.gaps.get(c.commit.sha, 0), tuple(found.operators.get(c.commit.sha, ())), chart_url, run_url
        )
        mine = [i for i in issues if mark in str(i.get("body") or "").splitlines()]
        if not mine:
            text = render.body(c, ctx, machine=machine, env=env)
            made = gh.post(
                f"{repo}/issues",
                {
                    "title": render.title(c),
                    "body": fit(text, tail=f"{mark}\n{bench_marker(c.steps)}"),
                    "labels": [label],
                },
                what=f"open an issue for {c.commit.short}",
                need=NEED,
            )
            issues.append(made)
            out.append(Filed(c.commit.sha, "opened", made["number"], str(made.get("html_url", "")), len(c.steps)))
            continue
        issue = mine[0]
        number = issue["number"]
        if issue.get("state") == "closed":
            out.append(Filed(c.commit.sha, "closed", number, str(issue.get("html_url", ""))))
            continue
        thread = gh.paged(
            f"{repo}/issues/{number}/comments", what=f"list the comments of issue #{number}", need="issues: read"
        )
        known = reported(issue.get("body", "")) | {k for t in thread for k in reported(t.get("body", ""))}
        fresh = [s for s in c.steps if bench_key(s.id) not in known]
        if not fresh:
            out.append(Filed(c.commit.sha, "known", number, str(issue.get("html_url", ""))))
            continue
        text = render.comment(c, fresh, ctx)
        made = gh.post(
            f"{repo}/issues/{number}/comments",
            {"body": fit(text, tail=bench_marker(fresh))},
            what=f"comment on issue #{number}",
            need=NEED,
        )
        out.append(Filed(c.commit.sha, "commented", number, str(made.get("html_url", "")), len(fresh)))
    return out
