"""`regress bisect`: the first commit between two where a benchmark's level moved."""

from __future__ import annotations

import json

from regress.cli import flags
from regress.cli.console import RoundLines, err, plural
from regress.core.errors import RegressError


def add(sub) -> None:
    p = sub.add_parser(
        "bisect",
        help="the first commit between GOOD and BAD where a benchmark's level moved",
        usage="regress bisect [options] GOOD BAD --bench REGEX [-- PATH ...]",
        epilog=flags.PATHS_EPILOG,
    )
    flags.common(p)
    p.add_argument("good", metavar="GOOD", help="a commit at the old level")
    p.add_argument("bad", metavar="BAD", help="a later commit at the new level")
    p.add_argument(
        "--bench",
        type=flags.pattern,
        metavar="REGEX",
        required=True,
        help="the benchmark(s) whose move is searched for",
    )
    p.add_argument("--format", choices=("text", "json"), default="text")
    flags.benchmarks_dir(p)
    p.set_defaults(run=run)


def run(args) -> int:
    from regress.flows import bisect
    from regress.output import bisect as render
    from regress.storage import gitrepo

    cfg = flags.load_config(args)
    if not args.bench:
        raise RegressError("--bench is empty; name the benchmark that moved, e.g. --bench 'softmax'")
    repo = gitrepo.open_repo(cfg.root)
    good = gitrepo.resolve_one(repo, args.good, what="bisect", worktree=False)
    bad = gitrepo.resolve_one(repo, args.bad, what="bisect", worktree=False)
    paths = getattr(args, "paths", ())
    got = bisect.bisect(cfg, good, bad, bench=args.bench, reporter=RoundLines(), paths=paths)
    err(f"regress: measured {plural(got.measured, 'commit')} of {got.commits}")
    print(json.dumps(render.as_json(got), indent=2, allow_nan=False) if args.format == "json" else render.text(got))
    return 0
