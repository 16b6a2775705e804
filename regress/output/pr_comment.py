"""The sticky pull-request comment's Markdown: the outcome in words on the first
line, the changed benchmarks with levels, ratio, interval and reason, the
operator rows, the rest folded in a <details>; and the cut that keeps a body
within GitHub's size limit.

Cells come from `verdicts` (the job summary's renderer), so the comment and
the summary never disagree on how a level or a verdict is written.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from regress.analysis.diff import Verdict
from regress.core.kinds import Kind
from regress.core.records import BenchmarkId, CommitInfo
from regress.output import cells, detects
from regress.output import verdicts as render

# GitHub refuses a comment (or an issue body) longer than this many characters.
COMMENT_LIMIT = 65536
CHANGED = (Kind.REGRESSION, Kind.FAILED, Kind.IMPROVEMENT)
CUT = (
    "> [!WARNING]\n> Cut here: GitHub takes at most 65,536 characters in a comment. The run's job summary "
    "has the whole comparison, and `regress compare BASE HEAD` prints it too."
)

ChartUrl = Callable[[BenchmarkId], str]
# Where a verdict's figure is shown: what changed or could not be told (an unchanged row needs none).
SHOWS_FIGURE = (*CHANGED, Kind.NOISY)
# The benchmarks out of reach of the threshold named at most (the rest counted): the section stays short.
OUT_OF_REACH_NAMED = 30


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def headline(verdicts: list[Verdict], metrics: tuple = ()) -> str:
    """'2 benchmarks slower (worst +12.4%), 1 faster, 40 unchanged, 3 noisy', or 'no significant change (...)'."""
    counts = Counter(v.verdict for v in verdicts)
    ratios = {
        k: [v.ratio for v in verdicts if v.verdict == k and v.ratio is not None]
        for k in (Kind.REGRESSION, Kind.IMPROVEMENT)
    }
    parts = []
    if counts[Kind.REGRESSION]:
        worst = f" (worst {render.pct(max(ratios[Kind.REGRESSION]))})" if ratios[Kind.REGRESSION] else ""
        parts.append(f"{_plural(counts[Kind.REGRESSION], 'benchmark')} slower{worst}")
    if counts[Kind.IMPROVEMENT]:
        best = f" (best {render.pct(min(ratios[Kind.IMPROVEMENT]))})" if ratios[Kind.IMPROVEMENT] else ""
        parts.append(
            f"{counts[Kind.IMPROVEMENT]} faster"
            if parts
            else f"{_plural(counts[Kind.IMPROVEMENT], 'benchmark')} faster{best}"
        )
    if counts[Kind.FAILED]:
        parts.append(f"{counts[Kind.FAILED]} failed")
    for metric, vs, _ in metrics:
        n = sum(v.verdict == Kind.REGRESSION for v in vs)
        if n:
            parts.append(f"{metric}: {_plural(n, 'regression')}")
    rest = [f"{counts[k]} {k}" for k in (Kind.UNCHANGED, Kind.NOISY, Kind.NEW, Kind.MISSING) if counts[k]]
    if not parts:
        return "no significant change" + (f" ({', '.join(rest)})" if rest else "")
    return ", ".join(parts + rest)


def _bench_cell(v: Verdict, chart_url: ChartUrl | None) -> str:
    text = render.md_cell(" / ".join(p for p in (v.id.label, cells.name(v)) if p))
    return f"[{text}]({chart_url(v.id)})" if chart_url is not None else text


def _interval(v: Verdict) -> str:
    if v.ci_low is None or v.ci_high is None:
        return ""
    return f"{render.pct(v.ci_low)} … {render.pct(v.ci_high)}"


def table(verdicts: list[Verdict], chart_url: ChartUrl | None = None) -> list[str]:
    """One row a benchmark: levels with their spread, the change, its 95% interval, the verdict, the smallest
    change the comparison could catch (where it changed or was noisy) and why."""
    out = [
        "| benchmark | threads | base | head | change | 95% interval | verdict | detects | why |",
        "|---|---:|---:|---:|---:|---:|---|---:|---|",
    ]
    for v in verdicts:
        base_cell, head_cell, change, verdict = cells.markdown_cells(v)
        reason = render.md_cell(v.reason) if v.verdict != Kind.UNCHANGED else ""
        figure = detects.pct(v.detectable) if v.verdict in SHOWS_FIGURE else ""
        out.append(
            f"| {_bench_cell(v, chart_url)} | {v.id.num_threads} | {base_cell} | {head_cell} | {change} | "
            f"{_interval(v)} | {verdict} | {figure} | {reason} |"
        )
    return out


def out_of_reach(verdicts: list[Verdict], threshold: float, cores: int = 0) -> list[str]:
    """A folded list of the benchmarks whose comparison could not catch a change of the threshold, each with
    what would help ([] when every one could)."""
    short = detects.out_of_reach(verdicts, threshold)
    if not short:
        return []
    t = f"{threshold * 100:g}%"
    out = [f"<details><summary>{_plural(len(short), 'benchmark')} can't catch a {t} change here</summary>", ""]
    for v in short[:OUT_OF_REACH_NAMED]:
        have = min(v.base_rounds, v.head_rounds)
        out.append(
            f"- **{render.md_cell(str(v.id))}**: detects {detects.pct(v.detectable)} at {have} rounds a side; "
            f"{detects.advice(v, threshold, cores)}"
        )
    if len(short) > OUT_OF_REACH_NAMED:
        out.append(f"- and {len(short) - OUT_OF_REACH_NAMED} more: `regress compare BASE HEAD` names them all")
    return out + ["", "</details>", ""]


def body(
    verdicts: list[Verdict],
    *,
    base: CommitInfo,
    head: CommitInfo,
    threshold: float,
    metrics: tuple = (),  # (metric, verdicts, threshold) beyond wall time, as the check judged them
    operators: str = "",  # the check's operator rows under the regressions (Markdown)
    note: str = "",  # the check's outcome: fails, or accepted by the label
    chart_url: ChartUrl | None = None,
    run_url: str = "",
    cores: int = 0,  # the machine's, for what would help a benchmark that uses every core
) -> str:
    def commit(info: CommitInfo) -> str:
        return f"`{info.short}` {render.md_cell(info.subject)}"

    run = f" · [the run]({run_url})" if run_url else ""
    out = [
        f"**regress: {render.md_cell(headline(verdicts, metrics))}**",
        "",
        f"base {commit(base)} → head {commit(head)}; threshold {threshold * 100:g}%{run}",
        "",
    ]
    if note.strip():
        out += [note.strip(), ""]
    changed = [v for v in verdicts if v.verdict in CHANGED]
    if changed:
        out += table(changed, chart_url) + [""]
    if operators.strip():
        out += [operators.strip(), ""]
    for metric, vs, limit in metrics:
        if any(v.verdict in CHANGED for v in vs):
            out += [f"#### {metric}", "", render.markdown(vs, base=base, head=head, threshold=limit, metric=metric), ""]
    out += out_of_reach(verdicts, threshold, cores)
    rest = [v for v in verdicts if v.verdict not in CHANGED]
    if rest:
        out += [f"<details><summary>{render.md_cell(render.summary(rest))}</summary>", ""]
        out += table(rest, chart_url) + ["", "</details>", ""]
    out.append(
        "_Times are each commit's fastest round (a round = one fresh process); ± is half the IQR of the rounds; "
        "the interval is the change's 95% confidence interval; detects: the smallest change the comparison could "
        "catch at its rounds._"
    )
    return "\n".join(out)


def size(text: str) -> int:
    """Characters as GitHub may count them: UTF-16 units, never fewer than Python's code points."""
    return len(text.encode("utf-16-le")) // 2


def fit(text: str, *, tail: str = "", limit: int = COMMENT_LIMIT, cut: str = CUT) -> str:
    """`text` and `tail` (the hidden marker) within `limit`: cut at a line, any open
    <details> closed, and a note saying where the rest is."""
    whole = text.rstrip("\n") + (f"\n\n{tail}" if tail else "")
    if size(whole) <= limit:
        return whole
    ending = f"\n\n{cut}\n" + (f"\n{tail}" if tail else "")
    room = limit - size(ending) - size("\n\n</details>")
    kept: list[str] = []
    used = 0
    for line in text.splitlines():
        if used + size(line) + 1 > room:
            break
        kept.append(line)
        used += size(line) + 1
    opened = sum(x.startswith("<details") for x in kept) - sum(x.startswith("</details>") for x in kept)
    return "\n".join(kept).rstrip("\n") + ("\n\n</details>" if opened > 0 else "") + ending
