"""How a bisection's answer looks: text for people, JSON (`first_bad`, `last_good`, `measured`, `verdict`) for scripts."""

from __future__ import annotations

from regress.analysis.explanation import Bisected
from regress.core.units import fmt_time
from regress.core.units import percent as pct
from regress.output.verdicts import commit_json

JSON_VERSION = 1


def _commit(c) -> str:
    return f"{c.sha} {c.subject}\n    author: {c.author} <{c.author_email}>"


def text(b: Bisected) -> str:
    lines = []
    if b.inconclusive:
        lines.append(f"inconclusive: {b.inconclusive}")
        lines += [f"  searched down to: {c.sha} {c.subject} ({c.author})" for c in b.candidates]
    elif b.first_bad is not None:
        lines.append(f"first bad commit: {_commit(b.first_bad)}")
    else:
        lines.append(f"the first bad commit is one of {len(b.candidates)} (the others between could not be measured):")
        lines += [f"  {c.sha} {c.subject} ({c.author})" for c in b.candidates]
    lines.append(f"last good commit: {b.last_good.sha} {b.last_good.subject}")
    against = "its parent" if len(b.candidates) == 1 else f"the last good commit {b.last_good.short}"
    for v in b.verdicts:
        change = pct(v.ratio) if v.ratio is not None else ""
        lines.append(
            f"verdict against {against}: {v.id}: {v.verdict} {change} "
            f"({fmt_time(v.base_level)} -> {fmt_time(v.head_level)})"
        )
    for p in b.skipped:
        lines.append(f"skipped {p.info.short} {p.info.subject}: {p.why}")
    probed = ", ".join(f"{p.info.short} {p.state}" for p in b.probes)
    lines.append(f"measured {b.measured} of {b.commits} commits ({b.direction} searched; probed: {probed})")
    return "\n".join(lines)


def as_json(b: Bisected) -> dict:
    return {
        "format": "regress-bisect",
        "version": JSON_VERSION,
        "good": commit_json(b.good),
        "bad": commit_json(b.bad),
        "first_bad": commit_json(b.first_bad),
        "inconclusive": b.inconclusive or None,
        "candidates": [commit_json(c) for c in b.candidates],
        "last_good": commit_json(b.last_good),
        "direction": str(b.direction),
        "benchmarks": [str(i) for i in b.ids],
        "measured": b.measured,
        "commits": b.commits,
        "verdict": [
            {"id": str(v.id), "verdict": str(v.verdict), "ratio": v.ratio, "base": v.base_level, "head": v.head_level}
            for v in b.verdicts
        ],
        "probes": [
            {"sha": p.info.sha, "state": str(p.state), "why": p.why or None, "measured": p.measured} for p in b.probes
        ],
    }
