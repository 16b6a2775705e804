"""A benchmark path's contents, prepared for measuring: each file read for what it is, pytest's collected.

`prepare` runs once where the commit's code is importable: in the fork
server's commit process (`measure/zygote.py`, once per server and commit) or,
where there is none (listing, instruction counts, a fresh interpreter), in
the worker itself. It classifies every file (`files.py`), collects the pytest
modules with pytest's own machinery (`pytest_suite.py`), and keeps what is
not a benchmark as notes. The regress suites are imported later, in each
round's process, as they always were (`discover.py`).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from regress.core.kinds import FailureKind
from regress.core.records import Failure
from regress.suite import files as kinds
from regress.suite.files import FileKind, Note

# ini files whose settings could make other names pytest modules (`python_files`).
_INI = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")


@dataclass
class Prepared:
    """What a round needs of the benchmark path besides importing its regress suites."""

    suites: list[Path] = field(default_factory=list)  # regress suite files, imported by each round
    pytest_entries: list[Any] = field(default_factory=list)  # discover.Entry, one per benchmark test
    failures: list[Failure] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    mistake: str = ""  # a user mistake that stops the command (pytest missing)
    plugin: Any = None  # the collected session's regress plugin (runs the items)

    @property
    def has_pytest(self) -> bool:
        return bool(self.pytest_entries)


def _shown(path: Path, shown_root: Path) -> str:
    return str(path.relative_to(shown_root)) if path.is_relative_to(shown_root) else str(path)


def _may_set_python_files(where: Path, root: Path) -> bool:
    """Whether an ini file between the benchmark path and the root mentions `python_files`."""
    here = where if where.is_dir() else where.parent
    for folder in [here, *here.parents]:
        for name in _INI:
            try:
                if "python_files" in (folder / name).read_text(encoding="utf-8", errors="replace"):
                    return True
            except OSError:
                pass
        if folder == root or not folder.is_relative_to(root):
            break
    return False


def prepare(where: Path, *, root: Path, shown_root: Path, pytest_args: tuple[str, ...], env: str) -> Prepared:
    """Classify the files of `where` (a folder or a file) and collect its pytest modules; never raises for the
    project's mistakes (they become failures, notes or `mistake`)."""
    from regress.suite import pytest_suite

    out = Prepared()
    paths = kinds.benchmark_files(where)
    patterns = list(kinds.TEST_FILES)
    session = None
    wants_pytest = any(kinds.is_test_file(p, patterns) for p in paths) or _may_set_python_files(where, root)
    if wants_pytest and pytest_suite.available():
        try:
            session = pytest_suite.configure(root, [where], pytest_args)
            patterns = pytest_suite.test_patterns(session)
        except Exception as exc:  # noqa: BLE001 - pytest's usage errors, a conftest failing to import
            if type(exc).__name__ == "UsageError":
                out.mistake = (
                    f"pytest does not accept the arguments for {_shown(where, shown_root)}: {_describe(exc)}; "
                    "fix pytest_args in [tool.regress] (or --pytest-args)"
                )
            else:  # a conftest.py that fails at this commit: the suite's failure here, as a suite's import is
                path = getattr(exc, "path", None)
                cause = getattr(exc, "cause", None) or exc
                where_ = _shown(Path(path), shown_root) if path else _shown(where, shown_root)
                out.failures.append(Failure(FailureKind.SUITE, _describe(cause), where_))
            return out
    tests: list[Path] = []
    for path in paths:
        got = kinds.classify(path, _shown(path, shown_root), test_patterns=patterns)
        out.notes.extend(got.notes)
        if got.kind is FileKind.SUITE:
            out.suites.append(path)
        elif got.kind is FileKind.PYTEST:
            if session is None and not got.mentions_benchmark:
                out.notes.append(
                    Note(_shown(path, shown_root), "is a test module without benchmark tests: not a benchmark")
                )
            else:
                tests.append(path)
    if tests and session is None:
        shown = ", ".join(_shown(p, shown_root) for p in tests[:3]) + (" ..." if len(tests) > 3 else "")
        out.mistake = (
            f"{shown} holds pytest-benchmark tests, and pytest is not installed for {sys.executable}; "
            "install it there (pip install pytest)"
        )
        return out
    if not tests:
        return out
    assert session is not None  # tests without a session returned above
    try:
        pytest_suite.collect(session, tests)
    except Exception as exc:  # noqa: BLE001 - a conftest hook or plugin that raises while collecting
        out.failures.append(
            Failure(FailureKind.SUITE, f"pytest could not collect: {_describe(exc)}", _shown(where, shown_root))
        )
        return out
    folder = where if where.is_dir() else where.parent
    made, failures, notes = pytest_suite.entries(session, tests, folder=folder, shown_root=shown_root, env=env)
    out.pytest_entries, out.plugin = made, session.plugin
    out.failures.extend(failures)
    out.notes.extend(notes)
    return out


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
