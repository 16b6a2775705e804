"""The `regress` command: parse, dispatch, print. The one place errors become exit codes.

Exit status: 0 fine; 1 the measured code failed (a benchmark or suite at the
newest measured commit), or `--fail-on-regression` found one; 2 a user
mistake (bad revision, flag, suite file, result file); 130 interrupted.
"""

from __future__ import annotations

import sys

from regress import __version__
from regress.cli import flags
from regress.cli import paths as cli_paths
from regress.cli.commands import ALL
from regress.cli.console import err
from regress.core.errors import RegressError


def build_parser() -> flags.Parser:
    parser = flags.Parser(prog="regress", description="Continuous benchmarking for PyTorch code.")
    parser.add_argument("--version", action="version", version=f"regress {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=flags.Parser)
    sub.required = True
    for command in ALL:
        command.add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        argv, paths = cli_paths.split(list(sys.argv[1:] if argv is None else argv))
        args = build_parser().parse_args(argv)
        cli_paths.attach(args, paths)
        return args.run(args)
    except RegressError as exc:
        err(f"regress: error: {exc}")
        return 2
    except KeyboardInterrupt:
        err("regress: interrupted; finished commits are saved, `regress run --skip-existing ...` measures the rest")
        return 130
    except BrokenPipeError:
        return 0


def entry() -> None:
    sys.exit(main())
