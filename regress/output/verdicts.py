"""How verdicts and steps look: a terminal table, a GitHub-flavoured Markdown table, stable JSON.

Tables are grouped the way torch's Compare groups them (label, then thread
count). The JSON shapes are a contract for scripts: fields are only ever
added, and `version` goes up if one has to change.
"""

from __future__ import annotations

import html
import json
import math
from collections import Counter
from itertools import groupby
from typing import TYPE_CHECKING

from regress.analysis.diff import Verdict
from regress.core.kinds import Kind, Metric
from regress.core.metric_specs import spec
from regress.core.records import CommitInfo
from regress.core.units import fmt_time
from regress.core.units import percent as pct
from regress.output import slides
from regress.output.bisect_hint import bisect_hint
from regress.output.cells import markdown_cells
from regress.output.cells import name as _name
from regress.output.cells import spread as _spread

if TYPE_CHECKING:  # `compare` renders no steps: changepoints (scipy.sparse, scipy.ndimage) is not imported for it
    from regress.analysis.changepoints import Step

JSON_VERSION = 1


def _shown(metric, counts: bool):
    """The spec of the metric a table shows: `metric`, else instruction counts or wall time."""
    return spec(metric or (Metric.INSTRUCTIONS if counts else Metric.TIME))


def _threads(n: int) -> str:
    return f"{n} thread" + ("" if n == 1 else "s")


def summary(verdicts: list[Verdict]) -> str:
    counts = Counter(v.verdict for v in verdicts)
    return ", ".join(f"{counts[k]} {k}" for k in Kind if counts[k]) or "no benchmarks"


def _commit_line(role: str, info: CommitInfo | None) -> str:
    if info is None:
        return f"{role}: not measured"
    return f"{role}: {info.short} {info.subject}"


# -- text ------------------------------------------------------------------


def text(
    verdicts: list[Verdict],
    *,
    base: CommitInfo | None,
    head: CommitInfo | None,
    threshold: float,
    color: bool = False,
    counts: bool = False,
    metric=None,
) -> str:
    shown = _shown(metric, counts)
    fmt = shown.fmt
    lines = [_commit_line("base", base), _commit_line("head", head), ""]
    paint = {"regression": "31", "improvement": "32", "noisy": "33", "failed": "31;1"}
    for label, group in groupby(verdicts, key=lambda v: v.id.label):
        rows = list(group)
        names = [_name(v) for v in rows]
        width = max(len(n) for n in names + ["benchmark"])
        bar = f" {label} "
        lines.append(f"[{bar:-^{max(width + 66, len(bar) + 10)}}]")
        for threads, sub in groupby(rows, key=lambda v: v.id.num_threads):
            lines.append(
                f"{_threads(threads):<{width + 2}}{'base':>12} {'':>7} {'head':>12} {'':>7} {'change':>8}  verdict"
            )
            for v in sub:
                verdict = f"\x1b[{paint[v.verdict]}m{v.verdict}\x1b[0m" if color and v.verdict in paint else v.verdict
                change = pct(v.ratio) if v.ratio is not None else ""
                lines.append(
                    f"  {_name(v):<{width}}{fmt(v.base_level):>12} {_spread(v.base_level, v.base_iqr):>7} "
                    f"{fmt(v.head_level):>12} {_spread(v.head_level, v.head_iqr):>7} {change:>8}  {verdict}"
                )
        lines.append("")
    notes = [v for v in verdicts if v.verdict not in ("unchanged",)]
    if notes:
        lines.append("why:")
        lines.extend(f"  {v.id}: {v.verdict}: {v.reason}" for v in notes)
        lines.append("")
    lines.append(f"{summary(verdicts)} (threshold {threshold * 100:g}%; {shown.footnote})")
    return "\n".join(lines)


# -- markdown ----------------------------------------------------------------


def md_cell(text: str) -> str:
    """A Markdown table cell (every renderer's): no HTML, no pipes, no newlines from benchmark or commit names."""
    return html.escape(text, quote=False).replace("|", "\\|").replace("\n", " ").replace("`", "'")


def markdown(
    verdicts: list[Verdict],
    *,
    base: CommitInfo | None,
    head: CommitInfo | None,
    threshold: float,
    counts: bool = False,
    metric=None,
) -> str:
    shown = _shown(metric, counts)
    fmt = shown.fmt

    def commit(info: CommitInfo | None) -> str:
        return "not measured" if info is None else f"`{info.short}` {md_cell(info.subject)}"

    out = [
        f"### regress: {md_cell(summary(verdicts))}",
        "",
        f"base {commit(base)} → head {commit(head)}; threshold {threshold * 100:g}%",
        "",
    ]
    for label, group in groupby(verdicts, key=lambda v: v.id.label):
        out += [
            f"#### {md_cell(label)}",
            "",
            "| benchmark | threads | base | head | change | verdict |",
            "|---|---:|---:|---:|---:|---|",
        ]
        for v in group:
            base_cell, head_cell, change, verdict = markdown_cells(v, fmt)
            out.append(
                f"| {md_cell(_name(v))} | {v.id.num_threads} | {base_cell} | {head_cell} | {change} | {verdict} |"
            )
        out.append("")
    notes = [v for v in verdicts if v.verdict != Kind.UNCHANGED]
    if notes:
        out += ["<details><summary>Why</summary>", ""]
        out += [f"- **{md_cell(str(v.id))}**: {v.verdict}: {md_cell(v.reason)}" for v in notes]
        out += ["", "</details>", ""]
    if shown.metric in (Metric.TIME, Metric.INSTRUCTIONS):
        out.append(f"_{shown.footnote[0].upper()}{shown.footnote[1:]}._")
    else:
        out.append(f"_{shown.metric}: {shown.footnote}._")
    return "\n".join(out)


