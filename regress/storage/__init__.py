"""The results folder, the file codec, git and the results branch: imports core only."""
