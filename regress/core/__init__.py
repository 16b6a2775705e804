"""Records, kinds, the merge policy, config and units: imports nothing else of regress."""
