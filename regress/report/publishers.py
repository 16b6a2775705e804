"""What the site is made of: one publisher per kind of output, in one registry (asv's OutputPublisher).

A publisher writes what needs no change points first (`early`: the site's
change points are still being found, beside the build), then gathers what it
needs from the results once (`gather`), adds its fields to a change point's
row in the change lists (`change_fields`), and writes the rest (`write`),
through the build's `Pages`, each page with the digest of
its inputs, so that `--incremental` keeps a page whose digest is the last
build's. A new kind of page is a publisher added to PUBLISHERS, not lines in
the builder.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from markupsafe import Markup

from regress.report import bench_chunks, detects, explain_panel, label_chunks, open_pieces, settled
from regress.report import metrics as report_metrics
from regress.report.chunk_grid import Grid
from regress.report.data import VERDICT_COMMITS
from regress.report.files import script_json
from regress.report.files import write as write_file
from regress.report.forked import Forked
from regress.report.label_chunks import LabelChunks
from regress.report.label_data import grid_for
from regress.report.links import bench_slug, label_slug


class Pages:
    """The files one build writes, each recorded in the manifest (with its digest, for pages)."""

    def __init__(
        self, out: Path, previous: dict[str, str], *, keep_unchanged: bool, settled: dict[str, str] | None = None
    ) -> None:
        """`settled`: the last build's data files' settled keys (report/settled.py)."""
        self.out, self.previous, self.keep_unchanged = out, previous, keep_unchanged
        self.previous_settled = settled or {}
        self.files: dict[str, str] = {}
        self.settled: dict[str, str] = {}
        self.written = self.kept = 0
        self._listed: dict[str, set[str]] = {}  # folder -> the files in it, listed once (a stat a file: 0.2 s)

    def _exists(self, rel: str) -> bool:
        folder, _, name = rel.rpartition("/")
        names = self._listed.get(folder)
        if names is None:
            try:
                with os.scandir(self.out / folder) as it:
                    names = {e.name for e in it if e.is_file()}
            except OSError:
                names = set()
            self._listed[folder] = names
        return name in names

    def page(self, rel: str, digest: str | None, render, *, counted: bool = True, settled: str | None = None) -> None:
        """A page: kept when incremental and its digest is the last build's, else `render()`ed and written.
        `counted`: False for a page's data file (a chart's chunk of points), left out of the counts.
        `settled`: the data file's settled key, kept in the manifest for the next build (`kept_settled`)."""
        if self.keep_unchanged and digest is not None and self.previous.get(rel) == digest and self._exists(rel):
            self.kept += counted
        else:
            write_file(self.out / rel, render())
            self.written += counted
            folder, _, name = rel.rpartition("/")
            self._listed.get(folder, set()).add(name)
        self.files[rel] = digest or ""
        if settled is not None:
            self.settled[rel] = settled

    def fork(self) -> Pages:
        """A Pages like this one with nothing recorded yet: what a child's part of the build records."""
        return Pages(self.out, self.previous, keep_unchanged=self.keep_unchanged, settled=self.previous_settled)

    def state(self) -> dict:
        return {"files": self.files, "settled": self.settled, "written": self.written, "kept": self.kept}

    def absorb(self, state: dict) -> None:
        """What a child's Pages recorded (`state`), as if recorded here."""
        files, settled, written, kept = state["files"], state["settled"], int(state["written"]), int(state["kept"])
        if not (isinstance(files, dict) and isinstance(settled, dict)):
            raise TypeError("not a Pages state")
        self.files.update(files)
        self.settled.update(settled)
        self.written += written
        self.kept += kept

    def kept_settled(self, rel: str, settled: str | None) -> bool:
        """A data file whose settled key is the last build's: kept, its digest with it, its values never made."""
        if (
            settled is None
            or not self.keep_unchanged
            or self.previous_settled.get(rel) != settled
            or rel not in self.previous
            or not self._exists(rel)
        ):
            return False
        self.files[rel], self.settled[rel] = self.previous[rel], settled
        return True

    def file(self, rel: str, content: str | bytes) -> None:
        """A file written every build (assets, data, feeds): not counted as a page."""
        write_file(self.out / rel, content)
        self.files[rel] = ""


