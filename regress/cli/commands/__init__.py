"""One module a command: `add(sub)` declares its flags, `run(args)` calls one
function of the layers below and prints. Listed here in `regress --help` order."""

from regress.cli.commands import (
    bisect,
    check,
    comment,
    compare,
    explain,
    list_,
    merge,
    notify,
    regressions,
    report,
    results,
    run,
    show,
)

ALL = (list_, run, show, report, compare, explain, regressions, bisect, merge, check, comment, notify, results)
