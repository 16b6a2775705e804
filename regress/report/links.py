"""Addresses of the published site's pages, for what links to them from elsewhere (comments, issues)."""

from __future__ import annotations

import re
from collections.abc import Callable

from regress.core.errors import RegressError
from regress.core.records import BenchmarkId
from regress.report.data import bench_slug


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
