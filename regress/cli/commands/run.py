"""`regress run`: measure commits, round after round, and store what finished."""

from __future__ import annotations

from regress.cli import flags
from regress.cli.console import err, plural
from regress.core.kinds import BenchmarksFrom, FailureKind, Mode
from regress.core.records import WORKTREE, CommitResult


def add(sub) -> None:
    p = sub.add_parser(
        "run",
        help="measure commits (default HEAD)",
        usage="regress run [options] [REV ...] [-- PATH ...]",
        epilog=flags.PATHS_EPILOG,
    )
    flags.common(p)
    p.add_argument(
        "revisions", nargs="*", metavar="REV", help=f"commits or ranges (A..B, HEAD~5..HEAD, HEAD^!), or {WORKTREE}"
    )
    p.add_argument("--skip-existing", action="store_true", help="skip commits already measured on this machine")
    flags.bench(p)
    p.add_argument(
        "--benchmarks-from",
        choices=[b.value for b in BenchmarksFrom],
        default=BenchmarksFrom.WORKTREE.value,
        help="suite definitions from the working tree (default) or each commit",
    )
    flags.benchmarks_dir(p)
    p.add_argument(
        "--mode",
        choices=[m.value for m in Mode],
        default=Mode.TIME.value,
        help="wall time (default) or callgrind instruction counts (needs valgrind)",
    )
    p.add_argument("--python", metavar="PATH", help="interpreter the benchmarks run under")
    flags.min_run_time(p)
    p.add_argument(
        "--timeout",
        type=flags.positive_float,
        metavar="SECONDS",
        help=f"per-benchmark time limit (default {flags.default('timeout')})",
    )
    p.add_argument(
        "--shard",
        type=flags.shard,
        metavar="K/N",
        help="only the K-th of N shares of the benchmarks (parallel CI jobs; `regress merge` joins them)",
    )
    p.add_argument(
        "--paired",
        action="store_true",
        default=None,
        help="also measure the newest already-measured ancestor in this run, interleaved "
        "(what a push job does: each push carries a same-machine comparison with what came before)",
    )
    flags.round_flags(p)
    p.set_defaults(run=run)


def run(args) -> int:
    from regress.flows import runner
    from regress.measure.progress import ConsoleProgress

    cfg = flags.load_config(args)
    options = runner.Options(
        revisions=tuple(args.revisions) or ("HEAD",),
        skip_existing=args.skip_existing,
        bench=args.bench,
        benchmarks_from=BenchmarksFrom(args.benchmarks_from),
        mode=Mode(args.mode),
        shard=args.shard,
        paired=bool(args.paired),
        paths=getattr(args, "paths", ()),
    )
    progress = ConsoleProgress()
    try:
        summary = runner.run(cfg, options, progress)
    finally:
        progress.close()
    if summary.paired:
        print(f"paired with {summary.paired[:10]}, the newest measured ancestor, measured again in this run")
    if summary.skipped:
        n = len(summary.skipped)
        print(
            f"{plural(n, 'commit')} already measured, skipped (--skip-existing): "
            + " ".join(sha[:10] for sha in summary.skipped[:5])
            + (" ..." if n > 5 else "")
        )
    for result in summary.measured:
        _print_summary(result)
    for line in summary.replaced:
        print(f"replaced: {line}")
    if not summary.measured:
        return 0
    newest = summary.measured[-1]
    broken = [f for f in newest.problems if f.kind == FailureKind.SUITE]
    if broken:
        for f in broken:
            err(f"regress: error: {f.where}: {f.message}; fix the suite file")
        return 2
    return 1 if newest.failed or newest.problems else 0


def _print_summary(result: CommitResult) -> None:
    ok = sum(r.ok or r.counted or bool(r.tracked) for r in result.results)
    rounds = [len(r.samples) for r in result.results if r.ok]
    head = f"{result.commit.short} {result.commit.subject[:60]}: {ok} measured"
    if rounds and max(rounds) > 1:
        spread = f"{min(rounds)}-{max(rounds)}" if min(rounds) != max(rounds) else f"{rounds[0]}"
        head += f" ({spread} rounds each)"
    problems = [f"  {r.id}: {r.failure}" for r in result.failed] + [f"  {f}" for f in result.problems]
    skipped = len(result.skipped) + len(result.failures) - len(result.problems)
    if problems:
        head += f", {plural(len(problems), 'problem')}"
    if skipped:
        head += f", {skipped} skipped"
    print(head)
    for line in problems:
        print(line)
    reasons = {r.failure.message for r in result.skipped if r.failure is not None} | {
        f.message for f in result.failures if f.kind == FailureKind.SKIPPED
    }
    for reason in sorted(reasons):
        print(f"  skipped: {reason}")
