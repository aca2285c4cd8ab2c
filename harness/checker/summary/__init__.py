"""The reconciliation as SQL: every record's lines in the acknowledgement log and its copies at every hop, counted
by an engine that reads the run directory's segments itself (DuckDB in this process, or Spark on a cluster), then
turned into the Reconciliation the numpy path gives (harness/checker/reconcile.py), so the rest of the check and
the report are the same whichever engine counted."""
