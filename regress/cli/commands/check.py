"""`regress check`: the pull-request check, base and head measured in turn."""

from __future__ import annotations

import os

from regress.cli import flags, github_flags
from regress.cli.console import RoundLines, err, plural


def add(sub) -> None:
    p = sub.add_parser(
        "check", help="the pull-request check: merge base and head measured in turn, exit 1 on a regression"
    )
    flags.common(p)
    p.add_argument("base", metavar="BASE", help="the branch the change goes into; its merge base with HEAD is measured")
    p.add_argument("head", metavar="HEAD", nargs="?", default="HEAD", help="the change (default HEAD)")
    p.add_argument(
        "--rounds",
        type=flags.rounds,
        metavar="N",
        help="rounds per side, each in a fresh process (default: the round plan of `regress run`, "
        f"min_rounds to max_rounds of [tool.regress], {flags.default('min_rounds')} to {flags.default('max_rounds')})",
    )
    flags.threshold_flag(p, "smallest change worth reporting")
    p.add_argument(
        "--ok-label",
        default="perf-regression-ok",
        metavar="NAME",
        help="a pull request with this label passes despite a regression (labels come from $GITHUB_EVENT_PATH)",
    )
    p.add_argument(
        "--summary",
        metavar="FILE",
        help="append the Markdown comparison here (default: $GITHUB_STEP_SUMMARY when set)",
    )
    p.add_argument(
        "--no-explain", action="store_true", help="leave out the operator rows (torch.profiler) under each regression"
    )
    p.add_argument(
        "--comment-file",
        metavar="FILE",
        help="also write the pull request's sticky comment here, for `regress comment FILE` to post",
    )
    github_flags.site_url(p)
    flags.benchmarks_dir(p)
    flags.min_run_time(p)
    p.set_defaults(run=run)


def run(args) -> int:
    from regress.ci import check

    cfg = flags.load_config(args)
    checked = check.check(
        cfg,
        args.base,
        args.head,
        rounds=args.rounds,
        threshold=args.threshold,
        ok_label=args.ok_label,
        labels=check.event_labels(os.environ.get("GITHUB_EVENT_PATH")),
        reporter=RoundLines(),
        explain=not args.no_explain,
    )
    print(checked.markdown)
    where = check.summary_path(args.summary)
    if where:
        check.write_summary(where, checked.markdown)
    if args.comment_file:
        from pathlib import Path

        from regress.ci import pr_comment

        body = pr_comment.body_for(
            checked, chart_url=github_flags.chart_url(cfg, args.site_url), run_url=github_flags.run_url(args.run_url)
        )
        number = pr_comment.event_number(os.environ.get("GITHUB_EVENT_PATH"))
        pr_comment.write(Path(args.comment_file), pr_comment.Payload(body, checked.head.sha, number))
    if checked.fails:
        err(
            f"regress: {plural(checked.regressions, 'significant regression')} "
            f"in {checked.head.short} against the merge base {checked.base.short}; the check fails "
            f"(the '{args.ok_label}' label accepts them)"
        )
        return 1
    return 0
