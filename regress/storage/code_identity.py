"""Which commits hold the same measured code: equal code cannot differ in speed.

A commit's code is the git tree of what its benchmarks import (the import
path, or `code_paths`), plus what a `build_command` reads (`build_inputs`;
without them, the whole tree). At the repository's root, the root's entries
no import reads (NOT_CODE, the benchmark folder) are left out: a README-only
commit is the same code as its parent, a comment in a module is not.
"""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import subprocess
import sys

from regress.core.config import Config
from regress.storage.memo import Memo

# Root entries that no `import` of the project reads (case-insensitive patterns), by what they are.
_DOCS = ("*.md", "*.rst", "*.txt", "*.ipynb", "docs", "doc", "examples", "example", "site")
_IMAGES = ("*.gif", "*.png", "*.jpg", "*.jpeg", "*.svg", "assets")
_NOTICES = ("license*", "licence*", "copying*", "authors*", "changelog*", "changes*", "notice*", "citation*")
_TOOLS = (".git*", ".github", ".circleci", ".pre-commit-config.yaml", ".readthedocs.y*ml", ".regress")
_TESTS = ("tests", "test")
NOT_CODE = (*_DOCS, *_IMAGES, *_NOTICES, *_TOOLS, *_TESTS)


def _is_code(name: str, cfg: Config) -> bool:
    """Whether a root entry named `name` is read by an import (see NOT_CODE)."""
    return not any(fnmatch.fnmatch(name.lower(), p) for p in (*NOT_CODE, cfg.benchmarks.strip("/").lower()))


def _digest(parts: list[tuple[str, str]]) -> str:
    digest = hashlib.sha1()
    for path, obj in sorted(parts):
        digest.update(f"{path}\0{obj}\n".encode())
    return digest.hexdigest()


TREE = 0o040000

Entry = tuple[str, int, str]  # a tree entry: (name, mode, hex sha)


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
    """Reads tree objects of one repository (`git_args` place git there: `-C DIR` or `--git-dir=DIR`) in a
    few `git cat-file --batch` calls: every commit's root tree in one, each level of a deeper path in one
    more. Entries are looked up by name exactly as gitpython's `Tree.join` does."""

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

    def roots(self, shas: list[str]) -> dict[str, tuple[str, tuple[Entry, ...]]]:
        """sha -> its root tree (the tree's sha, its entries), for each commit git has."""
        found = {}
        for sha, got in zip(shas, self._batch([f"{s}^{{tree}}" for s in shas])):
            if got is not None:
                tree, body = got
                self._trees.setdefault(tree, _entries(body))
                found[sha] = (tree, self._trees[tree])
        return found

    def lookup(self, lookups: list[tuple[str, str]]) -> list[str]:
        """For each (root tree sha, path): the sha of what the path names in that tree (as gitpython's
        `tree[path]`), "" when nothing; "" and "." are not resolved here (the caller names the root)."""
        found = [""] * len(lookups)
        pending = [(i, tree, path.split("/")) for i, (tree, path) in enumerate(lookups)]
        while pending:
            wanted = list(dict.fromkeys(tree for _, tree, _ in pending if tree not in self._trees))
            for name, got in zip(wanted, self._batch(wanted)):
                self._trees[name] = _entries(got[1]) if got is not None else ()
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


def _plan(cfg: Config, entries: tuple[Entry, ...]) -> tuple[list[str], bool]:
    """What makes a commit's measured code under `cfg`, given its root tree's entries: the paths to look
    up, and whether the root's code entries are part of it."""
    whole = False
    if cfg.code_paths:
        paths = list(cfg.code_paths)
    elif cfg.import_path and cfg.import_path.strip("/") not in ("", "."):
        paths = [cfg.import_path.strip("/")]
    elif any(name == "src" for name, _, _ in entries):
        paths = ["src"]
    else:
        paths, whole = [], True
    if cfg.build_command:
        paths += cfg.build_inputs or (".",)
    return paths, whole


def _batched(cfg: Config, shas: list[str]) -> dict[str, str]:
    """sha -> code digest of every commit git finds in cfg's repository ({} where git can't be run there,
    or it is no repository)."""
    reader = Reader(["-C", str(cfg.root)])
    try:
        roots = reader.roots(list(dict.fromkeys(shas)))
        plans = {sha: _plan(cfg, entries) for sha, (_, entries) in roots.items()}
        asked = list(
            dict.fromkeys((roots[sha][0], p) for sha, (paths, _) in plans.items() for p in paths if p not in ("", "."))
        )
        found = dict(zip(asked, reader.lookup(asked)))
    except OSError:
        return {}
    out = {}
    for sha, (paths, whole) in plans.items():
        tree, entries = roots[sha]
        parts = [("", tree) if p in ("", ".") else (p, found[(tree, p)]) for p in paths]
        if whole:
            parts += [(name, obj) for name, _, obj in entries if _is_code(name, cfg)]
        out[sha] = _digest(parts)
    return out


def for_config(cfg: Config, shas, kept: Memo) -> dict[str, str]:
    """sha -> code digest of each of `shas` git has in cfg's repository ({} outside one), each kept in `kept`."""
    shas = list(shas)
    if not shas or not cfg.root.is_dir():
        return {}
    made_by = rule(cfg)
    return kept.get_many(CODE, {sha: f"{made_by}:{sha}" for sha in shas}, functools.partial(_batched, cfg))


CODE = "commit code"  # the memo's kind


def rule(cfg: Config) -> str:
    """A digest of the config's fields that pick a commit's code identity."""
    fields = (cfg.code_paths, cfg.import_path, cfg.benchmarks, bool(cfg.build_command))
    return hashlib.sha256(repr((*fields, cfg.build_inputs)).encode()).hexdigest()
