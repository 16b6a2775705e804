"""Records, kinds, the merge policy and config: imports nothing else of regress."""
