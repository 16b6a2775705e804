"""`regress comment`: post or update the pull request's one sticky comment from a comment file."""

from __future__ import annotations

from pathlib import Path

from regress.cli import github_flags
from regress.cli.console import err


def add(sub) -> None:
    p = sub.add_parser(
        "comment",
        help="post or update the pull request's sticky comment from the file `regress check --comment-file` wrote",
    )
    p.add_argument("file", metavar="FILE", help="the comment file (in CI: the check job's artifact)")
    p.add_argument("--pr", type=int, metavar="N", help="the pull request (default: the one the file names)")
    p.add_argument(
        "--head-sha",
        metavar="SHA",
        help="post only if the file and the pull request are both at this commit (the workflow_run path passes "
        "github.event.workflow_run.head_sha)",
    )
    p.add_argument("--key", metavar="NAME", help="tells apart several regress comments on one pull request")
    github_flags.add(p)
    p.set_defaults(run=run)


def run(args) -> int:
    import dataclasses

    from regress.ci import github, pr_comment
    from regress.core.errors import RegressError

    payload = pr_comment.read(Path(args.file))
    if args.key:
        if not pr_comment.KEY.fullmatch(args.key):
            raise RegressError(f"--key {args.key!r}: use letters, digits, '.', '_' or '-' (at most 64)")
        payload = dataclasses.replace(payload, key=args.key)
    if args.pr is not None and args.pr < 1:
        raise RegressError(f"--pr {args.pr} is not a pull request number")
    with github.GitHub(github.target(args.repo, args.api_url), say=err) as gh:
        posted = pr_comment.post(gh, payload, pr=args.pr, head_sha=args.head_sha)
    if posted.action == "stale":
        err(f"regress: not posted: {posted.why}")
        return 0
    dup = f"; {posted.removed} duplicate{'s' if posted.removed != 1 else ''} removed" if posted.removed else ""
    print(f"regress: comment {posted.action} on pull request #{posted.pr}{dup}: {posted.url}".rstrip(": "))
    return 0
