"""Git tree objects of many commits, read in a few `git cat-file --batch` calls: every commit's root
tree from one, each level of a deeper path from one more. Entries are looked up by name exactly as
gitpython's `Tree.join` does, so `code_identity`'s digests are the same either way.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass

TREE = 0o040000

# One (name, mode, hex sha) a tree entry.
Entry = tuple[str, int, str]


@dataclass(frozen=True)
class Root:
    """A commit's root tree: its sha and its entries."""

    sha: str
    entries: tuple[Entry, ...]


def _entries(data: bytes) -> tuple[Entry, ...]:
    """A raw tree object's entries (git's format: `mode name\\0` then the 20-byte sha)."""
    out = []
    at = 0
    encoding = sys.getfilesystemencoding()  # what gitpython decodes names with (its `defenc`)
    while at < len(data):
        space = data.index(b" ", at)
        nul = data.index(b"\0", space + 1)
        name = data[space + 1 : nul].decode(encoding, "surrogateescape")
        out.append((name, int(data[at:space], 8), data[nul + 1 : nul + 21].hex()))
        at = nul + 21
    return tuple(out)


class Reader:
    """Reads objects of one repository (`git_args` place git there: `-C DIR` or `--git-dir=DIR`) in batches."""

    def __init__(self, git_args: list[str]) -> None:
        self.git_args = git_args
        self._trees: dict[str, tuple[Entry, ...]] = {}

    def _batch(self, names: list[str]) -> list[tuple[str, bytes] | None]:
        """(object sha, content) of each name git can read as a tree, in order; None for the rest.
        Raises OSError when git can't be run here (no git, not a repository)."""
        if not names:
            return []
        proc = subprocess.run(
            ["git", *self.git_args, "cat-file", "--batch"],
            input="".join(f"{n}\n" for n in names).encode(),
            capture_output=True,
            check=False,
        )
        if proc.returncode != 0:
            raise OSError(proc.stderr.decode(errors="replace").strip() or f"git exited with {proc.returncode}")
        out: list[tuple[str, bytes] | None] = []
        data, at = proc.stdout, 0
        for _ in names:
            end = data.index(b"\n", at)
            header = data[at:end].split(b" ")
            at = end + 1
            if len(header) != 3 or not header[2].isdigit():  # "<name> missing", "<name> ambiguous"
                out.append(None)
                continue
            size = int(header[2])
            body, at = data[at : at + size], at + size + 1
            out.append((header[0].decode(), body) if header[1] == b"tree" else None)
        return out

    def roots(self, shas: list[str]) -> dict[str, Root]:
        """sha -> its root tree, for each commit git has."""
        found = {}
        for sha, got in zip(shas, self._batch([f"{s}^{{tree}}" for s in shas])):
            if got is not None:
                tree, body = got
                self._trees.setdefault(tree, _entries(body))
                found[sha] = Root(tree, self._trees[tree])
        return found

    def _load(self, trees: Iterable[str]) -> None:
        wanted = list(dict.fromkeys(t for t in trees if t not in self._trees))
        for name, got in zip(wanted, self._batch(wanted)):
            self._trees[name] = _entries(got[1]) if got is not None else ()

    def lookup(self, lookups: list[tuple[str, str]]) -> list[str]:
        """For each (root tree sha, path): the sha of what the path names in that tree (as gitpython's
        `tree[path]`), "" when nothing; "" and "." are not resolved here (the caller names the root)."""
        found = [""] * len(lookups)
        pending = [(i, tree, path.split("/")) for i, (tree, path) in enumerate(lookups)]
        while pending:
            self._load(tree for _, tree, _ in pending)
            later = []
            for i, tree, parts in pending:
                hit = next((e for e in self._trees[tree] if e[0] == parts[0]), None)
                if hit is None:
                    continue
                if len(parts) == 1:
                    found[i] = hit[2]
                elif hit[1] & 0o170000 == TREE:
                    later.append((i, hit[2], parts[1:]))
            pending = later
        return found
