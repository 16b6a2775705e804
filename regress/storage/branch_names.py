"""The results branch's default names, importable without gitpython (the command line's flags name them)."""

BRANCH = "regress-results"
REMOTE = "origin"
