"""`regress report`: the static site, from what is stored (it never measures)."""

from __future__ import annotations

from pathlib import Path

from regress.cli import flags
from regress.cli.console import skipped_files


def add(sub) -> None:
    p = sub.add_parser("report", help="build the static site (default folder site/)")
    flags.project_only(p)
    p.add_argument("--out", metavar="DIR", help="folder to write the site to (default: site/ in the project)")
    p.add_argument(
        "--baseline", metavar="REV", help="commit the newest one is compared against (default: the oldest measured)"
    )
    p.add_argument("--incremental", action="store_true", help="keep pages whose benchmarks have no new results")
    p.set_defaults(run=run)


def run(args) -> int:
    from regress.report import site
    from regress.storage.session import Session

    with Session(flags.load_config(args)) as session:
        cfg = session.cfg
        baseline = None
        if args.baseline:
            from regress.storage import gitrepo  # here: commands that never resolve a revision skip gitpython

            baseline = gitrepo.resolve_one(session.repo, args.baseline, what="--baseline", worktree=False)
        out = Path(args.out) if args.out else cfg.root / "site"
        if not args.out:
            from regress.storage.atomic import make_ignored

            make_ignored(out)  # regress's own output: nothing new in `git status`
        summary = site.build(
            session.store,
            out,
            baseline=baseline,
            repo_url=cfg.repo_url,
            threshold=cfg.threshold,
            threshold_for=cfg.threshold_for,
            incremental=args.incremental,
            title=cfg.root.name,
            code=session.code,
            rounds=(cfg.min_rounds, cfg.max_rounds),
            memo=session.memo,
        )
        skipped_files(session.store)
    print(summary.describe())
    return 0
