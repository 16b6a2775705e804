"""The newest positions of a label's charts in files they share: a push writes one file a label, not a benchmark.

Every chart gets a point at every push, so the piece of the grid holding the
newest position (`chunk_grid`) changes on every chart page: 200 files written
at every push of a 200-benchmark suite (400 where the paired parent is in the
piece before), a millisecond of the file system's each, the larger part of
what the chart pages cost an incremental build. The closed chunks stay each
chart's own (written once); the pieces past them are shared by the charts of
one label, GROUP at most to a file (`data/open/<group>/open-<j>.js`), each
chart's values under its page's slug, which regress.js picks out. A shared
piece is kept while every chart's values in it are (by their digests, or
their settled keys: report/settled.py), and made whole when one moves.
"""

from __future__ import annotations

import hashlib

from regress.core.records import BenchmarkId
from regress.report import settled
from regress.report.bench_chunks import Chunks, push
from regress.report.chunk_grid import CHUNK
from regress.report.links import bench_slug, label_slug

# Charts a shared file holds at most (a bigger label is cut in groups of these, in the label's order).
GROUP = 16


def rel(group: str, name: str) -> str:
    return f"data/open/{group}/{name}"


def groups(site) -> list[tuple[str, list]]:
    """(group name, its benchmarks), every benchmark in one, in the site's label order."""
    out = []
    for label, ids in site.labels.items():
        for j in range(0, len(ids), GROUP):
            out.append((label_slug(label) + (f"-{j // GROUP}" if len(ids) > GROUP else ""), ids[j : j + GROUP]))
    return out


def pieces(grid) -> list[int]:
    """The shared keys: every piece past the closed chunks."""
    return [k for k in grid.listed(()) if k >= grid.closed * CHUNK]


def write(site, pages, group: str, made: list[tuple[BenchmarkId, Chunks]]) -> list[str]:
    """The group's shared files written (each kept while it stands); their paths, for every page of the group.
    `made`: each benchmark of the group with its chart's chunks."""
    grid = made[0][1].grid
    by_name = {s.name: s.settled for s in site.series}
    srcs = []
    for k in pieces(grid):
        src = rel(group, grid.name(k))
        srcs.append(src)
        keys = []
        for bid, chunks in made:
            drawn = [(name, by_name.get(name)) for name in chunks.drawn(k)]
            keys.append(settled.page_key(site.version, src, bench_slug(bid), drawn, k, grid.end(k)))
        key = None if None in keys else hashlib.sha1(" ".join(keys).encode()).hexdigest()
        if pages.kept_settled(src, key):
            continue
        h = hashlib.sha1(f"{site.version} {group} {k}".encode())
        for bid, chunks in made:
            slug = bench_slug(bid)
            h.update(f" {slug}:{chunks.digest(site.version, slug, k)}".encode())
        pages.page(
            src,
            h.hexdigest(),
            lambda k=k: push({"k": k, "benches": {bench_slug(bid): chunks.content(k) for bid, chunks in made}}),
            counted=False,
            settled=key,
        )
    return srcs
