"""`[tool.regress]` of the measured project's pyproject.toml, with flags on top."""

from __future__ import annotations

import socket
import sys
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from regress.core.errors import RegressError
from regress.core.kinds import Metric
from regress.core.metric_specs import THRESHOLD_KEYS, spec
from regress.core.timing import Timing

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass(frozen=True)
class Config(Timing):
    """The measured project's settings: `[tool.regress]` keys, with the timing ones (`Timing`) shared with results."""

    root: Path
    benchmarks: str = "benchmarks"
    results: str = ".regress"
    # Where the measured commit's importable code lives, relative to its root;
    # "" picks "src" when the commit has one, else the root.
    import_path: str = ""
    build_command: str = ""
    machine: str = ""
    env: str = "default"
    python: str = ""
    repo_url: str = ""
    # The published site's address: the pull-request comment and the issues link charts there.
    site_url: str = ""
    threshold: float = spec(Metric.TIME).threshold
    # The other metrics' thresholds set in [tool.regress] (`memory_threshold = "2%"`), by key;
    # a key not set reads its metric's default (`metric_specs`).
    metric_thresholds: tuple[tuple[str, float], ...] = ()
    # The round plan of `regress run` (see adaptive.py), chosen on a shared 2-core runner
    # (docs/statistics.md): rounds every benchmark gets at a commit, rounds one whose
    # rounds disagree may reach, and seconds of measuring per commit.
    min_rounds: int = 5
    max_rounds: int = 15
    budget: float = 25.0
    # What "the same code" means (storage/code_identity.py): git paths whose
    # trees make a commit's measured code; () reads it from import_path. With a
    # build_command, build_inputs are the files it reads (() : the whole tree).
    code_paths: tuple[str, ...] = ()
    build_inputs: tuple[str, ...] = ()
    # `regress run` measures the newest measured ancestor in the same run (a push's pair).
    paired: bool = False
    # Arguments for pytest when the benchmark path holds pytest-benchmark tests (options a conftest adds).
    pytest_args: tuple[str, ...] = ()

    @property
    def benchmarks_dir(self) -> Path:
        return self.root / self.benchmarks

    @property
    def results_dir(self) -> Path:
        return self.root / self.results

    def threshold_for(self, metric: Metric) -> float:
        """The threshold `metric` is judged with: its `[tool.regress]` key's value, else its default."""
        s = spec(metric)
        if s.config_key == "threshold":
            return self.threshold
        return dict(self.metric_thresholds).get(s.config_key, s.threshold)

    @property
    def machine_name(self) -> str:
        return self.machine or socket.gethostname() or "localhost"

    @property
    def python_exe(self) -> str:
        return self.python or sys.executable


# Every setting's default, for the flags' help: the fields above are its one definition.
DEFAULT = Config(root=Path())
# The [tool.regress] keys: Config's fields, and the per-metric thresholds in place of `metric_thresholds`.
_KEYS = {f.name for f in fields(Config)} - {"root", "metric_thresholds"} | set(THRESHOLD_KEYS)


# -- value checks: one per kind of setting, shared with the command-line flags.
# Each takes the flag's text or the TOML value and raises ValueError with the
# end of a sentence ("must be positive") naming what is wrong.


def _number(value, kind=float):
    if isinstance(value, bool):
        raise ValueError(f"is not a {'whole ' if kind is int else ''}number")
    if kind is int and isinstance(value, float) and not value.is_integer():
        raise ValueError("is not a whole number")
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise ValueError(f"is not a {'whole ' if kind is int else ''}number") from None


def positive_float(value) -> float:
    number = _number(value)
    if not number > 0 or number == float("inf"):
        raise ValueError("must be positive")
    return number


def count(value) -> int:
    number = _number(value, int)
    if number < 1:
        raise ValueError("must be at least 1")
    return number


def zero_or_more(value) -> int:
    number = _number(value, int)
    if number < 0:
        raise ValueError("must be 0 or more")
    return number


