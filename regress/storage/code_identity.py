"""Which commits hold the same measured code: equal code cannot differ in speed.

A commit's code is the git tree of what its benchmarks import (the import
path, or `code_paths`), plus what a `build_command` reads (`build_inputs`;
without them, the whole tree). At the repository's root, the root's entries
no import reads (NOT_CODE, the benchmark folder) are left out: a README-only
commit is the same code as its parent, a comment in a module is not.
"""

from __future__ import annotations

import fnmatch
import hashlib
from typing import TYPE_CHECKING

from regress.core.config import Config
from regress.storage import git_trees
from regress.storage.memo import Memo

if TYPE_CHECKING:
    import git

# Root entries that no `import` of the project reads (case-insensitive patterns).
NOT_CODE = (
    "*.md",
    "*.rst",
    "*.txt",
    "*.gif",
    "*.png",
    "*.jpg",
    "*.jpeg",
    "*.svg",
    "*.ipynb",
    "license*",
    "licence*",
    "copying*",
    "authors*",
    "changelog*",
    "changes*",
    "notice*",
    "citation*",
    ".git*",
    ".github",
    ".circleci",
    ".pre-commit-config.yaml",
    ".readthedocs.y*ml",
    ".regress",
    "docs",
    "doc",
    "examples",
    "example",
    "assets",
    "tests",
    "test",
    "site",
)


def _entries(tree: git.Tree, path: str) -> list[tuple[str, str]]:
    """(path, object sha) of what `path` names in a commit's tree; ("path", "") when absent."""
    if path in ("", "."):
        return [("", tree.hexsha)]
    try:
        return [(path, tree[path].hexsha)]
    except KeyError:
        return [(path, "")]


def _is_code(name: str, cfg: Config) -> bool:
    """Whether a root entry named `name` is read by an import (see NOT_CODE)."""
    return not any(fnmatch.fnmatch(name.lower(), p) for p in (*NOT_CODE, cfg.benchmarks.strip("/").lower()))


def paths_of(cfg: Config, tree: git.Tree) -> list[tuple[str, str]]:
    """The (path, sha) pairs that make one commit's measured code under `cfg`."""
    if cfg.code_paths:
        parts = [e for p in cfg.code_paths for e in _entries(tree, p)]
    elif cfg.import_path and cfg.import_path.strip("/") not in ("", "."):
        parts = _entries(tree, cfg.import_path.strip("/"))
    elif "src" in tree:
        parts = _entries(tree, "src")
    else:
        parts = [(str(o.path), o.hexsha) for o in tree if _is_code(o.name, cfg)]
    if cfg.build_command:
        parts += [e for p in (cfg.build_inputs or (".",)) for e in _entries(tree, p)]
    return parts


def _digest(parts: list[tuple[str, str]]) -> str:
    digest = hashlib.sha1()
    for path, obj in sorted(parts):
        digest.update(f"{path}\0{obj}\n".encode())
    return digest.hexdigest()


def code_id(repo: git.Repo, cfg: Config, sha: str) -> str:
    """A digest of a commit's measured code through gitpython ("" when git no longer has the commit):
    the reference `code_ids` matches."""
    import git

    try:
        tree = repo.commit(sha).tree
    except (ValueError, git.BadName, git.BadObject):
        return ""
    return _digest(paths_of(cfg, tree))


def _plan(cfg: Config, root: git_trees.Root) -> tuple[list[str], bool]:
    """What `paths_of` reads of a commit's root tree: the paths it looks up, and whether the root's
    code entries are part of it."""
    whole = False
    if cfg.code_paths:
        paths = list(cfg.code_paths)
    elif cfg.import_path and cfg.import_path.strip("/") not in ("", "."):
        paths = [cfg.import_path.strip("/")]
    elif any(name == "src" for name, _, _ in root.entries):
        paths = ["src"]
    else:
        paths, whole = [], True
    if cfg.build_command:
        paths += cfg.build_inputs or (".",)
    return paths, whole


def _batched(reader: git_trees.Reader, cfg: Config, shas: list[str]) -> dict[str, str]:
    """`paths_of` for every commit at once: the root trees from one git call, deeper paths a call a level."""
    roots = reader.roots(list(dict.fromkeys(shas)))
    plans = {sha: _plan(cfg, root) for sha, root in roots.items()}
    asked = list(
        dict.fromkeys((roots[sha].sha, p) for sha, (paths, _) in plans.items() for p in paths if p not in ("", "."))
    )
    found = dict(zip(asked, reader.lookup(asked)))
    out = {}
    for sha, (paths, whole) in plans.items():
        root = roots[sha]
        parts = [("", root.sha) if p in ("", ".") else (p, found[(root.sha, p)]) for p in paths]
        if whole:
            parts += [(name, obj) for name, _, obj in root.entries if _is_code(name, cfg)]
        out[sha] = _digest(parts)
    return out


def code_ids(repo: git.Repo | None, cfg: Config, shas) -> dict[str, str]:
    """sha -> code digest for each commit git still has (none without a repository)."""
    if repo is None:
        return {}
    return _read(["--git-dir", str(repo.git_dir)], cfg, shas)


def _read(git_args: list[str], cfg: Config, shas) -> dict[str, str]:
    try:
        return _batched(git_trees.Reader(git_args), cfg, list(shas))
    except OSError:  # git can't be run there, or it is no repository
        return {}


def for_config(cfg: Config, shas, kept: Memo | None = None) -> dict[str, str]:
    """code_ids in cfg's repository ({} outside one), each kept in `kept` (default: the results folder's
    memo, opened and closed here)."""
    shas = list(shas)
    if not shas or not cfg.root.is_dir():
        return {}
    if kept is None:
        with Memo(cfg.results_dir) as own:
            return for_config(cfg, shas, own)
    made_by = rule(cfg)
    inputs = {sha: f"{made_by}:{sha}" for sha in shas}
    found = kept.find_many(CODE, inputs.values())
    out = {sha: found[key] for sha, key in inputs.items() if isinstance(found.get(key), str)}
    missing = [sha for sha in inputs if sha not in out]
    if missing or (kept.verify and out):
        made = _read(["-C", str(cfg.root)], cfg, missing + (list(out) if kept.verify else []))
        for sha in out:
            if sha in made:
                kept.check(CODE, out[sha], made[sha])
        for sha in missing:
            if sha in made:  # a commit git does not have is not kept
                kept.put(CODE, inputs[sha], made[sha])
                out[sha] = made[sha]
    return {sha: out[sha] for sha in shas if sha in out}


CODE = "commit code"  # the memo's kind


def rule(cfg: Config) -> str:
    """A digest of the config's fields that pick a commit's code identity."""
    fields = (cfg.code_paths, cfg.import_path, cfg.benchmarks, bool(cfg.build_command))
    return hashlib.sha256(repr((*fields, cfg.build_inputs)).encode()).hexdigest()
