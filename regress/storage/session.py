"""What one command opens once and hands down: its configuration, `store`, `memo` (written when the
session closes), `repo` (gitpython imported only when first asked for) and the code identities (`code`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from regress.core.config import Config
from regress.core.records import WORKTREE
from regress.storage.memo import Memo
from regress.storage.store import Store

if TYPE_CHECKING:
    import git


def project_root(path: Path) -> Path:
    """The checkout holding `path`: the nearest folder upward with a `.git` (a folder, or a worktree's file);
    gitpython (imported only then) answers what that walk cannot: `GIT_DIR`, bare repositories, errors."""
    here = Path(os.path.abspath(path))
    if here.is_dir() and "GIT_DIR" not in os.environ:
        for folder in (here, *here.parents):
            if (folder / ".git").exists():
                return folder
    from regress.storage import gitrepo

    return gitrepo.root_of(gitrepo.open_repo(path))


class Session:
    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.store = Store(cfg.results_dir)
        self._memo: Memo | None = None
        self._repo: git.Repo | None = None
        self._code: dict[str, str] = {}

    @property
    def memo(self) -> Memo:
        """The results folder's memo, opened the first time it is asked for."""
        if self._memo is None:
            self._memo = Memo(self.store)
        return self._memo

    @property
    def repo(self) -> git.Repo:
        """The project's repository, opened the first time it is asked for."""
        if self._repo is None:
            from regress.storage import gitrepo

            self._repo = gitrepo.open_repo(self.cfg.root)
        return self._repo

    def code(self, shas) -> dict[str, str]:
        """sha -> code identity (`code_identity.for_config`) of each of `shas` that has one, each read once a command."""
        shas = list(dict.fromkeys(shas))
        missing = [s for s in shas if s not in self._code and s != WORKTREE]
        if missing:
            from regress.storage import code_identity

            self._code.update(code_identity.for_config(self.cfg, missing, self.memo))
        return {s: self._code[s] for s in shas if s in self._code}

    def close(self) -> None:
        """What the memo was given written (see `Memo.close`), and the results folder's FILE closed."""
        if self._memo is not None:
            self._memo.close()
            self._memo = None
        self.store.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
