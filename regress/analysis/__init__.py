"""Statistics, verdicts and change points, pure (no I/O): imports core only."""
