"""Recording a topic's records as they are written, from given offsets on, in a thread.

The retention-shrink fault uses it to keep, before anything is deleted, every record of a stopped
streamlet's input from its committed position on, and every record written while retention is
shrunk: the exact set retention can delete, for an intermediate topic as for the source.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from kafka import KafkaConsumer, TopicPartition

from harness.codecs import Decode
from harness.errors import HarnessError
from harness.evidence.topics import dump_line


class PartitionRecorder:
    """Follows partitions from start offsets, appending every record to `folder`/<topic>.jsonl (flushed per poll),
    each value decoded by its topic's entry in `decoders` (JSON where there is none)."""

    def __init__(self, bootstrap_servers: str, starts: dict[tuple[str, int], int], folder: Path,
                 decoders: dict[str, Decode] | None = None):
        self.decoders = decoders or {}
        self.path = Path(folder)
        self.path.mkdir(parents=True, exist_ok=True)
        self._consumer = KafkaConsumer(bootstrap_servers=bootstrap_servers, enable_auto_commit=False, group_id=None,
                                       auto_offset_reset="earliest")
        self._tps = [TopicPartition(t, p) for t, p in starts]
        self._consumer.assign(self._tps)
        for tp in self._tps:
            self._consumer.seek(tp, starts[(tp.topic, tp.partition)])
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.records = 0
        self.error: str | None = None
        self._thread = threading.Thread(target=self._run, name=f"recorder-{self.path.stem}", daemon=True)

    def start(self) -> "PartitionRecorder":
        self._thread.start()
        return self

    def _run(self) -> None:
        files = {t: open(self.path / f"{t}.jsonl", "a") for t in {tp.topic for tp in self._tps}}
        try:
            while not self._stop.is_set():
                with self._lock:
                    batches = self._consumer.poll(timeout_ms=200)
                for tp, records in batches.items():
                    decode = self.decoders.get(tp.topic, json.loads)
                    files[tp.topic].writelines(dump_line(r, decode) for r in records)
                    self.records += len(records)
                for out in files.values():
                    out.flush()
        except Exception as exc:  # recorded and reported by the fault, which must still restore retention
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            for out in files.values():
                out.close()

    def positions(self) -> dict[tuple[str, int], int]:
        with self._lock:
            return {(tp.topic, tp.partition): self._consumer.position(tp) for tp in self._tps}

    def caught_up(self, ends: dict[tuple[str, int], int]) -> bool:
        positions = self.positions()
        return all(positions[tp] >= end for tp, end in ends.items() if tp in positions)

    def wait_caught_up(self, ends: dict[tuple[str, int], int], timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while not self.caught_up(ends):
            if self.error:
                raise HarnessError(f"recording {self.path.name} failed: {self.error}")
            if time.monotonic() > deadline:
                raise HarnessError(f"recording {self.path.name}: not caught up with the log end after {timeout_s:.0f}s")
            time.sleep(0.1)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self._consumer.close()
