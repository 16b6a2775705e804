"""What the site is made of: one publisher per kind of output, in one registry (asv's OutputPublisher).

A publisher gathers what it needs beyond the site's model once (`gather`),
adds its fields to a change point's row in the change lists
(`change_fields`), and writes its files (`write`) through the build's
`Pages`, each page with a digest of what it shows, so that `--incremental`
keeps a page whose digest is the last build's. A new kind of page is a
publisher added to PUBLISHERS, not lines in the builder.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from regress.report import data_files, detects, explain_panel
from regress.report import metrics as report_metrics
from regress.report.data import VERDICT_COMMITS
from regress.report.files import script_json
from regress.report.files import write as write_file
from regress.report.label_data import layout_for
from regress.report.links import bench_slug, label_slug


class Pages:
    """The files one build writes, each recorded in the manifest (with its digest, for pages)."""

    def __init__(self, out: Path, previous: dict[str, str], *, keep_unchanged: bool) -> None:
        self.out, self.previous, self.keep_unchanged = out, previous, keep_unchanged
        self.files: dict[str, str] = {}
        self.written = self.kept = 0
        self._listed: dict[str, set[str]] = {}  # folder -> the files in it, listed once

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

    def page(self, rel: str, digest: str | None, render, *, counted: bool = True) -> None:
        """A page: kept when incremental and its digest is the last build's, else `render()`ed and written.
        `counted`: False for a page's data file (a chart's chunk of points), left out of the counts."""
        if self.keep_unchanged and digest is not None and self.previous.get(rel) == digest and self._exists(rel):
            self.kept += counted
        else:
            write_file(self.out / rel, render())
            self.written += counted
            folder, _, name = rel.rpartition("/")
            self._listed.get(folder, set()).add(name)
        self.files[rel] = digest or ""

    def file(self, rel: str, content: str | bytes) -> None:
        """A file written every build (assets, data, feeds): not counted as a page."""
        write_file(self.out / rel, content)
        self.files[rel] = ""


class Publisher:
    def gather(self, site, results: Path) -> None:
        """Read what this publisher needs beyond the site's model (the results folder's other stores)."""

    def change_fields(self, site, change: dict, root: str) -> dict:
        """Fields of a change point's row in the change lists (every row gets them, "" where none)."""
        return {}

    def write(self, site, pages: Pages) -> None:
        """Write this publisher's files."""


class BenchPages(Publisher):
    """A chart page per benchmark, its points in data files (report/data_files.py)."""

    def write(self, site, pages: Pages) -> None:
        # What each benchmark can detect, for the line under each chart's title: one file, so the pages stay.
        pages.file(detects.REL, detects.script(site.series, site.threshold))
        for bid in site.ids:
            shell, chunks = site.bench_data(bid)
            slug = shell["slug"] = bench_slug(bid)  # its line under the title in data/detects.js
            srcs, inline = chunks.write(pages, site.version, slug)
            data = script_json(site.bench_steps(bid, shell))
            digest = hashlib.sha1(f"{site.version} {data} {srcs} {inline}".encode()).hexdigest()
            pages.page(
                site.bench_href[bid],
                digest,
                lambda bid=bid, data=data, srcs=srcs, inline=inline: site.bench_page(bid, data, srcs, inline),
            )


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
    """A Compare table page per label, with the metric tables beyond time."""

    def write(self, site, pages: Pages) -> None:
        shas = [data_files.sha_array(s) for s in site.series]
        for label, ids in site.labels.items():
            layout = layout_for(ids)
            chunks = data_files.LabelChunks(site.series, layout, site.threshold, shas)
            srcs, inline = chunks.write(pages, site.version, label_slug(label))
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
                lambda label=label, layout=layout, names=names, data=data, srcs=srcs, inline=inline: site.label_page(
                    label, layout, names, data, srcs, inline
                ),
            )


class Overview(Publisher):
    """The overview page, and the change points as JSON and as a feed."""

    def write(self, site, pages: Pages) -> None:
        pages.page("index.html", None, site.overview)
        pages.file("regressions.json", site.regressions_json())
        pages.file("regressions.atom", site.feed())


# In the order they are written; each build makes its own instances.
PUBLISHERS: tuple[type[Publisher], ...] = (LabelPages, BenchPages, ExplainPanels, Overview)
