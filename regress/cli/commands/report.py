"""`regress report`: the static site, from what is stored (it never measures)."""

from __future__ import annotations

from pathlib import Path

from regress.cli import flags
from regress.cli.console import skipped_files
from regress.storage import code_identity
from regress.storage.memo import Memo
from regress.storage.store import Store


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

    cfg = flags.load_config(args)
    baseline = None
    if args.baseline:
        from regress.storage import gitrepo  # here: commands that never resolve a revision skip gitpython

        repo = gitrepo.open_repo(cfg.root)
        baseline = gitrepo.resolve_one(repo, args.baseline, what="--baseline", worktree=False)
    out = Path(args.out) if args.out else cfg.root / "site"
    if not args.out:
        from regress.storage.ignored import make_ignored

        make_ignored(out)  # regress's own output: nothing new in `git status`
    store = Store(cfg.results_dir)
    with Memo(cfg.results_dir) as kept:
        summary = site.build(
            store,
            out,
            baseline=baseline,
            repo_url=cfg.repo_url,
            threshold=cfg.threshold,
            threshold_for=cfg.threshold_for,
            incremental=args.incremental,
            title=cfg.root.name,
            code=lambda shas: code_identity.for_config(cfg, shas, kept),
            rounds=(cfg.min_rounds, cfg.max_rounds),
            memo=kept,
        )
    skipped_files(store)
    print(summary.describe())
    return 0
