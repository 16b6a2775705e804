"""Worker processes, one commit, rounds and ranges: imports core, suite and storage."""
