"""pytest-benchmark suites as they are: pytest collects them, regress times each test's benchmark call.

Runs inside the worker (the fork server's commit process, `measure/zygote.py`,
collects once per server and commit; each round's child runs the items).
Collection is pytest's own: `_pytest.config` reads the project's ini
(`python_files`, markers...) and every `conftest.py` from the repository
root down, `Session.perform_collect` builds the items (fixtures with params,
`pytest_generate_tests`, `parametrize`, marks), with regress's plugin
supplying the `benchmark` fixture. A test whose fixtures include `benchmark`
is a benchmark:

- label: `--benchmark-group-by` (pytest-benchmark's default, `group`: the
  `@pytest.mark.benchmark(group=...)` mark's group, or a literal
  `benchmark.group = "..."` in the test body, else the module);
- sub_label: the parameter id (`[cpu-float32]` without brackets), if any;
- description: the test's name (`Class.test` for a method);
- num_threads 1, as a Timer's default; the origin names pytest's node id.

Running an item is pytest's `runtestprotocol`: its fixtures are set up, the
body runs, and the benchmark call inside it is timed by the worker's
`timed` callback; an assertion failing afterwards is the benchmark's
failure, `pytest.skip`/`skipif`/`importorskip` its skip with pytest's reason.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from regress.core.kinds import FailureKind
from regress.core.records import Failure, TaskSpec
from regress.suite.files import Note

# How regress runs pytest: pytest-benchmark blocked (regress's fixture wins), nothing
# written into the checkout (cache), the project's addopts (reporting, coverage,
# workers) left out, output to the worker's log, quiet.
FIXED_ARGS = (
    "-p",
    "no:benchmark",
    "-p",
    "no:cacheprovider",
    "-o",
    "addopts=",
    "-s",
    "-q",
    "-W",
    "ignore::pytest.PytestAssertRewriteWarning",
)


def available() -> bool:
    try:
        import _pytest.config  # noqa: F401
        import pytest  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass
class Session:
    """A collected pytest session: its config (for `python_files`) and, once collected, its items."""

    config: Any
    plugin: Any
    session: Any = None
    items: list = field(default_factory=list)


def configure(root: Path, paths: list[Path], pytest_args: tuple[str, ...]) -> Session:
    """pytest's config for collecting `paths` with `root` as rootdir and conftest boundary.

    Raises UsageError (pytest's) for arguments pytest does not accept."""
    from _pytest.config import _prepareconfig

    from regress.suite.pytest_plugin import Plugin

    plugin = Plugin()
    args = [*FIXED_ARGS, f"--rootdir={root}", f"--confcutdir={root}", *pytest_args, *[str(p) for p in paths]]
    config = _prepareconfig(args, plugins=[plugin])
    return Session(config, plugin)


def test_patterns(s: Session) -> list[str]:
    return list(s.config.getini("python_files"))


def collect(s: Session, paths: list[Path]) -> None:
    """Collect `paths` (pytest's configure, session start and perform_collect)."""
    import pytest

    s.config._do_configure()
    s.session = pytest.Session.from_config(s.config)
    s.config.hook.pytest_sessionstart(session=s.session)
    s.session.perform_collect([str(p) for p in paths])
    s.items = list(s.session.items)


def _group_from_body(item) -> str | None:
    """A literal `benchmark.group = "..."` in the test's body: the group pytest-benchmark reports."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(item.function)))
    except (OSError, TypeError, SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for t in node.targets:
                if isinstance(t, ast.Attribute) and t.attr == "group" and getattr(t.value, "id", "") == "benchmark":
                    return node.value.value
    return None


def _description(item) -> str:
    name = getattr(item, "originalname", None) or item.name
    cls = getattr(item, "cls", None)
    return f"{cls.__name__}.{name}" if cls is not None else name


def label(item, module: str, group_by: str) -> str:
    """The label `--benchmark-group-by` names (pytest-benchmark's choices, comma-separated)."""
    callspec = getattr(item, "callspec", None)
    parts = []
    for key in [k.strip() for k in (group_by or "group").split(",") if k.strip()]:
        if key == "group":
            marker = item.get_closest_marker("benchmark")
            group = (marker.kwargs.get("group") if marker is not None else None) or _group_from_body(item)
            parts.append(str(group) if group else module)
        elif key == "func":
            parts.append(_description(item))
        elif key == "fullfunc":
            parts.append(f"{module}::{_description(item)}")
        elif key == "name":
            parts.append(item.name)
        elif key == "fullname":
            parts.append(item.nodeid)
        elif key == "param":
            parts.append(callspec.id if callspec is not None else "")
        elif key.startswith("param:"):
            value = callspec.params.get(key[6:], "") if callspec is not None else ""
            parts.append(f"{key[6:]}={value}")
        else:
            raise ValueError(
                f"--benchmark-group-by {key!r} is not one of group, func, fullfunc, name, fullname, param, param:NAME"
            )
    return " ".join(p for p in parts if p) or module


def _shown(path: Path, shown_root: Path) -> str:
    return str(path.relative_to(shown_root)) if path.is_relative_to(shown_root) else str(path)


def _module_name(path: Path, folder: Path) -> str:
    base = folder if folder.is_dir() else folder.parent
    rel = path.relative_to(base) if path.is_relative_to(base) else Path(path.name)
    return ".".join(rel.with_suffix("").parts)


def _missing_package(message: str) -> str | None:
    """The top-level package a collection error says is missing, when it is not installed here
    (a missing module of a package that is installed, the project's own included, stays an error)."""
    import importlib.util

    m = re.match(r"ModuleNotFoundError: No module named '([\w.]+)'", message)
    if m is None:
        return None
    top = m.group(1).split(".")[0]
    try:
        return top if importlib.util.find_spec(top) is None else None
    except (ImportError, ValueError):
        return top


def _one_line(report) -> tuple[str, str]:
    """A failed collect report as (message, file:line) in one line each."""
    text = str(report.longrepr).strip()
    lines = [ln[1:].strip() for ln in text.splitlines() if ln.startswith("E ")]
    message = lines[-1] if lines else (text.splitlines()[-1] if text else "collection failed")
    where = ""
    path = str(getattr(report, "fspath", "") or "")
    for m in re.finditer(r"(\S+\.py):(\d+)", text):
        if path and m.group(1).endswith(Path(path).name):
            where = f"{path}:{m.group(2)}"
    return message, where or path


def entries(
    s: Session, files: list[Path], *, folder: Path, shown_root: Path, env: str
) -> tuple[list[Any], list[Failure], list[Note]]:
    """The benchmarks of a collected session as discover's entries, its failures and its notes."""
    from regress.suite.discover import Entry

    group_by = s.config.getoption("benchmark_group_by") or "group"
    s.plugin.shown_root = shown_root
    made, failures, notes = [], [], []
    with_benchmarks: set[Path] = set()
    root = Path(str(s.config.rootpath))
    for report in s.plugin.errors:
        message, where = _one_line(report)
        shown_where = _shown(root / where, shown_root) if where and not Path(where).is_absolute() else where
        missing = _missing_package(message)
        if missing:  # a module needing a package not installed here (through any import): not a benchmark here
            file = _shown(root / report.fspath, shown_root) if report.fspath else shown_where
            notes.append(Note(file, f"imports {missing}, which is not installed here: not measured"))
            continue
        failures.append(Failure(FailureKind.SUITE, message, shown_where))
    for report in s.plugin.skips:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        where = _shown(root / report.fspath, shown_root) if report.fspath else ""
        failures.append(Failure(FailureKind.SKIPPED, reason.removeprefix("Skipped: "), where))
    failed_files = {root / r.fspath for r in [*s.plugin.errors, *s.plugin.skips] if r.fspath}
    for item in s.items:
        if "benchmark" not in getattr(item, "fixturenames", ()):
            continue
        path = Path(str(item.path))
        with_benchmarks.add(path)
        module = _module_name(path, folder)
        callspec = getattr(item, "callspec", None)
        try:
            name = label(item, module, group_by)
        except ValueError as exc:
            failures.append(Failure(FailureKind.SUITE, str(exc), _shown(path, shown_root)))
            return [], failures, notes
        spec = TaskSpec(
            stmt=item.nodeid,
            label=name,
            sub_label=callspec.id if callspec is not None else None,
            description=_description(item),
            env=env,
            num_threads=1,
        )
        line = (item.location[1] or 0) + 1 if item.location else 0
        origin = f"{_shown(path, shown_root)}:{line} {item.nodeid}"
        skip = None
        try:
            from _pytest.skipping import evaluate_skip_marks

            found = evaluate_skip_marks(item)
            skip = found.reason if found is not None else None
        except Exception:  # noqa: BLE001 - a skipif that fails to evaluate: pytest reports it when the test runs
            skip = None
        made.append(Entry(spec, origin, None, getattr(item, "module", None), skip=skip, item=item))
    for path in files:
        if path not in with_benchmarks and path not in failed_files:
            notes.append(
                Note(_shown(path, shown_root), "has no test that requests the benchmark fixture: not a benchmark")
            )
    return made, failures, notes


@dataclass(frozen=True)
class Outcome:
    """How one benchmark test ended: what the timed callback returned, or why it has no measurement."""

    measured: Any = None  # the worker's message for the timed call
    failure: Failure | None = None


def run(entry, nextitem, plugin, on_timer: Callable[[Any, bool], Any]) -> Outcome:
    """Run one benchmark test (fixtures, body, teardown); `on_timer(timer, per_call)` measures its call."""
    from _pytest.runner import runtestprotocol

    got: list = []

    def timed(timer, per_call: bool) -> None:
        got.append(on_timer(timer, per_call))

    plugin.timed = timed
    try:
        reports = runtestprotocol(entry.item, nextitem=nextitem, log=False)
    finally:
        plugin.timed = None
    for rep in reports:
        if rep.skipped and rep.when in ("setup", "call"):
            reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
            return Outcome(
                failure=Failure(FailureKind.SKIPPED, reason.removeprefix("Skipped: "), entry.origin.split(" ")[0])
            )
    for rep in reports:
        if rep.failed:
            crash = getattr(rep.longrepr, "reprcrash", None)
            message = (
                crash.message.splitlines()[0]
                if crash is not None and crash.message
                else rep.longreprtext.strip().splitlines()[-1:]
            )
            if isinstance(message, list):
                message = message[0] if message else "failed"
            where = entry.origin.split(" ")[0]
            if crash is not None:
                root = getattr(plugin, "shown_root", None)
                path = Path(crash.path)
                where = f"{_shown(path, root) if root is not None else path}:{crash.lineno}"
            phase = "" if rep.when == "call" else f" (in {rep.when})"
            return Outcome(failure=Failure(FailureKind.ERROR, message + phase, where))
    if not got:
        return Outcome(
            failure=Failure(
                FailureKind.ERROR, f"{entry.item.name} did not call the benchmark fixture", entry.origin.split(" ")[0]
            )
        )
    return Outcome(measured=got[0])
