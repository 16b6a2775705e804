"""Folders regress makes inside a user's checkout (`.regress/`, `site/`): ignored by git from the start."""

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
