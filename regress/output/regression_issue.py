"""The issue regress opens when a commit on the default branch made benchmarks slower,
and the comment it adds when later results show more of that commit's damage.

Levels and changes are written as `regress regressions` writes them; the
bisect command is `regress bisect`'s, the operator rows `regress explain`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from regress.analysis.changepoints import Culprit, Step
from regress.analysis.explanation import Explanation
from regress.core.records import BenchmarkId, CommitInfo
from regress.core.units import fmt_time
from regress.output.bisect_hint import bisect_command
from regress.output.explain import markdown_rows
from regress.output.verdicts import md_cell, pct

ChartUrl = Callable[[BenchmarkId], str]


@dataclass(frozen=True)
class Context:
    """What the issue and each later comment say beside the benchmarks' table."""

    found_at: CommitInfo  # the commit whose results confirmed the steps
    gap: int = 0  # commits between the culprit and the measured one before it, not measured
    operators: tuple[Explanation, ...] = ()  # stored `regress explain` diffs of the culprit
    chart_url: ChartUrl | None = None
    run_url: str = ""  # the CI run that found them


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def title(c: Culprit) -> str:
    subject = c.commit.subject if len(c.commit.subject) <= 80 else c.commit.subject[:79] + "…"
    return (
        f"Performance regression in {c.commit.short}: {subject} "
        f"({_plural(len(c.steps), 'benchmark')} slower, worst {pct(c.worst)})"
    )


def _table(steps: tuple[Step, ...] | list[Step], chart_url: ChartUrl | None) -> list[str]:
    out = ["| benchmark | threads | before | after | change | chart |", "|---|---:|---:|---:|---:|---|"]
    for s in steps:
        name = md_cell(" / ".join(p for p in (s.id.label, s.id.sub_label, s.id.description) if p))
        slide = f" (over {s.span} commits)" if s.span > 1 else ""
        chart = f"[chart]({chart_url(s.id)})" if chart_url is not None else ""
        out.append(
            f"| {name} | {s.id.num_threads} | {fmt_time(s.before)} | {fmt_time(s.after)} | "
            f"{pct(s.ratio)}{slide} | {chart} |"
        )
    return out


def _details(c: Culprit, steps, ctx: Context) -> list[str]:
    out = _table(steps, ctx.chart_url) + [""]
    gap = ctx.gap
    if gap and c.previous is not None:
        out += [
            f"Between `{c.previous.short}` and `{c.commit.short}`, {_plural(gap, 'commit')} "
            f"{'was' if gap == 1 else 'were'} not measured, so the slowdown may come from any of them. "
            "Find the first slow one with:",
            "",
            "```sh",
            bisect_command(c.previous, c.commit, [s.id for s in steps]),
            "```",
            "",
        ]
    wanted = {s.id for s in steps}
    shown = [e for e in ctx.operators if e.id in wanted]
    if shown:
        out += ["#### Operators behind the slowdown (torch.profiler, self CPU time per call)", ""]
        for e in shown:
            out += [f"**{md_cell(str(e.id))}**", ""] + markdown_rows(e)
    return out


def _footer(ctx: Context) -> str:
    run = f" ([the run]({ctx.run_url}))" if ctx.run_url else ""
    return (
        f"_Found by `regress regressions` once {ctx.found_at.short} was measured{run}. "
        "Closing this issue is respected: regress does not reopen it or comment on it again._"
    )


def body(c: Culprit, ctx: Context, *, machine: str, env: str) -> str:
    who = md_cell(c.commit.author)
    since = f", against `{c.previous.short}` before it" if c.previous is not None else ""
    out = [
        f"**regress: {c.commit.sha} made {_plural(len(c.steps), 'benchmark')} slower (worst {pct(c.worst)})**",
        "",
        f"{md_cell(c.commit.subject)} ({who}), measured on `{md_cell(machine)}`, env `{md_cell(env)}`{since}.",
        "",
    ]
    out += _details(c, c.steps, ctx)
    out.append(_footer(ctx))
    return "\n".join(out)


def comment(c: Culprit, steps: list[Step], ctx: Context) -> str:
    worst = max(s.ratio for s in steps)
    out = [
        f"**regress: {_plural(len(steps), 'more benchmark')} slower since {c.commit.short} (worst {pct(worst)})**",
        "",
    ]
    out += _details(c, steps, ctx)
    out.append(_footer(ctx))
    return "\n".join(out)
