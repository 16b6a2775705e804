"""Results pull/push/merge and the pull-request check: imports core, storage, analysis, measure and output."""
