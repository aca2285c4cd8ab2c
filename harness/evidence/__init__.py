"""The run directory: what a run records, append-only, for the checker to judge offline."""
