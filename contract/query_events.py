"""The words of a streamlet's progress file (progress/<streamlet>.jsonl): the events of its Spark queries, written by
pipelines/listener.py and read by the harness (harness/evidence/progress.py, the checker)."""

QUERY_STARTED = "started"  # a query started: its name, id and run id
QUERY_PROGRESS = "progress"  # a batch finished: Spark's StreamingQueryProgress
QUERY_IDLE = "idle"  # a query found no new data
QUERY_TERMINATED = "terminated"  # a query ended: its exception, if it failed
