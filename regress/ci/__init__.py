"""Results pull/push/merge, the pull-request check, and what regress tells GitHub (the sticky comment,
the regression issues, through `github.py`): imports core, storage, analysis, measure and output."""
