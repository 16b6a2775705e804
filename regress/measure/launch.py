"""How regress starts its worker processes, so that none of its own files can shadow a module.

Started as a script (`python regress/measure/worker.py`), a worker would have
regress/measure/ first on sys.path until its first line ran, and every
import before that (the interpreter's own, a sitecustomize's) could pick
up one of this folder's modules instead of the stdlib's or the user's.
`-P` would prevent it only on Python 3.11+, and the measured project's
interpreter may be older. So the worker is started with `-c`: the short
program below puts the folder holding the regress package first (and drops
the working folder: the worker puts the commit's code on sys.path itself),
then imports the worker module by its full name.
"""

from __future__ import annotations

from pathlib import Path

# The folder holding the regress package.
ROOT = str(Path(__file__).resolve().parents[2])

_START = (
    "import sys; sys.argv.pop(0); root, module = sys.argv.pop(0), sys.argv[0]; "
    "sys.path[:] = [root] + [p for p in sys.path if p not in ('', '.')]; "
    "import importlib; importlib.import_module(module).main()"
)


def command(python: str, module: str, *args: str) -> list[str]:
    """argv that runs `module`'s main() in `python`; it finds `args` as sys.argv[1:]."""
    return [python, "-c", _START, ROOT, module, *args]
