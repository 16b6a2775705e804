"""Folders regress makes inside a user's checkout: ignored by git from the start.

The results folder (`.regress/`) and the default site folder (`site/`) are
regress's own output; like pytest's cache, each gets a `.gitignore` of `*`
when regress creates it, so the first `regress run` or `regress report`
adds nothing to `git status`. A folder the user made is left as it is.
"""

from __future__ import annotations

from pathlib import Path

from regress.storage.atomic import write_atomic

CONTENT = "# Created by regress automatically.\n*\n"


def make_ignored(folder: Path) -> None:
    """Create `folder` (and its parents) with a `.gitignore` of `*`, unless it exists already."""
    if folder.exists():
        return
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(folder / ".gitignore", CONTENT, sync=False)
