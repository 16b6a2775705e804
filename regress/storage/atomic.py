"""The one way regress writes a file (whole or not at all, even across a crash), and the folders it makes
inside a user's checkout (`.regress/`, `site/`): ignored by git from the start."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, data: bytes | str, *, sync: bool = True) -> None:
    """A temp file beside `path`, renamed over it: readers see the old file or the new one, never half.
    With `sync`, the data and the folder reach the disk first."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if sync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if not sync:
        return
    with contextlib.suppress(OSError):
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


IGNORED = "# Created by regress automatically.\n*\n"


def make_ignored(folder: Path) -> None:
    """Create `folder` (and its parents) with a `.gitignore` of `*`, unless it exists already."""
    if folder.exists():
        return
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(folder / ".gitignore", IGNORED, sync=False)