# -- json ------------------------------------------------------------------


def commit_json(info: CommitInfo | None) -> dict | None:
    """A commit in the JSON outputs (compare, regressions, explain, bisect)."""
    if info is None:
        return None
    return {
        "sha": info.sha,
        "short": info.short,
        "subject": info.subject,
        "author": info.author,
        "committed_at": info.committed_at,
    }


def verdict_json(v: Verdict) -> dict:
    return {
        "id": str(v.id),
        "label": v.id.label,
        "sub_label": v.id.sub_label,
        "description": v.id.description,
        "num_threads": v.id.num_threads,
        "verdict": v.verdict,
        "base": v.base_level,
        "head": v.head_level,
        "base_iqr": v.base_iqr,
        "head_iqr": v.head_iqr,
        "ratio": v.ratio,
        "ci_low": v.ci_low,
        "ci_high": v.ci_high,
        "p_value": v.p_value,
        "base_rounds": v.base_rounds,
        "head_rounds": v.head_rounds,
        "reason": v.reason,
        # The smallest change this comparison could catch (0.031 is 3.1%), and the rounds a side that catch a
        # change of the threshold (its own where it already can; null where no number of rounds can).
        "detectable": v.detectable,
        "detect_rounds": v.detect_rounds,
    }


def compare_json(
    verdicts: list[Verdict],
    *,
    base: CommitInfo | None,
    head: CommitInfo | None,
    threshold: float,
    machine: str,
    env: str,
    mode: str = "time",
    base_env: str | None = None,
) -> str:
    counts = Counter(v.verdict for v in verdicts)
    doc = {
        "format": "regress-compare",
        "version": JSON_VERSION,
        "machine": machine,
        "env": env,
        "base_env": base_env or env,
        "mode": mode,
        "unit": spec(Metric(mode)).unit,
        "threshold": threshold,
        "base": commit_json(base),
        "head": commit_json(head),
        "summary": {k.value: counts[k] for k in Kind},
        "verdicts": [verdict_json(v) for v in verdicts],
    }
    return json.dumps(doc, indent=2, allow_nan=False)


# -- steps -------------------------------------------------------------------


def steps_text(
    steps: list[Step],
    commits: dict[str, CommitInfo],
    *,
    threshold: float,
    n_commits: int,
    fmt=fmt_time,
    gaps: dict[str, tuple] | None = None,
) -> str:
    """Steps grouped by the commit they start at, newest commit first. `gaps`: by step commit, the measured
    commit before it, how many commits between were not measured, and the paths they were counted by, if any."""
    if not steps:
        return f"no steps beyond {threshold * 100:g}% in {n_commits} measured commits"
    lines = []
    ordered = sorted(steps, key=lambda s: (-s.index, s.direction != "regression", -abs(s.ratio - 1), s.id))
    for _, grouped in groupby(ordered, key=lambda s: s.index):
        group = list(grouped)
        c = commits[group[0].sha]
        lines.append(f"{c.short} {c.subject}")
        for s in group:
            lines.append(slides.line(s, commits, fmt))
            lines += bisect_hint(s, (gaps or {}).get(s.sha), commits)
    n_reg = sum(s.direction == "regression" for s in steps)
    lines.append("")
    lines.append(
        f"{n_reg} regression(s), {len(steps) - n_reg} improvement(s) in {n_commits} measured commits "
        f"(threshold {threshold * 100:g}%; newest first)"
    )
    return "\n".join(lines)


def steps_json(
    steps: list[Step],
    commits: dict[str, CommitInfo],
    *,
    threshold: float,
    machine: str,
    env: str,
    n_commits: int,
    detectable: list[dict] | None = None,
    detectable_at: CommitInfo | None = None,
) -> str:
    """`detectable`: what each benchmark can detect at `detectable_at`, the newest measured commit
    (`detects.seen_json`'s)."""
    doc = {
        "format": "regress-regressions",
        "version": JSON_VERSION,
        "machine": machine,
        "env": env,
        "threshold": threshold,
        "commits": n_commits,
        "steps": [
            {
                "id": str(s.id),
                "label": s.id.label,
                "sub_label": s.id.sub_label,
                "description": s.id.description,
                "num_threads": s.id.num_threads,
                "commit": commit_json(commits[s.sha]),
                "index": s.index,
                "before": s.before,
                "after": s.after,
                "ratio": s.ratio if math.isfinite(s.ratio) else None,  # a count from 0
                "direction": s.direction,
                "p_value": s.p_value,
                "span": s.span,
                "end_sha": s.end_sha,
                "total_ratio": s.total,  # a slide's whole move (None for a clean step)
            }
            for s in steps
        ],
    }
    if detectable is not None:
        doc["detectable_commit"] = commit_json(detectable_at)
        doc["detectable"] = detectable
    return json.dumps(doc, indent=2, allow_nan=False)
