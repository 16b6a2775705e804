"""What each file under the benchmark path is, decided by reading it, before any of it runs.

A benchmark folder holds more than benchmarks: driver scripts, helpers,
modules that need a package this machine lacks, `bench_*` helpers that take
arguments. Each `*.py` (names starting with `_` or `.` left out, as is
`conftest.py`, which is pytest's) is read and parsed, never executed, and is:

- `SUITE`: it defines a regress benchmark (a module-level `bench_*` or
  `track_*` function that takes no required argument, or a definition
  decorated with `regress.benchmark`/`regress.track`); imported as today, and
  an error when it breaks;
- `PYTEST`: a module pytest would collect (its name matches `python_files`);
  pytest collects it, and its tests that request `benchmark` are benchmarks;
- `OTHER`: anything else, named once with why, never imported.

A module whose unconditional top-level import names a package that cannot be
found here is `OTHER` ("needs cv2, which is not installed here"), whatever
else it holds. Runs inside the worker, where the commit's code is on sys.path.
"""

from __future__ import annotations

import ast
import fnmatch
import importlib.util
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

# pytest's default `python_files`.
TEST_FILES = ("test_*.py", "*_test.py")


class FileKind(str, Enum):
    SUITE = "suite"
    PYTEST = "pytest"
    OTHER = "other"


@dataclass(frozen=True)
class Note:
    """Something under the benchmark path that is not a benchmark, and why: `list` and `run` name it once."""

    where: str  # file, or file:line
    message: str

    def __str__(self) -> str:
        return f"{self.where} {self.message}"


@dataclass(frozen=True)
class Classified:
    path: Path
    kind: FileKind
    notes: tuple[Note, ...] = ()
    mentions_benchmark: bool = False  # a PYTEST module whose tests name the `benchmark` fixture


def benchmark_files(where: Path) -> list[Path]:
    """The `*.py` files of a benchmark path: a folder (recursively, `_`/`.` names left out) or one file."""
    if where.is_file():
        return [where]
    files = []
    for path in sorted(where.rglob("*.py")):
        rel = path.relative_to(where)
        if any(part.startswith(("_", ".")) for part in rel.parts) or path.name == "conftest.py":
            continue
        files.append(path)
    return files


def holds_pytest_modules(where: Path) -> bool:
    """Whether a benchmark path holds a file pytest would collect by its default names that names the
    `benchmark` fixture: a quick look (the names and a word), for what the fork servers preload."""
    try:
        found = [p for p in benchmark_files(where) if is_test_file(p, ("test_*.py", "*_test.py"))]
    except OSError:
        return False
    for path in found:
        try:
            if "benchmark" in path.read_text(encoding="utf-8", errors="replace"):
                return True
        except OSError:
            continue
    return False


def is_test_file(path: Path, patterns: Iterable[str]) -> bool:
    """pytest's own rule for `python_files`: a pattern with a path separator matches the path, else the name."""
    for pattern in patterns:
        if "/" in pattern or "\\" in pattern:
            if fnmatch.fnmatch(str(path), pattern) or fnmatch.fnmatch(str(path), "*/" + pattern):
                return True
        elif fnmatch.fnmatch(path.name, pattern):
            return True
    return False


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        return _dotted(node.func)
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return node.id if isinstance(node, ast.Name) else ""


def _from_regress(tree: ast.Module) -> set[str]:
    """Names a module binds to regress's decorators (`from regress import benchmark as b`) or to regress itself."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "regress" and node.level == 0:
            names.update(a.asname or a.name for a in node.names if a.name in ("benchmark", "track"))
        elif isinstance(node, ast.Import):
            names.update((a.asname or a.name) + "." for a in node.names if a.name == "regress")
    return names


def _regress_decorated(fn: ast.AST, bound: set[str]) -> bool:
    for deco in getattr(fn, "decorator_list", ()):
        name = _dotted(deco)
        if name in bound or any(name.startswith(p) and name[len(p) :] in ("benchmark", "track") for p in bound):
            return True
        if name in ("regress.benchmark", "regress.track"):
            return True
    return False


def required_arguments(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """The parameters a call with no arguments would leave unfilled."""
    a = fn.args
    positional = a.posonlyargs + a.args
    needed = [p.arg for p in positional[: len(positional) - len(a.defaults)]]
    needed += [p.arg for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is None]
    return needed


def _imported_top_names(tree: ast.Module) -> list[tuple[str, int]]:
    """(top-level package, line) of every unconditional module-level absolute import."""
    found = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            found += [(a.name.split(".")[0], node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.module.split(".")[0], node.lineno))
    return found


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _runs_as_script(tree: ast.Module) -> bool:
    for node in tree.body:
        if isinstance(node, ast.If) and "__main__" in ast.dump(node.test) and "__name__" in ast.dump(node.test):
            return True
    return False


def _names_benchmark_fixture(tree: ast.Module) -> bool:
    """Some function of the module takes a parameter named `benchmark` (a test or a fixture)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            if any(p.arg == "benchmark" for p in a.posonlyargs + a.args + a.kwonlyargs):
                return True
    return False


def classify(
    path: Path,
    shown: str,
    *,
    test_patterns: Iterable[str] = TEST_FILES,
    importable: Callable[[str], bool] = _importable,
) -> Classified:
    """What the file at `path` (shown to the user as `shown`) is; see the module docstring."""
    is_test = is_test_file(path, test_patterns)
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    except (SyntaxError, ValueError, UnicodeDecodeError, OSError):
        # Broken, so it cannot be read for what it is: loading it reports the error where it is.
        return Classified(path, FileKind.PYTEST if is_test else FileKind.SUITE)
    siblings = {p.stem for p in path.parent.glob("*.py")} | {p.name for p in path.parent.iterdir() if p.is_dir()}
    missing: dict[str, int] = {}
    for name, line in _imported_top_names(tree):
        if name not in siblings and name != "__future__" and name not in missing and not importable(name):
            missing[name] = line
    if missing:
        names = ", ".join(missing)
        which = "which is" if len(missing) == 1 else "which are"
        first = min(missing.values())
        why = f"imports {names}, {which} not installed here: not measured"
        return Classified(path, FileKind.OTHER, (Note(f"{shown}:{first}", why),))
    bound = _from_regress(tree)
    real, taking = 0, []
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if _regress_decorated(node, bound):
            real += 1
        elif node.name.startswith(("bench_", "track_")):
            needed = required_arguments(node)
            if needed:
                taking.append(
                    Note(
                        f"{shown}:{node.lineno}", f"{node.name} takes arguments ({', '.join(needed)}): not a benchmark"
                    )
                )
            else:
                real += 1
    if real:
        return Classified(path, FileKind.SUITE, tuple(taking))
    if is_test:
        return Classified(path, FileKind.PYTEST, tuple(taking), _names_benchmark_fixture(tree))
    if taking:
        return Classified(path, FileKind.OTHER, tuple(taking))
    if _runs_as_script(tree):
        return Classified(path, FileKind.OTHER, (Note(shown, "is a script (it runs under __main__): not a benchmark"),))
    return Classified(
        path, FileKind.OTHER, (Note(shown, "defines no bench_ function or benchmark test: not a benchmark"),)
    )
