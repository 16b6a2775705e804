"""`regress show`: one commit's stored results as a Compare table."""

from __future__ import annotations

import sys

from regress.cli import flags
from regress.core.errors import RegressError
from regress.core.kinds import FailureKind
from regress.storage.session import Session


def add(sub) -> None:
    p = sub.add_parser("show", help="a commit's results as a Compare table")
    flags.common(p)
    p.add_argument("revision", nargs="?", default="HEAD", metavar="REV")
    p.set_defaults(run=run)


def run(args) -> int:
    with Session(flags.load_config(args)) as session:
        return _show(args, session)


def _show(args, session: Session) -> int:
    from regress.output.compare_tables import compare_table, instruction_table
    from regress.output.metric_tables import metric_tables
    from regress.storage import gitrepo  # here: importing the CLI (as compare does) skips gitpython

    cfg, store = session.cfg, session.store
    sha = gitrepo.resolve_one(session.repo, args.revision, what="show")
    results = []
    for env in cfg.env.split(","):  # --env a,b: both environments in one table (A/B)
        result = store.load(cfg.machine_name, env, sha)
        if result is None:
            raise RegressError(
                f"no results for {args.revision} ({sha[:10]}) on machine '{cfg.machine_name}', env '{env}' "
                f"in {cfg.results_dir}; measure it with `regress run {args.revision}`"
                + (f" --env {env}" if env != "default" else "")
            )
        results.append(result)
    c = results[0].commit
    print(f"{c.short} {c.subject}")
    for result in results:
        fp = result.fingerprint
        print(
            f"machine {result.machine}, env {result.env}: torch {fp.torch_version}, python {fp.python}, {fp.cpu}"
            + (f", {fp.cuda_device}" if fp.cuda_device else "")
        )
    table = compare_table(results, color=sys.stdout.isatty())
    if table:
        print(table)
        for result in results:
            _detects(session, result, prefix=f"({result.env}) " if len(results) > 1 else "")
    for result in results:
        prefix = f"({result.env}) " if len(results) > 1 else ""
        counts = instruction_table(result)
        if counts:
            print(prefix + counts)
        others = metric_tables(result)
        if others:
            print(prefix + others)
        for r in result.failed:
            print(f"failed: {prefix}{r.id}: {r.failure}")
        for r in result.skipped:
            assert r.failure is not None  # a skip is a failure of kind SKIPPED
            print(f"skipped: {prefix}{r.id}: {r.failure.message}")
        for f in result.failures:
            print(f"{'skipped' if f.kind == FailureKind.SKIPPED else 'problem'}: {prefix}{f}")
        if not result.complete:
            print(f"incomplete: {prefix}the run was interrupted; `regress run --skip-existing` measures the rest")
    return 0


def _detects(session: Session, result, *, prefix: str) -> None:
    """After the Compare table: what each benchmark can detect, from this commit's rounds and the history's noise."""
    from regress.flows import detects as detect_flow
    from regress.output import detects

    cfg = session.cfg
    seen = detect_flow.at_commit(session, result.env, result, threshold=cfg.threshold)
    found = detects.lines(seen, threshold=cfg.threshold, rounds=cfg.min_rounds, most_rounds=cfg.max_rounds)
    if found:
        print(prefix + "\n".join(found))
