"""`regress results pull|push`: the results branch of a remote."""

from __future__ import annotations

from regress.cli import flags
from regress.cli.console import err, plural, refused
from regress.core.errors import RegressError
from regress.storage.branch_files import BRANCH, REMOTE


def add(sub) -> None:
    p = sub.add_parser("results", help="the results branch of the remote: pull restores it, push adds to it")
    actions = p.add_subparsers(dest="action", metavar="ACTION", parser_class=flags.Parser)
    actions.required = True
    for name, text in (
        ("pull", "merge the results branch into the results folder"),
        ("push", "add the results folder to the results branch (created on first use)"),
    ):
        q = actions.add_parser(name, help=text)
        flags.project_only(q)
        q.add_argument("--remote", default=REMOTE, metavar="NAME", help=f"git remote (default: {REMOTE})")
        q.add_argument("--branch", default=BRANCH, metavar="NAME", help=f"results branch (default: {BRANCH})")
        if name == "pull":
            q.add_argument(
                "--near",
                metavar="REV",
                help="only what a run of REV reads (its results and its newest measured ancestors'), "
                "fetched without the branch's history or other files (a CI measure job)",
            )
            q.add_argument(
                "--partial",
                action="store_true",
                help="fetch only the files this folder and its summary lack; the rest stay on the branch and are "
                "read when needed (a CI job that restored the results summary from its cache)",
            )
        if name == "push":
            q.add_argument(
                "--retries",
                type=flags.count,
                default=8,
                metavar="N",
                help="pushes to try when other jobs push at the same time (default 8)",
            )
        q.set_defaults(run=run)


def run(args) -> int:
    from regress.ci import sync

    cfg = flags.load_config(args)
    where = f"{args.remote}/{args.branch}"
    if args.action == "pull":
        if args.near and args.partial:
            raise RegressError("--near and --partial pick files two ways; pass one of them")
        synced = sync.pull(cfg, remote=args.remote, branch=args.branch, near=args.near, partial=args.partial)
        if synced.tip is None:
            print(f"no branch {where} yet: nothing to restore (`regress results push` creates it)")
        else:
            print(
                f"restored {where} ({synced.tip[:10]}): {synced.files} result files"
                f"{f' near {args.near}' if args.near else ''}, "
                f"{synced.written} changed in {cfg.results_dir}"
                + (f", {synced.left} left on the branch (the summary knows them)" if args.partial else "")
            )
        return refused(synced.conflicts, "the local copies were kept")
    synced = sync.push(cfg, remote=args.remote, branch=args.branch, retries=args.retries, say=err)
    if synced.written:
        assert synced.tip is not None  # files were pushed to it
        print(f"pushed {plural(synced.written, 'result file')} to {where} ({synced.tip[:10]})")
    elif synced.tip is None:
        print(f"no results in {cfg.results_dir} to push; measure some with `regress run HEAD`")
    else:
        print(f"{where} already holds every result in {cfg.results_dir}; nothing to push")
    return refused(synced.conflicts, "the branch's copies were kept and everything else was pushed")
