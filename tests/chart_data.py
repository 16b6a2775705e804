"""A chart page's data as regress.js sees it: the page's own JSON with its chunk files' points joined in
(report/data_files.py), for tests that read the numbers a chart draws."""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path

from regress.report.data_files import Chunks, LabelChunks

_PUSH = re.compile(r"^\(window\.REGRESS_CHUNKS = window\.REGRESS_CHUNKS \|\| \[\]\)\.push\((.*)\);\n$", re.S)


def _chunks(page: Path, text: str, kind: str) -> list[dict]:
    """The page's chunks, in order: its chunk files', or the one it holds inline (a history shorter
    than a chunk)."""
    srcs = re.findall(rf'<script src="\.\./(data/{kind}/[^"]+\.js)"></script>', text)
    scripts = [(page.parent.parent / src).read_text(encoding="utf-8") for src in srcs]
    scripts += re.findall(r"<script>(\(window\.REGRESS_CHUNKS.*?\n)</script>", text, re.S)
    chunks = [json.loads(_PUSH.match(s).group(1)) for s in scripts]
    return sorted(chunks, key=lambda c: c["k"])


def chart_data(page: Path) -> dict:
    text = page.read_text(encoding="utf-8")
    data = json.loads(re.search(r'id="bench-data">(.*?)</script>', text, re.S).group(1))
    chunks = _chunks(page, text, "bench")
    for s in data["series"]:
        for col in ("at", "level", "lo", "hi"):
            s[col] = [v for c in chunks for v in c["series"].get(s["name"], {}).get(col, [])]
    for m in data.get("metrics", []):
        for s in m["series"]:
            parts = [c["metrics"].get(m["metric"], {}).get(s["name"], {}) for c in chunks]
            for col in ("at", "y", "text"):
                s[col] = [v for p in parts for v in p.get(col, [])]
            s["y"] = [v / m["scale"] for v in s["y"]]
    return data


def label_page_data(page: Path) -> dict:
    """A label page's data as regress.js shows it: each series' tables joined from the page's chunk
    files (report/data_files.py), oldest first, the newest commits' verdicts laid over their cells
    and "judged" set."""
    text = page.read_text(encoding="utf-8")
    data = json.loads(re.search(r'id="label-data">(.*?)</script>', text, re.S).group(1))
    chunks = _chunks(page, text, "label")
    for d in data["sections"]:
        d["tables"] = [t for c in chunks for t in c["sections"].get(d["name"], [])]
        for t in d["tables"]:
            over = d["judged"].get(t["sha"])
            t["judged"] = over is not None
            if over is not None:
                t["cells"] = [
                    [c[0], *over[k]] if c is not None and c[1] != "fail" and over[k] is not None else c
                    for k, c in enumerate(t["cells"])
                ]
    return data


@contextlib.contextmanager
def made():
    """The data files whose values a build made (digested), as (page kind, slug, first position)."""
    found = []
    chunk_digest, label_digest = Chunks.digest, LabelChunks.digest
    Chunks.digest = lambda self, version, slug, k: (
        found.append(("bench", slug, k)) or chunk_digest(self, version, slug, k)
    )
    LabelChunks.digest = lambda self, version, slug, k: (
        found.append(("label", slug, k)) or label_digest(self, version, slug, k)
    )
    try:
        yield found
    finally:
        Chunks.digest, LabelChunks.digest = chunk_digest, label_digest
