"""`regress merge`: results folders from shards or other machines into this one."""

from __future__ import annotations

from pathlib import Path

from regress.cli import flags
from regress.cli.console import plural, refused


def add(sub) -> None:
    p = sub.add_parser("merge", help="merge results folders (CI shards, other machines) into the results folder")
    flags.project_only(p)
    p.add_argument("sources", nargs="+", metavar="DIR", help="results folders, each laid out <machine>/<env>/<sha>.pkl")
    p.set_defaults(run=run)


def run(args) -> int:
    from regress.ci import sync

    cfg = flags.load_config(args)
    synced = sync.merge(cfg, [Path(s) for s in args.sources])
    print(
        f"merged {plural(synced.files, 'result file')} from {plural(len(args.sources), 'folder')} "
        f"into {cfg.results_dir}: {synced.written} changed"
    )
    return refused(synced.conflicts, "everything else was merged")