def rounds(value) -> int:
    number = _number(value, int)
    if not 1 <= number <= 1000:
        raise ValueError("must be between 1 and 1000")
    return number


def threshold(value) -> float:
    """'5%' or 0.05; a bare number of 1 or more is surely a percentage without its sign."""
    raw = value.strip() if isinstance(value, str) else value
    percent = isinstance(raw, str) and raw.endswith("%")
    try:
        number = _number(raw[:-1] if percent else raw) / (100 if percent else 1)
    except ValueError:
        raise ValueError("is not a threshold; write it like 5% or 0.05") from None
    if not percent and number >= 1:
        raise ValueError(f"would mean {number * 100:g}%; write {raw}% if you meant percent")
    if not 0 <= number < 10:
        raise ValueError("must be between 0% and 1000%")
    return number


def pattern(value) -> str:
    """A --bench filter: a regular expression over benchmark identities."""
    import re

    text = _text(value)
    try:
        re.compile(text)
    except re.error as exc:
        raise ValueError(
            f"is not a valid regular expression ({exc}); quote it, or escape the special characters"
        ) from None
    return text


def paths(value) -> tuple[str, ...]:
    """A list of paths relative to the project's root."""
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ValueError('must be a list of paths, like ["src/mypkg", "setup.py"]')
    if any(v.startswith("/") or ".." in v.split("/") for v in value):
        raise ValueError("must name paths inside the repository (relative, no '..')")
    return tuple(v.strip("/") or "." for v in value)


def arguments(value) -> tuple[str, ...]:
    """Command-line arguments: one string (split as a shell would) or a list of strings."""
    import shlex

    if isinstance(value, str):
        try:
            return tuple(shlex.split(value))
        except ValueError as exc:
            raise ValueError(f"cannot be split into arguments ({exc})") from None
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ValueError('must be a string or a list of strings, like "--device cpu" or ["--device", "cpu"]')


def flag(value) -> bool:
    if not isinstance(value, bool):
        raise ValueError("must be true or false")
    return value


def _text(value) -> str:
    if not isinstance(value, str):
        raise ValueError("must be a string")
    return value


CHECKS = {
    "min_run_time": positive_float,
    "timeout": positive_float,
    "warmup": zero_or_more,
    "threshold": threshold,
    **dict.fromkeys(THRESHOLD_KEYS, threshold),
    "min_rounds": count,
    "max_rounds": count,
    "budget": positive_float,
    "code_paths": paths,
    "build_inputs": paths,
    "paired": flag,
    "pytest_args": arguments,
}


def _checked(name: str, value, source: str):
    try:
        return CHECKS.get(name, _text)(value)
    except ValueError as exc:
        raise RegressError(f"{source}: '{name}' {exc}, got {value!r}; fix it in [tool.regress]") from None


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
    # Each value of the type of its Config field (`CHECKS`), and the per-metric thresholds' floats.
    values: dict[str, Any] = {}
    per_metric: dict[str, float] = {}
    for key, value in table.items():
        name = key.replace("-", "_")
        if name not in _KEYS:
            raise RegressError(
                f"{pyproject}: unknown key '{key}' in [tool.regress]; known keys: {', '.join(sorted(_KEYS))}"
            )
        (per_metric if name in THRESHOLD_KEYS else values)[name] = _checked(name, value, str(pyproject))
    cfg = Config(root=root, metric_thresholds=tuple(sorted(per_metric.items())), **values)
    flags = {k: v for k, v in overrides.items() if v is not None}
    cfg = replace(cfg, **flags) if flags else cfg
    if cfg.max_rounds < cfg.min_rounds:
        if "max_rounds" not in values and "max_rounds" not in flags:  # only the floor was raised: lift the ceiling
            return replace(cfg, max_rounds=cfg.min_rounds)
        raise RegressError(
            f"max_rounds ({cfg.max_rounds}) is below min_rounds ({cfg.min_rounds}); "
            "raise max_rounds (--max-rounds) or lower min_rounds (--min-rounds)"
        )
    return cfg
