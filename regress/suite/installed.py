"""A measured commit imports as if it were installed: its packages, its metadata, its version file.

Runs inside the worker, before anything of the commit is imported. Three
things a bare checkout lacks and an installed project has:

- **Its packages win.** The commit's top-level packages and modules (those
  under its import path) are pinned to it by a `sys.meta_path` finder, so a
  conftest that pytest imports from the working tree's root, which pytest's
  `prepend` import mode puts first on `sys.path`, still gets the measured
  commit's code, not the working tree's.
- **Its distribution.** `importlib.metadata.version("pkg")` (what every
  setuptools-scm or hatch-vcs project calls in its `__init__`) finds the
  project: name from `pyproject.toml` (`[project] name`), else `setup.cfg`
  (`[metadata] name`), else a literal `name=` in `setup.py`; version from the
  same metadata when it is written there, else `PLACEHOLDER`. It is found by
  name only (enumerations such as `entry_points()` see what is really
  installed), and before any installed copy, whose version is another commit's.
- **Its generated version file.** A `version_file`/`write_to` that setuptools-scm
  or hatch-vcs writes at build time (so no commit has it) is served as a module
  holding that version, when the checkout lacks it.

Nothing is written into the checkout.
"""

from __future__ import annotations

import ast
import configparser
import importlib.abc
import importlib.machinery
import importlib.metadata
import re
import sys
import types
from dataclasses import dataclass
from pathlib import Path

# The version of a project whose metadata does not say it (it comes from git tags at build time).
PLACEHOLDER = "0.0.0"

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass(frozen=True)
class Project:
    """What installing the checkout would have made known: its name, version and version files."""

    name: str
    version: str
    version_files: tuple[str, ...] = ()  # paths relative to the checkout, written at build time


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pyproject(root: Path) -> dict:
    try:
        return tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}


def _setup_cfg(root: Path) -> dict[str, str]:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(root / "setup.cfg", encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError):
        return {}
    return dict(parser["metadata"]) if parser.has_section("metadata") else {}


def _setup_py(root: Path) -> dict[str, str]:
    """Literal `name=` and `version=` of the `setup(...)` call in setup.py (never executed)."""
    try:
        tree = ast.parse((root / "setup.py").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return {}
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "setup":
            for kw in node.keywords:
                literal = kw.value.value if isinstance(kw.value, ast.Constant) else None
                if kw.arg in ("name", "version") and isinstance(literal, str):
                    found[kw.arg] = literal
    return found


def project(root: Path) -> Project | None:
    """The project at `root` as its packaging files describe it; None when none names it."""
    data = _pyproject(root)
    table = data.get("project", {}) if isinstance(data.get("project"), dict) else {}
    cfg, py = _setup_cfg(root), _setup_py(root)
    name = table.get("name") or cfg.get("name") or py.get("name")
    if not isinstance(name, str) or not name.strip():
        return None
    declared = cfg.get("version", "")
    if declared.startswith(("attr:", "file:")):  # read at build time: not metadata written down
        declared = ""
    version = table.get("version") or declared or py.get("version") or PLACEHOLDER
    tool = data.get("tool", {}) if isinstance(data.get("tool"), dict) else {}
    files = []
    scm = tool.get("setuptools_scm", {})
    if isinstance(scm, dict):
        files += [scm.get("version_file"), scm.get("write_to")]
    vcs = tool.get("hatch", {})
    for key in ("build", "hooks", "vcs"):
        vcs = vcs.get(key, {}) if isinstance(vcs, dict) else {}
    if isinstance(vcs, dict):
        files.append(vcs.get("version-file"))
    wanted = tuple(f for f in files if isinstance(f, str) and f.endswith(".py"))
    return Project(name.strip(), str(version), wanted)


class _Distribution(importlib.metadata.Distribution):
    """The checkout's metadata, as an installed wheel's METADATA would say it."""

    def __init__(self, proj: Project) -> None:
        self._text = f"Metadata-Version: 2.1\nName: {proj.name}\nVersion: {proj.version}\n"

    def read_text(self, filename):
        return self._text if filename in ("METADATA", "PKG-INFO") else None

    def locate_file(self, path):
        return Path(path)


class _MetadataFinder(importlib.metadata.DistributionFinder):
    """Finds the checkout's distribution when asked for it by name, before any installed copy."""

    def __init__(self, proj: Project) -> None:
        self.proj = proj
        self.key = _normal(proj.name)

    def find_spec(self, *args, **kwargs):  # only a metadata finder: imports are not its business
        return None

    def find_distributions(self, context=importlib.metadata.DistributionFinder.Context()):
        if context.name is not None and _normal(context.name) == self.key:
            return iter([_Distribution(self.proj)])
        return iter(())


class _VersionModule(importlib.abc.Loader):
    def __init__(self, version: str) -> None:
        self.version = version

    def create_module(self, spec):
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        parts = tuple(int(p) if p.isdigit() else p for p in re.split(r"[.+]", self.version))
        module.__dict__.update(
            version=self.version, __version__=self.version, version_tuple=parts, __version_tuple__=parts
        )


class _PinFinder(importlib.abc.MetaPathFinder):
    """The commit's own top-level packages and modules, from its import path whatever sys.path says;
    and its build-time version files, where the checkout lacks them."""

    def __init__(self, import_path: Path, names: frozenset[str], versions: dict[str, str]) -> None:
        self.path = [str(import_path)]
        self.names = names
        self.versions = versions  # module name -> version

    def find_spec(self, fullname, path=None, target=None):
        if fullname in self.versions:
            return importlib.machinery.ModuleSpec(fullname, _VersionModule(self.versions[fullname]))
        if fullname in self.names:
            return importlib.machinery.PathFinder.find_spec(fullname, self.path)
        return None


# Files at a project's root that are never the project's importable code.
_NOT_CODE = frozenset({"setup", "conftest", "noxfile", "fabfile", "tasks", "versioneer"})


def top_level(import_path: Path) -> frozenset[str]:
    """The packages (folders with __init__.py) and modules directly under `import_path`."""
    names = set()
    try:
        children = list(import_path.iterdir())
    except OSError:
        return frozenset()
    for child in children:
        if child.is_dir() and child.name.isidentifier() and (child / "__init__.py").is_file():
            names.add(child.name)
        elif child.suffix == ".py" and child.stem.isidentifier() and child.stem not in _NOT_CODE:
            names.add(child.stem)
    return frozenset(names)


def install(checkout: Path, import_path: Path, leave_out: frozenset[str] = frozenset()) -> Project | None:
    """Make the commit at `checkout` import as if installed (see the module docstring); its Project.

    `leave_out`: top-level names never pinned (the benchmark folder's, which may come from the working tree)."""
    proj = project(checkout)
    versions = {}
    if proj is not None:
        sys.meta_path.insert(0, _MetadataFinder(proj))
        for rel in proj.version_files:
            file = checkout / rel
            if file.is_file() or not file.is_relative_to(import_path):
                continue
            parts = file.with_suffix("").relative_to(import_path).parts
            if parts and all(p.isidentifier() for p in parts):
                versions[".".join(parts)] = proj.version
    names = top_level(import_path) - leave_out
    if names or versions:
        sys.meta_path.insert(0, _PinFinder(import_path, names, versions))
    return proj
