"""`regress explain`: the operators that account for a change between two commits."""

from __future__ import annotations

from regress.cli import flags


def add(sub) -> None:
    p = sub.add_parser("explain", help="operator-level diff (torch.profiler) of the benchmarks that changed")
    flags.common(p)
    p.add_argument("base", metavar="BASE", help="the commit to compare against")
    p.add_argument("head", metavar="HEAD", nargs="?", default="HEAD", help="the commit explained (default HEAD)")
    p.add_argument(
        "--bench",
        type=flags.pattern,
        metavar="REGEX",
        default="",
        help="profile the benchmarks whose identity matches (default: those compare calls a regression or improvement)",
    )
    p.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    p.add_argument(
        "--top", type=flags.count, metavar="N", default=15, help="operators shown per benchmark (default 15)"
    )
    flags.benchmarks_dir(p)
    p.set_defaults(run=run)


def run(args) -> int:
    from regress.flows import explain
    from regress.output import explain as render
    from regress.storage import gitrepo

    cfg = flags.load_config(args)
    repo = gitrepo.open_repo(cfg.root)
    base = gitrepo.resolve_one(repo, args.base, what="explain", worktree=False)
    head = gitrepo.resolve_one(repo, args.head, what="explain", worktree=False)
    got = explain.explain(cfg, base, head, bench=args.bench)
    if args.format == "json":
        print(render.as_json(got))
    elif args.format == "markdown":
        print(render.markdown(got, top=args.top))
    else:
        print(render.text(got, top=args.top))
    return 0
