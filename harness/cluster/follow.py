"""Recording topics' records as they are written, from given offsets on, in a thread.

A run records its intermediate topics this way from their first offset to the end, so the evidence keeps
every record a hop carried even once retention (routine, or a retention-shrink fault's) has deleted it.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from kafka import KafkaConsumer, TopicPartition
from kafka.errors import KafkaError, OffsetOutOfRangeError

from contract.segments import SegmentWriter
from harness.cluster.access import KafkaAccess
from harness.codecs import Decode
from harness.errors import HarnessError
from harness.evidence.topics import RecordingColumns, dump_line, dump_record


class PartitionRecorder:
    """Follows partitions from start offsets, appending every record to `folder`/<topic>.jsonl, or for the topics in
    `columnar` to the segments of `folder`/<topic>/ (harness/evidence/topics.py), flushed per poll; each value decoded
    by its topic's entry in `decoders` (JSON where there is none), a Kafka output's identity read by its entry in
    `identities`."""

    def __init__(
        self,
        access: KafkaAccess,
        starts: dict[tuple[str, int], int],
        folder: Path,
        decoders: dict[str, Decode] | None = None,
        columnar: frozenset[str] = frozenset(),
        identities: dict[str, dict] | None = None,
    ):
        self.decoders = decoders or {}
        self.columnar = columnar
        self.identities = identities or {}  # a Kafka output's topic -> its identity, read into the columns
        self.path = Path(folder)
        self.path.mkdir(parents=True, exist_ok=True)
        self._access = access
        self._tps = [TopicPartition(t, p) for t, p in starts]
        self._consumer = self._consumer_at(starts)
        self.renewals = 0  # consumers replaced after making no progress (wait_caught_up)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        # The positions up to which records are written, published by the recording thread after each poll. Read
        # without the lock: the thread takes it again the moment it lets it go (Python's locks are not fair), and a
        # reader waiting for it waited seconds, 10 to 20 at the end of runs on a busy machine.
        self._written = dict(starts)
        self.records = 0
        self.per_topic: dict[str, int] = {}  # records recorded, per topic
        self.missed: list[list] = []  # [topic, partition, from offset, to offset]: deleted before they were recorded
        self.error: str | None = None
        self._thread = threading.Thread(target=self._run, name=f"recorder-{self.path.stem}", daemon=True)

    def _consumer_at(self, positions: dict[tuple[str, int], int]) -> KafkaConsumer:
        consumer = KafkaConsumer(
            **self._access.kafka_python(), enable_auto_commit=False, group_id=None, auto_offset_reset="none"
        )
        consumer.assign(self._tps)
        for tp in self._tps:
            consumer.seek(tp, positions[(tp.topic, tp.partition)])
        return consumer

    def renew(self) -> None:
        """Replace the consumer by a new one at the same positions: nothing recorded is lost or read twice. Where no
        new one can be made (the brokers do not answer yet), the old one stays."""
        with self._lock:
            positions = self._positions()
            try:
                new = self._consumer_at(positions)
            except KafkaError:
                return
            old, self._consumer = self._consumer, new
            self.renewals += 1
        old.close(autocommit=False)

    @property
    def topics(self) -> list[str]:
        return sorted({tp.topic for tp in self._tps})

    def start(self) -> "PartitionRecorder":
        self._thread.start()
        return self

    def _run(self) -> None:
        topics = {tp.topic for tp in self._tps}
        # Every recording exists from the start: a topic nothing was written to is an empty hop, not a missing one.
        files = {t: open(self.path / f"{t}.jsonl", "a") for t in topics - self.columnar}
        writers = {
            t: (SegmentWriter(self.path / t), RecordingColumns(self.identities.get(t))) for t in topics & self.columnar
        }
        try:
            deleted = None  # partitions whose next records retention deleted: skipped once the brokers answer
            while not self._stop.is_set():
                try:
                    if deleted is not None:
                        self._skip_deleted(deleted)
                        deleted = None
                    with self._lock:
                        batches = self._consumer.poll(timeout_ms=200)
                        reached = self._positions()
                except OffsetOutOfRangeError as exc:  # retention deleted records not recorded yet: say which, go on
                    deleted = exc.args[0] if exc.args and isinstance(exc.args[0], dict) else {}
                    continue
                except KafkaError:  # a broker down or paused by a fault: the positions are kept, ask again
                    time.sleep(0.5)
                    continue
                for tp, records in batches.items():
                    decode = self.decoders.get(tp.topic, json.loads)
                    if tp.topic in writers:
                        writer, columns = writers[tp.topic]
                        writer.write(columns.batch([dump_record(r, decode) for r in records]))
                    else:
                        files[tp.topic].writelines(dump_line(r, decode) for r in records)
                    self.records += len(records)
                    self.per_topic[tp.topic] = self.per_topic.get(tp.topic, 0) + len(records)
                for out in files.values():
                    out.flush()
                self._written = {**self._written, **reached}  # with what follow() added meanwhile
        except Exception as exc:  # reported by wait_caught_up; what was recorded stays
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            for out in files.values():
                out.close()
            for writer, _ in writers.values():
                writer.close()

    def follow(self, starts: dict[tuple[str, int], int]) -> None:
        """Record these partitions too, from these offsets (partitions added to a recorded topic)."""
        with self._lock:
            new = [TopicPartition(t, p) for t, p in starts if TopicPartition(t, p) not in self._tps]
            if not new:
                return
            self._tps = self._tps + new
            self._consumer.assign(self._tps)
            for tp in new:
                self._consumer.seek(tp, starts[(tp.topic, tp.partition)])
            self._written = {
                **self._written,
                **{(tp.topic, tp.partition): starts[(tp.topic, tp.partition)] for tp in new},
            }

    def _skip_deleted(self, at: dict) -> None:
        with self._lock:
            partitions = list(at) or self._tps
            starts, ends = self._consumer.beginning_offsets(partitions), self._consumer.end_offsets(partitions)
            for tp in partitions:
                position = at.get(tp, self._consumer.position(tp))
                if starts[tp] > position:
                    self.missed.append([tp.topic, tp.partition, position, starts[tp]])
                self._consumer.seek(tp, min(max(starts[tp], position), ends[tp]))

    def _positions(self) -> dict[tuple[str, int], int]:
        return {(tp.topic, tp.partition): self._consumer.position(tp) for tp in self._tps}

    def positions(self) -> dict[tuple[str, int], int]:
        """Per partition, the offset up to which its records are recorded (written and flushed)."""
        return dict(self._written)

    def caught_up(self, ends: dict[tuple[str, int], int]) -> bool:
        return self.lag(ends) == 0

    def lag(self, ends: dict[tuple[str, int], int]) -> int:
        """Records up to `ends` (log ends per partition) not recorded yet; partitions it does not record are not
        counted."""
        positions = self.positions()
        return sum(max(0, end - positions[tp]) for tp, end in ends.items() if tp in positions)

    def wait_caught_up(self, ends: dict[tuple[str, int], int], timeout_s: float = 60.0, stall_s: float = 15.0) -> None:
        """Until every partition's position reaches `ends`. A consumer whose positions stay put for `stall_s` while
        behind is renewed: after broker faults a kafka-python consumer can keep waiting on a connection that no
        longer answers (a CI run, after a broker kill, pause and stop over SASL_SSL, recorded nothing for 4 minutes
        while a new client read on)."""
        deadline = time.monotonic() + timeout_s
        seen, moved = self.positions(), time.monotonic()
        while not self.caught_up(ends):
            if self.error:
                raise HarnessError(f"recording {self.path.name} failed: {self.error}")
            if time.monotonic() > deadline:
                raise HarnessError(f"recording {self.path.name}: not caught up with the log end after {timeout_s:.0f}s")
            now = self.positions()
            if now != seen:
                seen, moved = now, time.monotonic()
            elif time.monotonic() - moved > stall_s:
                self.renew()
                moved = time.monotonic()
            time.sleep(0.1)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self._consumer.close()
