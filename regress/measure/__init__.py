"""The worker machinery: worker processes and fork servers, one commit, the round engine and its plan.
Imports core, suite, storage and analysis; the flows that use it live in `regress/flows/`."""
