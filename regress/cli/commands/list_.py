"""`regress list`: the benchmarks the suite defines here."""

from __future__ import annotations

from regress.cli import flags
from regress.cli.console import err
from regress.core.kinds import FailureKind


def add(sub) -> None:
    p = sub.add_parser("list", help="the discovered benchmarks, one identity a line")
    flags.common(p)
    flags.benchmarks_dir(p)
    p.set_defaults(run=run)


def run(args) -> int:
    from regress.flows import runner

    found = runner.list_benchmarks(flags.load_config(args))
    for spec, origin, skip in found.listed:
        print(f"{spec.id}\t{origin}" + (f"\t(skipped here: {skip})" if skip else ""))
    for note in found.notes:  # what the folder holds besides benchmarks, each once with why
        print(str(note))
    problems = []
    for f in found.failures:
        if f.kind == FailureKind.SKIPPED:
            print(f"{f.where}\t(skipped here: {f.message})")
        else:
            problems.append(f)
            err(f"regress: error: {f.where}: {f.message}" if f.where else f"regress: error: {f.message}")
    return 2 if problems else 0
