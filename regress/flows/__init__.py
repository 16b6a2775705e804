"""What a command does end to end: compare, run a range, bisect, explain. Each flow combines the worker machinery
below (measure), the results (storage) and the verdicts (analysis): imports core, suite, measure, storage, analysis."""
