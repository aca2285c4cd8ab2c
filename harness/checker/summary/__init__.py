"""The reconciliation by an engine: every record's lines in the acknowledgement log and its copies at every hop,
counted by an engine that reads the run directory's segments itself (in arrays by record in this process, or as
SQL on Spark), then turned into the Reconciliation the numpy path gives (harness/checker/reconcile.py), so the rest
of the check and the report are the same whichever engine counted."""
