"""Worker processes, one commit, rounds and ranges, the compare flow: imports core, suite, storage and analysis."""
