"""The workload generator: an external source producing keyed, sequence-numbered records.

    python -m harness.workload.generator SETTINGS.json

Record i goes to key k (drawn from the seed), with seq = the count of earlier
records of that key: the same seed gives the same (key, seq, payload, late)
sequence. Every record's outcome is appended to the ack log as the producer
reports it (acked with partition and offset, or unknown), flushed as it goes,
so a crash leaves a readable log up to the crash. SIGTERM stops it cleanly.
"""

from __future__ import annotations

import csv
import json
import random
import signal
import string
import sys
import time
from collections import deque

from kafka import KafkaProducer

from harness.workload.settings import ACK_LOG_COLUMNS, WorkloadSettings


def record_plan(settings: WorkloadSettings):
    """The deterministic part of the workload: yields (key, seq, payload, late) forever."""
    rng = random.Random(settings.seed)
    seqs = [0] * settings.keys
    alphabet = string.ascii_letters + string.digits
    index = 0
    while True:
        k = rng.randrange(settings.keys)
        late = rng.random() < settings.late_share and index >= settings.late_after
        index += 1
        payload = "".join(rng.choices(alphabet, k=settings.payload_bytes))
        yield f"k{k:04d}", seqs[k], payload, late
        seqs[k] += 1


class AckLog:
    """Appends outcomes in send order as the futures complete; flushed on every drain."""

    def __init__(self, path: str):
        self._file = open(path, "a", newline="")
        self._csv = csv.writer(self._file)
        if self._file.tell() == 0:
            self._csv.writerow(ACK_LOG_COLUMNS)
        self.pending: deque = deque()
        self.acked = 0
        self.unknown = 0

    def add(self, row: tuple, future) -> None:
        self.pending.append((row, future))

    def drain(self, final: bool = False) -> None:
        while self.pending and (final or self.pending[0][1].is_done):
            row, future = self.pending.popleft()
            if future.is_done and future.succeeded():
                meta = future.value
                self._csv.writerow(row + ("acked", meta.partition, meta.offset))
                self.acked += 1
            else:
                self._csv.writerow(row + ("unknown", "", ""))
                self.unknown += 1
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def planned_records(settings: WorkloadSettings) -> int | None:
    """How many records the workload is: exactly rate x duration (rounded), capped by max_records;
    None when neither bounds it (runs until stopped)."""
    bounds = [b for b in (None if settings.duration_s is None else round(settings.rate * settings.duration_s),
                          settings.max_records) if b is not None]
    return min(bounds) if bounds else None


def run(settings: WorkloadSettings) -> dict:
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    signal.signal(signal.SIGINT, lambda *_: stopping.append(True))
    producer = KafkaProducer(
        bootstrap_servers=settings.bootstrap_servers,
        acks=settings.acks if settings.acks == "all" else int(settings.acks),
        enable_idempotence=settings.idempotence,
        linger_ms=5,
        retries=2**31 - 1 if settings.idempotence else 3,
        delivery_timeout_ms=30000,
        request_timeout_ms=10000,
        max_in_flight_requests_per_connection=5 if settings.idempotence else 1,
    )
    log = AckLog(settings.ack_log)
    plan = record_plan(settings)
    total = planned_records(settings)
    start = time.monotonic()
    sent = 0
    try:
        while not stopping and (total is None or sent < total):
            elapsed = time.monotonic() - start
            # Record i is due at i / rate: the last of rate x duration records goes out just before the end.
            due = int(elapsed * settings.rate) + 1 - sent
            if total is not None:
                due = min(due, total - sent)
            if due <= 0:
                log.drain()
                time.sleep(min(0.05, 1.0 / settings.rate))
                continue
            for _ in range(min(due, 1000)):
                key, seq, payload, late = next(plan)
                event_ms = int(time.time() * 1000) - (int(settings.late_by_s * 1000) if late else 0)
                value = json.dumps({"key": key, "seq": seq, "event_time_ms": event_ms, "payload": payload})
                future = producer.send(settings.topic, key=key.encode(), value=value.encode())
                log.add((key, seq, event_ms, int(late)), future)
                sent += 1
            log.drain()
        producer.flush(timeout=60)
    finally:
        producer.close(timeout=30)
        log.drain(final=True)
        log.close()
    return {"sent": sent, "acked": log.acked, "unknown": log.unknown}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m harness.workload.generator SETTINGS.json", file=sys.stderr)
        return 2
    summary = run(WorkloadSettings.load(argv[0]))
    print(json.dumps({"generator": summary}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
