"""Streaming query events as JSON lines in the run directory (one file per streamlet).

Every StreamingQueryProgress (batch id, input rows, offsets per source,
durations, rows dropped by watermark), every start, idle report and
termination (with its exception) is appended and flushed at once, so a SIGKILL loses nothing
that was reported.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from pyspark.sql.streaming import StreamingQueryListener


class JsonLinesListener(StreamingQueryListener):
    def __init__(self, path: Path, streamlet: str, spark_version: str):
        super().__init__()
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._file = open(path, "a")
        self._streamlet = streamlet
        self._pid = os.getpid()
        self._spark_version = spark_version  # the Spark this driver runs (a scenario can name another than the harness's)

    def _write(self, event: str, **fields) -> None:
        line = {"ts_ms": int(time.time() * 1000), "streamlet": self._streamlet, "pid": self._pid, "event": event}
        line.update(fields)
        self._file.write(json.dumps(line) + "\n")
        self._file.flush()

    def onQueryStarted(self, event) -> None:
        self._write("started", query=event.name, id=str(event.id), run_id=str(event.runId), spark_version=self._spark_version)

    def onQueryProgress(self, event) -> None:
        self._write("progress", query=event.progress.name, progress=json.loads(event.progress.json))

    def onQueryIdle(self, event) -> None:
        """No new data: the query is up and caught up (a restart with nothing to replay reports only this)."""
        self._write("idle", id=str(event.id), run_id=str(event.runId))

    def onQueryTerminated(self, event) -> None:
        self._write("terminated", id=str(event.id), run_id=str(event.runId), exception=event.exception)
