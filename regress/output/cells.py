"""How one verdict's cells read, in the check's tables and the pull-request comment alike."""

from __future__ import annotations

from regress.analysis.judge import Verdict
from regress.core.kinds import Kind
from regress.core.units import fmt_time
from regress.core.units import percent as pct

ICON = {
    "regression": "🔴",
    "improvement": "🟢",
    "noisy": "🟡",
    "failed": "❌",
    "new": "🆕",
    "missing": "⚪",
    "unchanged": "",
}


def spread(level: float | None, iqr: float | None) -> str:
    if level is None or iqr is None or level <= 0:
        return ""
    return f"±{iqr / level * 50:.1f}%"  # half the IQR, relative to the level


def name(v: Verdict) -> str:
    """A benchmark's row name under its label: sub_label / description."""
    return " / ".join(p for p in (v.id.sub_label, v.id.description) if p)


def markdown_cells(v: Verdict, fmt=fmt_time) -> tuple[str, str, str, str]:
    """A verdict's base, head, change and verdict cells."""
    change = pct(v.ratio) if v.ratio is not None else ""
    base_cell = f"{fmt(v.base_level)} {spread(v.base_level, v.base_iqr)}".strip()
    head_cell = f"{fmt(v.head_level)} {spread(v.head_level, v.head_iqr)}".strip()
    verdict = f"{ICON[v.verdict]} **{v.verdict}**".strip() if v.verdict != Kind.UNCHANGED else "unchanged"
    return base_cell, head_cell, change, verdict
