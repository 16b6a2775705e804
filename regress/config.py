"""`[tool.regress]` of the measured project's pyproject.toml, with flags on top."""

from __future__ import annotations

import socket
import sys
from dataclasses import dataclass, fields, replace
from pathlib import Path

from .errors import RegressError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass(frozen=True)
class Config:
    root: Path
    benchmarks: str = "benchmarks"
    results: str = ".regress"
    # Where the measured commit's importable code lives, relative to its root;
    # "" picks "src" when the commit has one, else the root.
    import_path: str = ""
    build_command: str = ""
    min_run_time: float = 0.2
    warmup: int = 1
    timeout: float = 600.0
    machine: str = ""
    env: str = "default"
    python: str = ""
    repo_url: str = ""
    threshold: float = 0.05
    # The round plan of `regress run` (see adaptive.py): rounds per benchmark
    # and seconds of measuring per commit.
    min_rounds: int = 5
    max_rounds: int = 15
    budget: float = 25.0

    @property
    def benchmarks_dir(self) -> Path:
        return self.root / self.benchmarks

    @property
    def results_dir(self) -> Path:
        return self.root / self.results

    @property
    def machine_name(self) -> str:
        return self.machine or socket.gethostname() or "localhost"

    @property
    def python_exe(self) -> str:
        return self.python or sys.executable


_TYPES = {f.name: f.type for f in fields(Config)}
_KNOWN = sorted(n for n in _TYPES if n != "root")


def _coerce(name: str, value, source: str):
    kind = _TYPES[name]
    try:
        if kind == "float":
            if isinstance(value, bool):
                raise TypeError
            return float(value)
        if kind == "int":
            if isinstance(value, bool):
                raise TypeError
            return int(value)
        if not isinstance(value, str):
            raise TypeError
        return value
    except (TypeError, ValueError):
        raise RegressError(
            f"{source}: '{name}' must be a {kind}, got {value!r}; fix it in [tool.regress]"
        ) from None


def load(root: Path, **overrides) -> Config:
    """Read [tool.regress] under `root`; `overrides` (flags) win when not None."""
    pyproject = root / "pyproject.toml"
    table: dict = {}
    if pyproject.is_file():
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise RegressError(f"{pyproject}: not valid TOML ({exc}); fix the file") from None
        table = data.get("tool", {}).get("regress", {})
        if not isinstance(table, dict):
            raise RegressError(f"{pyproject}: [tool.regress] must be a table")
    values = {}
    for key, value in table.items():
        name = key.replace("-", "_")
        if name not in _TYPES or name == "root":
            raise RegressError(
                f"{pyproject}: unknown key '{key}' in [tool.regress]; known keys: {', '.join(_KNOWN)}"
            )
        values[name] = _coerce(name, value, str(pyproject))
    for name, lowest in (("min_rounds", 1), ("max_rounds", 1), ("budget", 0.0)):
        if name in values and values[name] < lowest:
            raise RegressError(f"{pyproject}: '{name}' must be at least {lowest:g}, got {values[name]!r}; fix it in [tool.regress]")
    cfg = Config(root=root, **values)
    flags = {k: v for k, v in overrides.items() if v is not None}
    return replace(cfg, **flags) if flags else cfg
