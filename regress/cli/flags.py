"""Flags several commands share, and their validators: one message per mistake."""

from __future__ import annotations

import argparse
import re

from regress.core import config
from regress.core.errors import RegressError
from regress.core.metric_specs import THRESHOLD_KEYS


class Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, not usage + traceback-ish noise
        raise RegressError(f"{message}; see `{self.prog} --help`")


def _typed(check):
    """An argparse type from one of config's checks, so a flag and its [tool.regress] key say the same."""

    def parse(text: str):
        try:
            return check(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"{text!r} {exc}") from None

    parse.__name__ = check.__name__
    return parse


positive_float = _typed(config.positive_float)
count = _typed(config.count)
threshold = _typed(config.threshold)
rounds = _typed(config.rounds)
pattern = _typed(config.pattern)


def shard(text: str):
    from regress.measure.shard import parse

    try:
        return parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def common(p: argparse.ArgumentParser) -> None:
    p.add_argument("-C", dest="project", metavar="DIR", help="the project to measure (default: current folder)")
    p.add_argument("--results", metavar="DIR", help="results folder (default: .regress)")
    p.add_argument("--machine", metavar="NAME", help="machine name results are stored under (default: hostname)")
    p.add_argument("--env", metavar="NAME", help="environment name for A/B between builds (default: 'default')")


def project_only(p: argparse.ArgumentParser) -> None:
    """-C and --results: commands that take every machine and environment at once."""
    p.add_argument("-C", dest="project", metavar="DIR", help="the project (default: current folder)")
    p.add_argument("--results", metavar="DIR", help="results folder (default: .regress)")
    p.set_defaults(machine=None, env=None)


def default(name: str) -> str:
    """A [tool.regress] key's default as a flag's help writes it, read from its one definition
    (`config.DEFAULT`; a metric's threshold from `metric_specs`)."""
    value = THRESHOLD_KEYS[name] if name in THRESHOLD_KEYS else getattr(config.DEFAULT, name)
    return f"{value * 100:g}%%" if "threshold" in name else f"{value:g}"


def round_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--min-rounds",
        type=count,
        metavar="N",
        help=f"rounds every benchmark gets at each commit (default {default('min_rounds')})",
    )
    p.add_argument(
        "--max-rounds",
        type=count,
        metavar="N",
        help=f"rounds a benchmark whose rounds disagree may get (default {default('max_rounds')})",
    )
    p.add_argument(
        "--budget",
        type=positive_float,
        metavar="SECONDS",
        help=f"seconds of measuring per commit before only --min-rounds are taken (default {default('budget')})",
    )


def threshold_flag(p: argparse.ArgumentParser, what: str, *, per_metric: bool = False) -> None:
    """--threshold: without it, `threshold` of [tool.regress] (with --metric, that metric's own)."""
    own = "; with --metric, that metric's own" if per_metric else ""
    p.add_argument(
        "--threshold",
        type=threshold,
        metavar="PCT",
        help=f"{what} (default: threshold in [tool.regress], {default('threshold')}{own})",
    )


def bench(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bench", type=pattern, metavar="REGEX", default="", help="only benchmarks whose identity matches")


def min_run_time(p: argparse.ArgumentParser, when: str = "") -> None:
    p.add_argument(
        "--min-run-time",
        type=positive_float,
        metavar="SECONDS",
        help=f"{when}blocked_autorange min_run_time per round (default {default('min_run_time')})",
    )


# The epilog of the commands that take `-- PATH...` after their flags (`cli/paths.py`).
PATHS_EPILOG = (
    "after the flags, `-- PATH...` limits the commits to those touching the paths, as `git log A..B -- PATH` does"
)


def benchmarks_dir(p: argparse.ArgumentParser) -> None:
    p.add_argument("--benchmarks", metavar="PATH", help="benchmark folder, or one benchmark file (default: benchmarks)")
    p.add_argument(
        "--pytest-args",
        metavar="ARGS",
        help="arguments for pytest when the benchmarks are pytest-benchmark tests, as one string "
        "(options a conftest.py adds: --pytest-args='--device cpu'); default: pytest_args of [tool.regress]",
    )


def bench_pattern(text: str) -> re.Pattern:
    """The --bench filter compiled (the flag's type has already checked it)."""
    return re.compile(text)


def _benchmark_path(text: str | None, root) -> str | None:
    """--benchmarks as the project's config keeps it: a path from the project's root (one typed
    relative to the current folder, when it names something there, is made so)."""
    import os
    from pathlib import Path

    if text is None:
        return None
    here = Path(os.getcwd()) / text
    if not Path(text).is_absolute() and here.exists() and here.resolve().is_relative_to(root.resolve()):
        return str(here.resolve().relative_to(root.resolve()))
    return text


def _pytest_args(text: str | None) -> tuple[str, ...] | None:
    if text is None:
        return None
    try:
        return config.arguments(text)
    except ValueError as exc:
        raise RegressError(f"--pytest-args {text!r} {exc}") from None


def load_config(args) -> config.Config:
    """The project's config with this command's flags on top."""
    import os
    from pathlib import Path

    from regress.storage.session import project_root

    root = project_root(Path(args.project or os.getcwd()))
    return config.load(
        root,
        results=args.results,
        machine=args.machine,
        env=args.env,
        benchmarks=_benchmark_path(getattr(args, "benchmarks", None), root),
        pytest_args=_pytest_args(getattr(args, "pytest_args", None)),
        python=getattr(args, "python", None),
        min_run_time=getattr(args, "min_run_time", None),
        timeout=getattr(args, "timeout", None),
        min_rounds=getattr(args, "min_rounds", None),
        max_rounds=getattr(args, "max_rounds", None),
        budget=getattr(args, "budget", None),
    )
