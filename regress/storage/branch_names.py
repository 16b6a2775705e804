"""The results branch's default names, apart from `results_branch` so the command line can name them
without importing gitpython (every command's flags are declared at each start)."""

BRANCH = "regress-results"
REMOTE = "origin"
