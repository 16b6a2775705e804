"""`-- PATH...` after a command's arguments, as git takes it: commits limited to those touching the paths.

`regress run A..B -- src/` measures the commits `git log A..B -- src/` lists;
`bisect` probes only those; `regressions` counts only those as unmeasured
and carries the paths into its bisect hint. argparse would mix the paths into
a command's revisions, so they are split off before parsing.
"""

from __future__ import annotations

from regress.core.errors import RegressError

# The commands that take `-- PATH...`.
TAKE_PATHS = ("run", "bisect", "regressions")


def split(argv: list[str]) -> tuple[list[str], tuple[str, ...] | None]:
    """(the arguments before `--`, the paths after it; None without `--`)."""
    if "--" not in argv:
        return argv, None
    k = argv.index("--")
    return argv[:k], tuple(argv[k + 1 :])


def attach(args, paths: tuple[str, ...] | None) -> None:
    """Set `args.paths`, refusing `--` where the command has no use for it."""
    if paths is not None and args.command not in TAKE_PATHS:
        raise RegressError(
            f"`regress {args.command}` takes no paths after --; only {', '.join(TAKE_PATHS)} limit commits to paths"
        )
    if paths is not None and not paths:
        raise RegressError("nothing after --; give the paths whose commits count, like `-- src/`")
    bad = [p for p in paths or () if p.startswith("-")]
    if bad:
        raise RegressError(f"{bad[0]!r} after -- is not a path; put flags before the --")
    args.paths = paths or ()
