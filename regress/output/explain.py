"""How an operator-level explanation looks: terminal text, Markdown (the job summary), JSON.

The JSON shape is a contract for scripts: fields are only ever added.
"""

from __future__ import annotations

import json

from regress.analysis.explanation import Explained, Explanation, OpDiff, OpRow, OpStatus
from regress.output.verdicts import commit_json, md_cell, pct

JSON_VERSION = 1
TOP = 15


def fmt_us(us: float) -> str:
    if abs(us) >= 1000:
        return f"{us / 1000:.3g} ms"
    if abs(us) >= 1:
        return f"{us:.3g} us"
    return f"{us * 1000:.3g} ns"


def _signed(us: float) -> str:
    return ("+" if us > 0 else "-" if us < 0 else "±") + fmt_us(abs(us))


def _calls(n: float) -> str:
    return f"{n:.3g}"


def _share(d: OpDiff, r: OpRow) -> str:
    s = d.share(r)
    return "" if s is None else f"{s * 100:.0f}%"


def _title(e: Explanation) -> str:
    if e.verdict is None or e.verdict.ratio is None:
        return str(e.id)
    return f"{e.id}: {e.verdict.verdict} {pct(e.verdict.ratio)}"


def _status(r: OpRow) -> str:
    return "" if r.status == OpStatus.CHANGED else str(r.status)


def row_cells(d: OpDiff, r: OpRow) -> dict[str, str]:
    """One operator's cells as every table writes them (the site's explain panel too)."""
    return {
        "name": r.name,
        "status": _status(r),
        "base_calls": _calls(r.base_calls),
        "head_calls": _calls(r.head_calls),
        "base": fmt_us(r.base_self_us),
        "head": fmt_us(r.head_self_us),
        "diff": _signed(r.diff_us),
        "share": _share(d, r),
    }


def text(ex: Explained, *, top: int = TOP) -> str:
    lines = [f"base: {ex.base.short} {ex.base.subject}", f"head: {ex.head.short} {ex.head.subject}", ""]
    lines += [f"problem: {p}" for p in ex.problems]
    if ex.note:
        lines.append(ex.note)
    for e in ex.items:
        lines.append(_title(e))
        if e.diff is None:
            lines += [f"  not profiled: {e.failure}", ""]
            continue
        d = e.diff
        width = max([len(r.name) for r in d.rows[:top]] + [8])
        lines.append(
            f"  {'operator':<{width}} {'':>4} {'calls':>7} {'calls':>7} {'self/call':>10} {'self/call':>10} {'change':>10} {'share':>6}"
        )
        lines.append(f"  {'':<{width}} {'':>4} {'base':>7} {'head':>7} {'base':>10} {'head':>10} {'':>10} {'':>6}")
        cuda = any(r.base_cuda_us or r.head_cuda_us for r in d.rows)
        if cuda:
            lines[-2] += f" {'self CUDA/call':>22}"
            lines[-1] += f" {'base -> head':>22}"
        for r in d.rows[:top]:
            lines.append(
                f"  {r.name:<{width}} {_status(r):>4} {_calls(r.base_calls):>7} {_calls(r.head_calls):>7} "
                f"{fmt_us(r.base_self_us):>10} {fmt_us(r.head_self_us):>10} {_signed(r.diff_us):>10} {_share(d, r):>6}"
                + (f" {fmt_us(r.base_cuda_us) + ' -> ' + fmt_us(r.head_cuda_us):>22}" if cuda else "")
            )
        if len(d.rows) > top:
            lines.append(f"  ... {len(d.rows) - top} more operators (--top N, or --format json)")
        lines.append(
            f"  total self time per call {fmt_us(d.base_self_us)} -> {fmt_us(d.head_self_us)} "
            f"({_signed(d.diff_us)}); profiled {d.base_calls} and {d.head_calls} calls"
        )
        traces = [str(t) for t in (e.base_trace, e.head_trace) if t is not None]
        if traces:
            lines.append("  traces: " + "\n          ".join(traces))
        lines.append("")
    lines.append("self/call: an operator's self CPU time per execution of the benchmark's statement (torch.profiler)")
    return "\n".join(lines)


def markdown_rows(e: Explanation, *, top: int = 5) -> list[str]:
    """The operator table of one benchmark, for the job summary and `--format markdown`."""
    if e.diff is None:
        return [f"_not profiled: {md_cell(e.failure)}_", ""]
    d = e.diff
    cuda = any(r.base_cuda_us or r.head_cuda_us for r in d.rows)
    out = [
        "| operator | | calls base | calls head | self/call base | self/call head | change | share |"
        + (" self CUDA/call |" if cuda else ""),
        "|---|---|---:|---:|---:|---:|---:|---:|" + ("---:|" if cuda else ""),
    ]
    for r in d.rows[:top]:
        out.append(
            f"| `{md_cell(r.name)}` | {_status(r)} | {_calls(r.base_calls)} | {_calls(r.head_calls)} | "
            f"{fmt_us(r.base_self_us)} | {fmt_us(r.head_self_us)} | {_signed(r.diff_us)} | {_share(d, r)} |"
            + (f" {fmt_us(r.base_cuda_us)} → {fmt_us(r.head_cuda_us)} |" if cuda else "")
        )
    out.append("")
    return out


def markdown(ex: Explained, *, top: int = TOP) -> str:
    out = [f"### regress explain: `{ex.base.short}` → `{ex.head.short}`", ""]
    out += [f"- problem: {md_cell(p)}" for p in ex.problems]
    if ex.note:
        out += [md_cell(ex.note), ""]
    for e in ex.items:
        out += [f"#### {md_cell(_title(e))}", ""] + markdown_rows(e, top=top)
    out.append("_self/call: an operator's self CPU time per execution of the benchmark's statement (torch.profiler)._")
    return "\n".join(out)


def row_json(d: OpDiff, r: OpRow) -> dict:
    return {
        "name": r.name,
        "status": str(r.status),
        "base_calls": r.base_calls,
        "head_calls": r.head_calls,
        "base_self_us": r.base_self_us,
        "head_self_us": r.head_self_us,
        "diff_us": r.diff_us,
        "base_cuda_us": r.base_cuda_us,
        "head_cuda_us": r.head_cuda_us,
        "share": d.share(r),
    }


def explanation_json(e: Explanation) -> dict:
    d = e.diff
    return {
        "id": str(e.id),
        "verdict": None if e.verdict is None else str(e.verdict.verdict),
        "ratio": None if e.verdict is None else e.verdict.ratio,
        "failure": e.failure or None,
        "base_calls": d.base_calls if d else None,
        "head_calls": d.head_calls if d else None,
        "base_self_us": d.base_self_us if d else None,
        "head_self_us": d.head_self_us if d else None,
        "base_trace": str(e.base_trace) if e.base_trace else None,
        "head_trace": str(e.head_trace) if e.head_trace else None,
        "ops": [row_json(d, r) for r in d.rows] if d else [],
    }


def as_json(ex: Explained) -> str:
    doc = {
        "format": "regress-explain",
        "version": JSON_VERSION,
        "base": commit_json(ex.base),
        "head": commit_json(ex.head),
        "problems": ex.problems,
        "note": ex.note or None,
        "benchmarks": [explanation_json(e) for e in ex.items],
    }
    return json.dumps(doc, indent=2, allow_nan=False)
