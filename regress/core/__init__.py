"""Records, kinds, the metric specs, the merge policy, config and units: imports nothing else of regress."""
