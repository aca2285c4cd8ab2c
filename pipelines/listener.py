"""Streaming query events as JSON lines in the run directory (one file per streamlet).

Every StreamingQueryProgress (batch id, input rows, offsets per source,
durations, rows dropped by watermark), every start, idle report and
termination (with its exception) is appended and flushed at once, so a SIGKILL loses nothing
that was reported.

The listener takes the JVM's events as they are (it implements the Java interface PySpark's own
listeners go through) and asks each progress for its JSON once. PySpark's StreamingQueryListener
converts every progress into Python first: about thirty py4j calls, and each Java map it copies
ends in an exception whose classification looks up class names that scan every jar of the
classpath. That conversion took 36% of a processor driver's CPU at a batch a second (a JFR
profile, bench/listener_cost.py).
"""

from __future__ import annotations

import json
import os
import time
from functools import cached_property
from pathlib import Path

from contract.query_events import QUERY_IDLE, QUERY_PROGRESS, QUERY_STARTED, QUERY_TERMINATED


class JsonLinesListener:
    def __init__(self, path: Path, streamlet: str, spark_version: str):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._file = open(path, "a")
        self._streamlet = streamlet
        self._pid = os.getpid()
        self._spark_version = (
            spark_version  # the Spark this driver runs (a scenario can name another than the harness's)
        )

    @cached_property
    def _jlistener(self):
        """What SparkSession.streams.addListener registers (and removeListener finds again): this object, wrapped
        once, as PySpark wraps its own."""
        from pyspark import SparkContext

        return SparkContext._jvm.PythonStreamingQueryListenerWrapper(self)

    def _write(self, event: str, **fields) -> None:
        line = {"ts_ms": int(time.time() * 1000), "streamlet": self._streamlet, "pid": self._pid, "event": event}
        line.update(fields)
        self._file.write(json.dumps(line) + "\n")
        self._file.flush()

    def onQueryStarted(self, event) -> None:
        self._write(
            QUERY_STARTED,
            query=event.name(),
            id=event.id().toString(),
            run_id=event.runId().toString(),
            spark_version=self._spark_version,
        )

    def onQueryProgress(self, event) -> None:
        progress = json.loads(event.progress().json())
        self._write(QUERY_PROGRESS, query=progress.get("name"), progress=progress)

    def onQueryIdle(self, event) -> None:
        """No new data: the query is up and caught up (a restart with nothing to replay reports only this)."""
        self._write(QUERY_IDLE, id=event.id().toString(), run_id=event.runId().toString())

    def onQueryTerminated(self, event) -> None:
        exception = event.exception()
        self._write(
            QUERY_TERMINATED,
            id=event.id().toString(),
            run_id=event.runId().toString(),
            exception=exception.get() if exception.isDefined() else None,
        )

    class Java:
        implements = ["org.apache.spark.sql.streaming.PythonStreamingQueryListener"]
