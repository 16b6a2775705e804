"""Writing the site's files, and data made safe to inline in a page."""

from __future__ import annotations

import json
from pathlib import Path

from markupsafe import Markup

from regress.storage.atomic import write_atomic


def write(path: Path, data: str | bytes) -> None:
    write_atomic(path, data, sync=False)  # a site can be rebuilt: no fsync per page


def script_json(obj) -> Markup:
    """JSON that is safe inside <script>: no '<', '>' or '&' can end the element or open a comment."""
    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    for ch, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(ch, escaped)
    return Markup(text)
