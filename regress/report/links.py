"""The published site's page names and addresses: its own links, and what links to it from elsewhere (comments, issues)."""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable

from regress.core.errors import RegressError
from regress.core.records import BenchmarkId


def slug(text: str, key: str) -> str:
    """A file name for a page: readable part from `text`, unique part from `key`."""
    readable = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "x"
    return f"{readable}-{hashlib.sha1(key.encode()).hexdigest()[:8]}"


def bench_slug(bid: BenchmarkId) -> str:
    return slug(str(bid), repr((bid.label, bid.sub_label, bid.description, bid.num_threads)))


def label_slug(label: str) -> str:
    return slug(label, repr(label))


def iso(ts: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(ts))


def chart_url(site_url: str) -> Callable[[BenchmarkId], str] | None:
    """A benchmark's chart page on the site at `site_url` (None when the address is not known)."""
    site = site_url.strip().rstrip("/")
    if not site:
        return None
    if not re.fullmatch(r"https?://[^\s\"'<>()\[\]]+", site):
        raise RegressError(
            f"site_url {site_url!r} is not an http(s) address; set it in [tool.regress] (or --site-url) "
            "to where the site is published, e.g. https://owner.github.io/repo"
        )
    return lambda bid: f"{site}/bench/{bench_slug(bid)}.html"
