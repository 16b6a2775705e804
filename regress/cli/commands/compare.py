"""`regress compare`: per benchmark, both levels, the change and a verdict."""

from __future__ import annotations

import sys

from regress.cli import flags
from regress.cli.console import RoundLines
from regress.core.errors import RegressError
from regress.core.kinds import Metric
from regress.core.metric_specs import BEYOND_TIME, THRESHOLD_KEYS, spec
from regress.core.records import WORKTREE


def add(sub) -> None:
    p = sub.add_parser("compare", help="per benchmark: both levels, the ratio and a verdict")
    flags.common(p)
    p.add_argument("base", metavar="BASE", help="the commit to compare against")
    p.add_argument(
        "head", metavar="HEAD", nargs="?", default="HEAD", help=f"the commit judged (default HEAD; or {WORKTREE})"
    )
    p.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    flags.threshold_flag(p, "smallest change worth reporting", per_metric=True)
    p.add_argument("--fail-on-regression", action="store_true", help="exit 1 if any verdict is regression")
    flags.bench(p)
    p.add_argument(
        "--measure",
        action="store_true",
        help="first take more rounds of both commits, alternating, in fresh processes",
    )
    p.add_argument(
        "--rounds",
        type=flags.rounds,
        metavar="N",
        help="with --measure: rounds per side to reach (default: what the noisy verdicts ask for)",
    )
    flags.benchmarks_dir(p)
    flags.min_run_time(p, "with --measure: ")
    p.add_argument(
        "--mode",
        choices=("time", "instructions"),
        default="time",
        help="compare wall times (default) or callgrind instruction counts "
        f"(threshold {spec(Metric.INSTRUCTIONS).threshold * 100:g}%%)",
    )
    p.add_argument(
        "--metric",
        choices=[m.value for m in BEYOND_TIME],
        help="judge another metric than wall time: bytes per call (allocated, peak), compile figures of "
        "compile=True benchmarks, or track_* values; each with its threshold: "
        + ", ".join(f"{key} {flags.default(key)}" for key in THRESHOLD_KEYS),
    )
    p.add_argument(
        "--env-a",
        metavar="NAME",
        help="environment of BASE (A/B between builds: `regress compare HEAD HEAD --env-a A --env-b B`)",
    )
    p.add_argument("--env-b", metavar="NAME", help="environment of HEAD")
    p.set_defaults(run=run)


def run(args) -> int:
    from regress.analysis import diff
    from regress.flows import comparison
    from regress.output import verdicts as render
    from regress.storage import gitrepo
    from regress.storage.session import Session

    cfg = flags.load_config(args)
    counts = args.mode == "instructions"
    if args.metric and counts:
        raise RegressError("--metric and --mode instructions each pick what to compare; give one of them")
    metric = Metric(args.metric) if args.metric else (Metric.INSTRUCTIONS if counts else Metric.TIME)
    repo = gitrepo.open_repo(cfg.root)
    sides = comparison.Sides(
        base=gitrepo.resolve_one(repo, args.base, what="compare"),
        head=gitrepo.resolve_one(repo, args.head, what="compare"),
        base_env=args.env_a or cfg.env,
        head_env=args.env_b or cfg.env,
        base_rev=args.base,
        head_rev=args.head,
    )
    request = comparison.Request(sides, metric=metric, threshold=args.threshold, bench=args.bench)
    if args.rounds is not None and not args.measure:
        raise RegressError("--rounds only applies with --measure (it sets how many rounds to take)")
    with Session(cfg) as session:
        if args.measure:
            from regress.flows import top_up

            got = top_up.compare(session, request, RoundLines(), more_rounds=args.rounds)
        else:
            got = comparison.compare(session, request)
    v, base, head, threshold = got.verdicts, got.base, got.head, got.threshold
    if args.format == "json":
        print(
            render.compare_json(
                v,
                base=base,
                head=head,
                threshold=threshold,
                machine=cfg.machine_name,
                env=sides.head_env,
                base_env=sides.base_env,
                mode=args.metric or args.mode,
            )
        )
    elif args.format == "markdown":
        print(render.markdown(v, base=base, head=head, threshold=threshold, counts=counts, metric=metric))
    else:
        if sides.base_env != sides.head_env:
            print(f"A/B: base in env '{sides.base_env}', head in env '{sides.head_env}'")
        print(
            render.text(
                v, base=base, head=head, threshold=threshold, color=sys.stdout.isatty(), counts=counts, metric=metric
            )
        )
    return 1 if args.fail_on_regression and diff.any_regression(v) else 0