class Publisher:
    # A publisher whose early part runs beside the rest of the build writes after the others (it waits).
    writes_late = False

    def early(self, site, pages: Pages) -> None:
        """Write what needs no change points (`site.changes` and each series' steps are not known yet)."""

    def gather(self, site, results: Path) -> None:
        """Read what this publisher needs beyond the series (the results folder's other stores)."""

    def change_fields(self, site, change: dict, root: str) -> dict:
        """Fields of a change point's row in the change lists (every row gets them, "" where none)."""
        return {}

    def write(self, site, pages: Pages) -> None:
        """Write the rest, the change points known."""

    def close(self) -> None:
        """Anything still running beside the build stopped (the build failed before it was written)."""


class BenchPages(Publisher):
    """A chart page per benchmark, its points in chunk files (report/bench_chunks.py). The points are
    made and the files written in a forked child (report/forked.py) while the build makes the label
    pages, judges the change points and writes the overview: they need none of it. The pages
    themselves, which show the change points, are written once the child has answered."""

    writes_late = True

    def __init__(self) -> None:
        self.shells: dict = {}
        self.child: Forked | None = None

    def early(self, site, pages: Pages) -> None:
        if site.series and not Grid(max(len(s.history) for s in site.series)).inline:
            part = pages.fork()
            self.child = Forked(lambda: self._sent(site, part))
        if self.child is None or not self.child.started:
            self._make(site, pages)

    def _make(self, site, pages: Pages) -> None:
        for group, ids in open_pieces.groups(site):
            made = [(bid, *site.bench_data(bid)) for bid in ids]
            # The newest positions in files the group's charts share (report/open_pieces.py), the rest each page's own.
            inline = made[0][2].grid.inline
            shared = [] if inline else open_pieces.write(site, pages, group, [(bid, c) for bid, _, c in made])
            for bid, shell, chunks in made:
                shell["slug"] = bench_slug(bid)  # its values' name in a shared file
                own = set(open_pieces.pieces(chunks.grid)) if not inline else set()
                srcs, script = _chunk_files(site, pages, chunks, bench_chunks.rel, bench_slug(bid), skip=own)
                self.shells[bid] = (shell, (srcs + shared, script))

    def _sent(self, site, part: Pages) -> bytes:
        """In the child: every chart's data files written (recorded in `part`), and what the pages need."""
        self._make(site, part)
        shells = [[self.shells[bid][0], self.shells[bid][1][0]] for bid in site.ids]
        return json.dumps({"shells": shells, "pages": part.state()}, default=_plain).encode()

    def _joined(self, site, pages: Pages) -> None:
        """The child's part taken in, or (no answer, or one that does not read) made here."""
        assert self.child is not None  # `write` joins only where there is a child
        data, self.child = self.child.get(), None
        if data is not None:
            try:
                found = json.loads(data)
                shells = found["shells"]
                if len(shells) != len(site.ids):
                    raise ValueError("shells of other benchmarks")
                self.shells = {bid: (shell, (list(srcs), None)) for bid, (shell, srcs) in zip(site.ids, shells)}
                pages.absorb(found["pages"])
                return
            except (ValueError, KeyError, TypeError):
                self.shells = {}
        self._make(site, pages)

    def close(self) -> None:
        if self.child is not None:
            self.child.stop()
            self.child = None

    def write(self, site, pages: Pages) -> None:
        if self.child is not None:
            self._joined(site, pages)
        # What each benchmark can detect, for the line under each chart's title: one file, so the pages stay.
        pages.file(detects.REL, detects.script(site.series, site.threshold))
        for bid in site.ids:
            shell, (srcs, inline) = self.shells.pop(bid)
            data = script_json(site.bench_steps(bid, shell))
            digest = hashlib.sha1(f"{site.version} {data} {srcs} {inline}".encode()).hexdigest()
            pages.page(
                site.bench_href[bid],
                digest,
                lambda bid=bid, data=data, srcs=srcs, inline=inline: site.bench_page(bid, data, srcs, inline),
            )


