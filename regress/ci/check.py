"""The pull-request check: the merge base and the head measured in turn, the
comparison for the job summary, and whether the check fails."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from regress.core.config import Config
from regress.core.errors import RegressError
from regress.core.kinds import Kind
from regress.core.records import CommitInfo
from regress.core.reporter import QUIET, Reporter
from regress.flows import comparison, top_up
from regress.output import verdicts as render
from regress.storage import gitrepo
from regress.storage.session import Session

OK_LABEL = "perf-regression-ok"
# GitHub refuses a step summary over 1 MiB.
SUMMARY_LIMIT = 1_000_000


@dataclass(frozen=True)
class Checked:
    """A pull request's comparison, and whether it fails the check."""

    base: CommitInfo  # the merge base
    head: CommitInfo
    markdown: str
    regressions: int
    accepted_by: str | None  # the label that lets a regression through
    # The parts the pull-request comment is built from (`pr_comment`).
    verdicts: tuple = ()
    threshold: float = 0.0
    metrics: tuple = ()  # (metric, verdicts, threshold) beyond wall time
    note: str = ""  # the outcome: fails, or accepted by the label
    operators: str = ""  # the operator rows under the regressions
    cores: int = 0  # the machine's: what would help a benchmark that uses every core

    @property
    def fails(self) -> bool:
        return self.regressions > 0 and self.accepted_by is None


def event_labels(path: str | None) -> set[str]:
    """The pull request's labels, from the event payload GitHub writes ($GITHUB_EVENT_PATH)."""
    if not path:
        return set()
    try:
        event = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RegressError(
            f"cannot read the GitHub event payload {path} ({exc}); unset GITHUB_EVENT_PATH outside GitHub Actions"
        ) from None
    labels = (event.get("pull_request") or {}).get("labels") or []
    return {str(label.get("name", "")) for label in labels if isinstance(label, dict)}


def check(
    cfg: Config,
    base_rev: str,
    head_rev: str = "HEAD",
    *,
    rounds: int | None = None,
    threshold: float | None = None,
    ok_label: str = OK_LABEL,
    labels: set[str] = frozenset(),  # type: ignore[assignment]
    reporter: Reporter = QUIET,
    explain: bool = True,
) -> Checked:
    """Measure the merge base of `base_rev` and `head_rev` and the head in turn, and judge.

    The merge base, not `base_rev` itself: a pull request is judged by its own
    changes, not by what its base branch gained since. Both sides are measured
    on this machine in one go by the round engine, interleaved, so drift over
    the job hits both alike; the verdicts are `regress compare`'s.
    """
    with Session(cfg) as session:
        repo = session.repo
        head = gitrepo.resolve_one(repo, head_rev, what="check", worktree=False)
        base = gitrepo.merge_base(repo, gitrepo.resolve_one(repo, base_rev, what="check", worktree=False), head)
        if base == head:
            raise RegressError(f"{head_rev} ({head[:10]}) is already part of {base_rev}: no changes to check")
        sides = comparison.Sides(base, head, cfg.env, cfg.env, base_rev, head_rev)
        got = top_up.measured_in_turn(session, sides, reporter, rounds_each=rounds, threshold=threshold)
        metrics = tuple(comparison.beyond_time(session, sides))
    n = sum(v.verdict == Kind.REGRESSION for v in got.verdicts)
    md = render.markdown(got.verdicts, base=got.base, head=got.head, threshold=got.threshold)
    for metric, verdicts, limit in metrics:  # memory and dynamo's counts
        n += sum(v.verdict == Kind.REGRESSION for v in verdicts)
        md += f"\n\n#### {metric}\n\n" + render.markdown(
            verdicts, base=got.base, head=got.head, threshold=limit, metric=metric
        )
    accepted = ok_label if n and ok_label in labels else None
    shown = base_rev[:10] if re.fullmatch(r"[0-9a-f]{40}", base_rev) else base_rev
    md += (
        f"\n\n_Base `{got.base.short}` is where the head branched off `{shown}`; "
        f"both measured in turn on {cfg.machine_name}._\n"
    )
    slowdowns = f"{n} significant slowdown{'s' if n != 1 else ''}"
    note = ""
    if accepted:
        note = f"> [!NOTE]\n> {slowdowns}, accepted by the `{ok_label}` label.\n"
    elif n:
        note = (
            f"> [!CAUTION]\n> {slowdowns}: this check fails. "
            f"If the slowdown is intended, add the `{ok_label}` label to the pull request.\n"
        )
    md += f"\n{note}" if note else ""
    ops = ""
    if explain and n:
        ops = operator_rows(cfg, base, head, [v for v in got.verdicts if v.verdict == Kind.REGRESSION])
    md += ops
    return Checked(
        got.base, got.head, md, n, accepted, tuple(got.verdicts), got.threshold, metrics, note, ops, got.cores
    )


# The job summary explains at most this many regressions, with this many operators each.
EXPLAINED = 5
TOP_OPS = 5


def operator_rows(cfg: Config, base: str, head: str, regressions: list) -> str:
    """Under the verdicts: each regression's top operators (`regress explain`), or why they are missing."""
    from regress.flows import explain
    from regress.output import explain as explain_render

    chosen = regressions[:EXPLAINED]
    try:
        got = explain.explain(cfg, base, head, ids=[v.id for v in chosen])
    except RegressError as exc:
        return f"\n_Operators not profiled: {render.md_cell(str(exc))}_\n"
    verdicts = {v.id: v for v in chosen}
    out = ["", "#### Operators behind each regression (torch.profiler, self CPU time per call)", ""]
    for e in got.items:
        v = verdicts.get(e.id)
        change = f" {render.pct(v.ratio)}" if v is not None and v.ratio is not None else ""
        out += [f"**{render.md_cell(str(e.id))}**{change}", ""] + explain_render.markdown_rows(e, top=TOP_OPS)
    if len(regressions) > EXPLAINED:
        out.append(
            f"_{len(regressions) - EXPLAINED} more regressions: `regress explain {base[:10]} {head[:10]}` lists them all._"
        )
    out.append(f"_Traces: `regress explain {base[:10]} {head[:10]}` prints where they are kept._")
    return "\n".join(out) + "\n"


def write_summary(path: str, markdown: str) -> None:
    """Append to the job summary file, as every step does ($GITHUB_STEP_SUMMARY)."""
    data = markdown.encode("utf-8")
    if len(data) > SUMMARY_LIMIT:
        note = b"\n\n_(cut here: GitHub takes at most 1 MiB; `regress compare` prints it all)_\n"
        data = data[: SUMMARY_LIMIT - len(note)].decode("utf-8", "ignore").encode() + note
    try:
        with open(path, "ab") as fh:
            fh.write(data + b"\n")
    except OSError as exc:
        raise RegressError(
            f"cannot write the job summary {path}: {exc.strerror}; check --summary or GITHUB_STEP_SUMMARY"
        ) from None


def summary_path(flag: str | None) -> str | None:
    return flag or os.environ.get("GITHUB_STEP_SUMMARY") or None
