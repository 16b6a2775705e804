"""`regress notify`: an issue for each commit whose regression the newest results newly show."""

from __future__ import annotations

from regress.cli import flags, github_flags
from regress.cli.console import err, plural


def add(sub) -> None:
    p = sub.add_parser(
        "notify",
        help="open an issue (or comment on its open one) for each commit newly found to make benchmarks slower",
    )
    flags.common(p)
    p.add_argument(
        "--commit",
        default="HEAD",
        metavar="REV",
        help="the commit whose saved results are new (default HEAD): steps found with them and not without are new",
    )
    p.add_argument(
        "--label", default="performance-regression", metavar="NAME", help="the label that marks these issues"
    )
    flags.threshold_flag(p, "smallest step worth an issue")
    github_flags.add(p)
    github_flags.site_url(p)
    p.set_defaults(run=run)


def run(args) -> int:
    from regress.ci import github, regression_issues
    from regress.cli.console import skipped_files
    from regress.storage.store import Store

    cfg = flags.load_config(args)
    chart = github_flags.chart_url(cfg, args.site_url)
    store = Store(cfg.results_dir)
    found = regression_issues.find(cfg, args.commit, threshold=args.threshold, store=store)
    skipped_files(store)
    if not found.culprits:
        print(f"regress: no regression newly found with {found.at.short}'s results")
        return 0
    with github.GitHub(github.target(args.repo, args.api_url), say=err) as gh:
        filed = regression_issues.file_issues(
            gh,
            found,
            machine=cfg.machine_name,
            env=cfg.env,
            label=args.label,
            chart_url=chart,
            run_url=github_flags.run_url(args.run_url),
        )
    for f in filed:
        short = f.sha[:10]
        if f.action == "opened":
            print(f"regress: opened issue #{f.number} for {short} ({plural(f.benchmarks, 'benchmark')}): {f.url}")
        elif f.action == "commented":
            print(f"regress: commented on issue #{f.number} for {short} ({plural(f.benchmarks, 'more benchmark')})")
        elif f.action == "closed":
            print(f"regress: issue #{f.number} for {short} is closed; left closed, nothing posted")
        else:
            print(f"regress: issue #{f.number} for {short} already reports these benchmarks")
    return 0