def _chunk_files(
    site, pages: Pages, chunks, rel, slug: str, identity: str = "", skip=frozenset()
) -> tuple[list[str], Markup | None]:
    """A page's data files written (each kept while its digest stands): (their paths, None). A history
    shorter than one chunk keeps its one file in the page instead: ([], its script), so a small
    site is no more files than before chunks (every page changes with every commit there anyway).
    A file whose positions are settled in every series it draws is kept by its settled key, its values
    not made at all (report/settled.py); `identity`: what else its values depend on (a label's grid);
    `skip`: keys whose files are not the page's own (a chart's newest pieces: report/open_pieces.py)."""
    if chunks.grid.inline:
        return [], Markup(chunks.script(0))
    keys = [k for k in chunks.listed() if k not in skip]
    srcs = [rel(slug, chunks.grid.name(k)) for k in keys]
    by_name = {s.name: s.settled for s in site.series}
    for k, src in zip(keys, srcs):  # after a new commit only the piece holding it changes
        drawn = [(name, by_name.get(name)) for name in chunks.drawn(k)]
        key = settled.page_key(site.version, src, identity, drawn, k, chunks.grid.end(k))
        if not pages.kept_settled(src, key):
            pages.page(
                src, chunks.digest(site.version, slug, k), lambda k=k: chunks.script(k), counted=False, settled=key
            )
    return srcs, None


class ExplainPanels(Publisher):
    """The operators behind a change point and both traces, where `regress explain` stored them."""

    def __init__(self) -> None:
        self.panels: dict = {}

    def gather(self, site, results: Path) -> None:
        self.panels = explain_panel.collect(results, site.series)

    def change_fields(self, site, change: dict, root: str) -> dict:
        st = change["step"]
        return {"explain": explain_panel.href(self.panels, change["series"].name, st.sha, st.id, root)}

    def write(self, site, pages: Pages) -> None:
        explain_panel.write(site, self.panels, pages.file)


class LabelPages(Publisher):
    """A Compare table page per label, with the metric tables beyond time (no change points: early)."""

    def early(self, site, pages: Pages) -> None:
        shas = [label_chunks.sha_array(s) for s in site.series]
        for label, ids in site.labels.items():
            grid = grid_for(ids)
            chunks = LabelChunks(site.series, grid, site.threshold, shas)
            identity = f"{site.threshold!r} {[str(b) if b is not None else '' for b in grid.cells]} {grid.columns}"
            srcs, inline = _chunk_files(site, pages, chunks, label_chunks.rel, label_slug(label), identity)
            metrics = report_metrics.label_tables(
                site.series, ids, threshold_for=site.threshold_for, index=site.metric_index
            )
            names, judged = chunks.names, chunks.overlay()
            sections = [{"name": name, "judged": judged[name]} for name in names]
            data = script_json({"sections": sections, "judged_commits": VERDICT_COMMITS, "metrics": metrics})
            digest = hashlib.sha1(f"{site.version} {data} {label} {ids} {srcs} {inline}".encode()).hexdigest()
            pages.page(
                site.label_href[label],
                digest,
                lambda label=label, grid=grid, names=names, data=data, srcs=srcs, inline=inline: site.label_page(
                    label, grid, names, data, srcs, inline
                ),
            )


class Overview(Publisher):
    """The overview page, and the change points as JSON and as a feed."""

    def write(self, site, pages: Pages) -> None:
        pages.page("index.html", None, site.overview)
        pages.file("regressions.json", site.regressions_json())
        pages.file("regressions.atom", site.feed())


# In the order they are written; each build makes its own instances.
PUBLISHERS: tuple[type[Publisher], ...] = (BenchPages, ExplainPanels, LabelPages, Overview)


def _plain(value):
    """json.dumps' default: numpy's scalars as Python numbers (a figure computed with numpy may be one)."""
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON")
