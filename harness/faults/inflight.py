"""Catching a batch in flight, for sinks that have no crash point (Spark's own Kafka, file and Delta sinks).

A micro-batch N is in flight from the moment Spark writes offsets/N in the query's checkpoint until it
writes commits/N. A SIGKILL in that window makes the restart run batch N again, for certain. The kill
waits for more: some of batch N's output already written, so the replay writes it again. The window may
be a few milliseconds: the kill looks while the driver is frozen (harness.faults.kinds.kill_driver).
Output is told apart by time, not by content: batch N-1 finished writing before commits/N-1, which is
before offsets/N, so a record on an output topic whose timestamp (the producer's send time) or a finished
data file whose modification time is later than offsets/N was written by batch N (or a later batch, which
is not yet planned while N is in flight).

A Real-time Mode query (an application's `trigger: real-time`) writes offsets/N and commits/N together, at the end
of its long batch N: batch N is in flight from the previous commit (commits/N-1, or the query's start) until
then, emitting as it goes. Its output later than that commit is batch N's, and a SIGKILL then makes the restart
emit it again (real_time_in_flight).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from kafka import KafkaConsumer, TopicPartition
from kafka.errors import KafkaError

from contract.table_files import finished
from harness.cluster.access import KafkaAccess
from harness.evidence.checkpoint import committed_batches, planned_batches, query_checkpoints


@dataclass(frozen=True)
class InFlight:
    query: str
    batch: int
    planned_ms: int  # when offsets/<batch> was written (a Real-time Mode batch: when the one before it committed)

    def committed(self, checkpoints: Path) -> bool:
        return (checkpoints / self.query / "commits" / str(self.batch)).exists()


def batch_in_flight(checkpoints: Path) -> InFlight | None:
    """The first query of the streamlet with a batch planned and not committed, or None."""
    for query in query_checkpoints(checkpoints):
        planned, committed = planned_batches(query), committed_batches(query)
        if planned and (not committed or planned[-1] > committed[-1]):
            try:
                mtime = (query / "offsets" / str(planned[-1])).stat().st_mtime_ns // 1_000_000
            except OSError:
                continue
            return InFlight(str(query.relative_to(checkpoints)), planned[-1], mtime)
    return None


def real_time_in_flight(checkpoints: Path) -> InFlight | None:
    """The first Real-time Mode query of the streamlet (its long batch is always in flight once it has started):
    the batch after its last commit, begun when that commit was written (or when the query started: its
    metadata), or None before any query started."""
    if not checkpoints.is_dir():
        return None
    queries = (
        [checkpoints]
        if (checkpoints / "metadata").is_file()
        else sorted(p for p in checkpoints.iterdir() if p.is_dir())
    )
    for query in queries:
        committed = committed_batches(query)
        begun = query / "commits" / str(committed[-1]) if committed else query / "metadata"
        name = str(query.relative_to(checkpoints))
        try:
            return InFlight(name, committed[-1] + 1 if committed else 0, begun.stat().st_mtime_ns // 1_000_000)
        except OSError:
            continue
    return None


class OutputWatch:
    """The newest output a streamlet wrote: the latest timestamp of a record on its output topics (read as it
    arrives) and of a finished data file under its work folder (a Parquet file ends with its footer's magic
    bytes; one still being written would be cut by the kill and hold nothing a reader can see)."""

    def __init__(self, access: KafkaAccess, topics: list[str], workdir: Path, tables: list | None = None):
        self.workdir = workdir
        self.tables = tables or []  # output tables it writes: each a probe with latest_ms() and close()
        self.latest_ms = 0
        self._finished: set[str] = set()
        self._consumer = None
        if topics:
            try:
                self._consumer = KafkaConsumer(
                    **access.kafka_python(),
                    enable_auto_commit=False,
                    group_id=None,
                    fetch_max_wait_ms=10,
                    max_poll_records=100_000,
                )
                parts = [
                    TopicPartition(t, p) for t in topics for p in sorted(self._consumer.partitions_for_topic(t) or ())
                ]
                self._consumer.assign(parts)
                self._consumer.seek_to_end(*parts)
            except KafkaError:
                self.close()

    def poll(self, timeout_s: float) -> int:
        """Wait up to `timeout_s` for output; returns the latest output time seen so far (ms since the epoch)."""
        if self._consumer is not None:
            for records in self._consumer.poll(timeout_ms=int(timeout_s * 1000)).values():
                self.latest_ms = max(self.latest_ms, max(r.timestamp for r in records))
        else:
            time.sleep(timeout_s)
        for table in self.tables:
            self.latest_ms = max(self.latest_ms, table.latest_ms())
        if self.workdir.is_dir():
            for root, _, names in os.walk(self.workdir):
                for name in names:
                    path = os.path.join(root, name)
                    if name.startswith("part-") and path not in self._finished and finished(path):
                        self._finished.add(path)
                        self.latest_ms = max(self.latest_ms, os.stat(path).st_mtime_ns // 1_000_000)
        return self.latest_ms

    def newer_than(self, ms: int, timeout_s: float) -> bool:
        """Whether output later than `ms` (since the epoch) was written, looking for up to `timeout_s`."""
        end = time.monotonic() + timeout_s
        while self.latest_ms <= ms and time.monotonic() < end:
            self.poll(0.01)
        return self.latest_ms > ms

    def close(self) -> None:
        for table in self.tables:
            table.close()
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
