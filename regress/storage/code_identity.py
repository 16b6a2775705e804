"""Which commits hold the same measured code: equal code cannot differ in speed.

A commit's code is the git tree of what its benchmarks import (the import
path; `code_paths` in [tool.regress] names it exactly), plus what a
`build_command` reads (`build_inputs`; without them, the whole tree). At the
repository's root the import path holds the project's docs and examples too,
so there the root's entries that no import reads are left out (documents,
images, docs/, examples/, tests/, the benchmark folder, CI files): a
README-only or examples-only commit is the same code as its parent, while a
comment in a module is not (its tree differs, and so may its bytecode).
"""

from __future__ import annotations

import fnmatch
import hashlib

import git

from regress.core.config import Config

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


def _root_code(tree: git.Tree, cfg: Config) -> list[tuple[str, str]]:
    skip = (*NOT_CODE, cfg.benchmarks.strip("/").lower())
    return [(o.path, o.hexsha) for o in tree if not any(fnmatch.fnmatch(o.name.lower(), p) for p in skip)]


def paths_of(cfg: Config, tree: git.Tree) -> list[tuple[str, str]]:
    """The (path, sha) pairs that make one commit's measured code under `cfg`."""
    if cfg.code_paths:
        parts = [e for p in cfg.code_paths for e in _entries(tree, p)]
    elif cfg.import_path and cfg.import_path.strip("/") not in ("", "."):
        parts = _entries(tree, cfg.import_path.strip("/"))
    elif "src" in tree:
        parts = _entries(tree, "src")
    else:
        parts = _root_code(tree, cfg)
    if cfg.build_command:
        parts += [e for p in (cfg.build_inputs or (".",)) for e in _entries(tree, p)]
    return parts


def code_id(repo: git.Repo, cfg: Config, sha: str) -> str:
    """A digest of a commit's measured code; "" when git no longer has the commit."""
    try:
        tree = repo.commit(sha).tree
    except (ValueError, git.BadName, git.BadObject):
        return ""
    digest = hashlib.sha1()
    for path, obj in sorted(paths_of(cfg, tree)):
        digest.update(f"{path}\0{obj}\n".encode())
    return digest.hexdigest()


def code_ids(repo: git.Repo | None, cfg: Config, shas) -> dict[str, str]:
    """sha -> code digest for each commit git still has (none without a repository)."""
    if repo is None:
        return {}
    out = {}
    for sha in shas:
        ident = code_id(repo, cfg, sha)
        if ident:
            out[sha] = ident
    return out


def for_config(cfg: Config, shas) -> dict[str, str]:
    """code_ids in cfg's repository; {} when cfg.root is not in one (results read on their own)."""
    try:
        repo = git.Repo(cfg.root, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return {}
    return code_ids(repo, cfg, shas)
