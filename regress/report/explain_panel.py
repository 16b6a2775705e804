"""The site's explain panels: for a change point whose two commits have profiles `regress explain` stored,
a page explain/<slug>.html with the op diff and both traces (copied into the site)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from regress.analysis import explanation
from regress.core.records import CommitInfo
from regress.core.units import percent
from regress.output.explain import row_cells
from regress.storage import profiles

TOP = 25


@dataclass(frozen=True)
class Panel:
    rel: str  # the page, relative to the site root
    name: str
    series: str
    base: CommitInfo
    head: CommitInfo
    change: str
    diff: explanation.OpDiff
    traces: tuple[tuple[str, Path | None], tuple[str, Path | None]]  # (site path, stored file) for base, head


def collect(results: Path, series: list) -> dict[tuple, Panel]:
    """The panels by (series name, step sha, benchmark id)."""
    panels = {}
    for s in series:
        for st in s.steps:
            if st.index == 0:
                continue
            base, head = s.history[st.index - 1].commit, s.history[st.index].commit
            stored = profiles.pair(results, s.machine, s.env, base.sha, head.sha, st.id)
            if stored is None:
                continue
            b, h = stored
            key = (s.name, st.sha, st.id)
            slug = hashlib.sha1(repr(key).encode()).hexdigest()[:16]
            traces = ((f"explain/traces/{slug}-base.json", b.trace), (f"explain/traces/{slug}-head.json", h.trace))
            panels[key] = Panel(
                f"explain/{slug}.html",
                str(st.id),
                s.name,
                base,
                head,
                percent(st.ratio),
                explanation.diff(b.table, h.table),
                traces,
            )
    return panels


def write(site, panels: dict[tuple, Panel], write_file) -> None:
    """Write every panel page and its two traces (`write_file(rel, content)`: relative to the site)."""
    template = site.env.get_template("explain.html")
    for p in panels.values():
        links = []
        for rel, stored in p.traces:
            if stored is not None and stored.is_file():
                write_file(rel, stored.read_bytes())
                links.append(rel.removeprefix("explain/"))
            else:
                links.append("")
        html = template.render(
            **site.context("../"),
            p=p,
            rows=[row_cells(p.diff, r) for r in p.diff.rows[:TOP]],
            base_trace=links[0],
            head_trace=links[1],
            more=max(0, len(p.diff.rows) - TOP),
        )
        write_file(p.rel, html)
