"""Results pull/push/merge and the pull-request check: imports every stage but cli."""
