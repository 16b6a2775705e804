"""A results branch with years of pushes, written at once, and the bytes git transfers to fetch it.

`write_branch` gives a bare repository a `regress-results` branch of one
commit per result file, oldest first, as a push a day leaves it (built with
`git fast-import`: thousands of pushes in seconds). `fetched_bytes` runs a
command with git's own packfile trace (GIT_TRACE_PACKFILE) and counts the
bytes of every pack it received. Used by `scripts/eval_partial_pull.py` and
tests/workflows/test_partial_pull.py.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path

README = b"# regress results\n\nFabricated: one commit per result file.\n"


def write_branch(bare: Path, files: Iterable[tuple[str, bytes]], branch: str = "regress-results") -> int:
    """Commits onto `branch` of `bare`: the README, then each (relative path, bytes) in turn. Returns the count."""
    proc = subprocess.Popen(["git", "fast-import", "--quiet"], cwd=bare, stdin=subprocess.PIPE)
    assert proc.stdin is not None
    out = proc.stdin
    count = 0

    def commit(mark: int, rel: str, data: bytes) -> None:
        nonlocal count
        out.write(b"blob\nmark :%d\ndata %d\n" % (2 * mark + 1, len(data)) + data + b"\n")
        message = f"regress results: {rel.rsplit('/', 1)[-1].removesuffix('.pkl')}".encode()
        out.write(b"commit refs/heads/%s\nmark :%d\n" % (branch.encode(), 2 * mark + 2))
        out.write(b"committer regress <regress@localhost> %d +0000\n" % (1_700_000_000 + 86_400 * mark))
        out.write(b"data %d\n%s\n" % (len(message), message))
        if mark:
            out.write(b"from :%d\n" % (2 * mark))
        out.write(b"M 100644 :%d %s\n\n" % (2 * mark + 1, rel.encode()))
        count += 1

    commit(0, "README.md", README)
    for i, (rel, data) in enumerate(files, start=1):
        commit(i, rel, data)
    out.close()
    if proc.wait() != 0:
        raise RuntimeError("git fast-import failed")
    return count


def fetched_bytes(cmd: list[str], cwd: Path, env: dict | None = None) -> tuple[int, subprocess.CompletedProcess]:
    """The bytes of the packs `cmd`'s git processes received, and how it ran."""
    with tempfile.TemporaryDirectory(prefix="regress-trace-") as tmp:
        trace = Path(tmp) / "packs"
        full = {**(env if env is not None else os.environ), "GIT_TRACE_PACKFILE": str(trace)}
        proc = subprocess.run(cmd, cwd=cwd, env=full, capture_output=True, text=True)
        return (trace.stat().st_size if trace.exists() else 0), proc
