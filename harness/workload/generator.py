"""The workload generator: an external source producing keyed, sequence-numbered records.

    python -m harness.workload.generator SETTINGS.json

Record i goes to key k (drawn from the seed), with seq = the count of earlier
records of that key: the same seed gives the same (key, seq, payload, late)
sequence. Every record's outcome is appended to the ack log as the producer
reports it (acked with partition and offset, or unknown; aborted for a record
written in a transaction the generator aborted), flushed as it goes,
so a crash leaves a readable log up to the crash. SIGTERM stops it cleanly.

The producer is librdkafka's (confluent-kafka): a pure-Python client tops out
at a few thousand records a second here, below what the pipelines consume.
"""

from __future__ import annotations

import bisect
import csv
import itertools
import json
import os
import random
import signal
import string
import sys
import time
from collections import deque
from dataclasses import replace
from pathlib import Path
from typing import Callable

from confluent_kafka import Producer

from contract.segments import SegmentWriter
from harness.codecs import value_encoder
from harness.evidence.acks import (
    ACK_BATCH_ROWS,
    ACK_BATCH_S,
    ACK_LOG_COLUMNS,
    ACK_ROWS_PER_SEGMENT,
    ack_batch,
    columnar_ack_log,
)
from harness.evidence.values import GENERATOR_VALUES, ValueLog
from harness.workload.generator_settings import TRACE_HEADER, WorkloadSettings
from harness.workload.partners import Partners
from harness.workload.predicate import Predicate
from harness.workload.template import RecordMaker, record_fields, template_encoder
from harness.workload.workers import run_workers, worker_settings
from pipelines.kafka_security import password_from_env
from pipelines.model import SOURCE_RECORD

ALPHABET = (string.ascii_letters + string.digits).encode()
# A random byte -> a letter or digit: payloads cost one getrandbits and one translate, not a choice per character
# (that was half of the generator's time per record).
_PAYLOAD_LETTERS = bytes(ALPHABET[b % len(ALPHABET)] for b in range(256))
Message = tuple  # (Kafka key text or None, value bytes, headers or None)


def key_text(prefix: str, k: int) -> str:
    """Key number `k` of a source topic whose keys take `prefix` (generator_settings.source_key_prefixes)."""
    return f"{prefix}k{k:04d}"


def record_plan(settings: WorkloadSettings):
    """The deterministic part of the workload: yields (key, seq, payload, late) forever. A worker of several draws
    only its own keys (k % workers == worker), from a seed of its own; a workload of several source topics draws
    each record's topic by their rates, then one of its keys (a partner topic's are not drawn: partners.py)."""
    rng = random.Random(settings.seed if settings.workers == 1 else f"{settings.seed}-worker-{settings.worker}")
    drawn = [s for s in settings.sources if not s.get("partner")]  # a partner topic's records answer others'
    fed = [(s["prefix"], s["keys"], s["rate"]) for s in drawn] or [("", settings.keys, settings.rate)]
    own = [[key_text(prefix, k) for k in range(settings.worker, keys, settings.workers)] for prefix, keys, _ in fed]
    seqs = [[0] * len(keys) for keys in own]
    bounds = list(itertools.accumulate(rate for _, _, rate in fed))
    size = settings.payload_bytes
    index = 0
    while True:
        source = bisect.bisect(bounds, rng.random() * bounds[-1]) if len(fed) > 1 else 0
        keys = own[source]
        at = rng.randrange(len(keys))
        late = rng.random() < settings.late_share and index >= settings.late_after
        index += 1
        payload = rng.getrandbits(8 * size).to_bytes(size, "little").translate(_PAYLOAD_LETTERS).decode()
        yield keys[at], seqs[source][at], payload, late
        seqs[source][at] += 1


class AckLog:
    """Appends outcomes in send order as the producer reports them; flushed on every drain.

    librdkafka reports each record's outcome through a delivery callback,
    served by the producer's poll() in this thread; the log keeps send order.
    In a transaction, a record's line waits for the transaction's end
    (`settle`): written, it is acknowledged only once committed.
    """

    def __init__(self, path: str, transactional: bool = False):
        # A folder (not acks.csv): the log in columnar form, each drain's lines one batch of a segment.
        self._segments = SegmentWriter(Path(path), ACK_ROWS_PER_SEGMENT) if columnar_ack_log(path) else None
        self._unwritten: list[tuple] = []  # columnar: drained lines waiting for their batch
        self._written_at = time.monotonic()
        if self._segments is None:
            self._file = open(path, "a", newline="")
            self._csv = csv.writer(self._file)
            if self._file.tell() == 0:
                self._csv.writerow(ACK_LOG_COLUMNS)
        self.pending: deque = deque()  # [row, outcome or None, held by an open transaction]
        self._transactional = transactional
        self._open: list = []  # the open transaction's entries
        self.acked = 0
        self.unknown = 0
        self.aborted = 0

    def add(self, row: tuple, resend: bool = False) -> Callable:
        """Queue `row` (a deliberate copy of a record sent before: `resend`); returns the delivery callback that
        records its outcome."""
        entry = [row, None, self._transactional, int(resend)]
        self.pending.append(entry)
        if self._transactional:
            self._open.append(entry)

        def delivered(error, message) -> None:
            entry[1] = ("unknown", "", "") if error is not None else ("acked", message.partition(), message.offset())

        return delivered

    def settle(self, aborted: bool) -> None:
        """The open transaction ended: its records are acknowledged (committed), or aborted where written."""
        for entry in self._open:
            if aborted:
                _, partition, offset = entry[1] or ("", "", "")
                entry[1] = ("aborted", partition, offset)
            entry[2] = False
        self._open = []

    def drain(self, final: bool = False) -> None:
        lines = []
        while self.pending and (final or (self.pending[0][1] is not None and not self.pending[0][2])):
            row, outcome, held, resend = self.pending.popleft()
            if (
                outcome is None or held
            ):  # never reported, or in a transaction that never ended: it may or may not be there
                outcome = ("unknown", "", "")
            lines.append(row + outcome + (resend,))
            if outcome[0] == "acked":
                self.acked += 1
            elif outcome[0] == "aborted":
                self.aborted += 1
            else:
                self.unknown += 1
        if self._segments is not None:
            # A batch per drain would be a few lines each (its framing then outweighs them): lines are gathered for
            # at most ACK_BATCH_S, so a generator killed loses at most that much more of its log than the CSV's.
            self._unwritten += lines
            if final or len(self._unwritten) >= ACK_BATCH_ROWS or time.monotonic() - self._written_at >= ACK_BATCH_S:
                self._segments.write(ack_batch(self._unwritten))
                self._unwritten, self._written_at = [], time.monotonic()
        else:
            self._csv.writerows(lines)
            self._file.flush()

    def close(self) -> None:
        if self._segments is not None:
            self._segments.write(ack_batch(self._unwritten))
            self._segments.close()
        else:
            self._file.close()


class Transactions:
    """A transactional producer upstream: a transaction every `size` records; every `abort_every`-th one is
    aborted after its records were written (a read_uncommitted reader sees them), and they are sent again, as an
    application that retries would, in the next transaction."""

    def __init__(self, producer: "Producer", log: AckLog, size: int, abort_every: int):
        self._producer, self._log, self._size, self._abort_every = producer, log, size, abort_every
        self._records: list[tuple] = []  # (message, row, resend) of the open transaction
        self.ended = 0
        self.again: deque = deque()  # aborted records to send again
        producer.init_transactions(30)
        producer.begin_transaction()

    def add(self, message: Message, row: tuple, resend: bool = False) -> None:
        self._records.append((message, row, resend))
        if len(self._records) >= self._size:
            self.end()

    def end(self, last: bool = False) -> None:
        if not self._records:
            return
        self.ended += 1
        abort = bool(self._abort_every) and self.ended % self._abort_every == 0 and not last
        if abort:
            self._producer.flush(30)  # written before the abort marker
            self._producer.abort_transaction(30)
            self.again.extend(self._records)
        else:
            self._producer.commit_transaction(30)
        self._log.settle(aborted=abort)
        self._records = []
        if not last:
            self._producer.begin_transaction()


def planned_records(settings: WorkloadSettings) -> int | None:
    """How many records the workload is: exactly rate x duration (rounded), capped by max_records;
    None when neither bounds it (runs until stopped)."""
    bounds = [
        b
        for b in (
            None if settings.duration_s is None else round(settings.rate * settings.duration_s),
            settings.max_records,
        )
        if b is not None
    ]
    return min(bounds) if bounds else None


def _producer(settings: WorkloadSettings) -> "Producer":
    """The workload's librdkafka producer: idempotent unless the scenario says not, transactional where it asks."""
    return Producer(
        {
            "bootstrap.servers": settings.bootstrap_servers,
            **settings.kafka_security.librdkafka(
                password_from_env()
            ),  # the password: in the environment, never the file
            "acks": settings.acks,
            "enable.idempotence": settings.idempotence,
            "linger.ms": 5,
            "retries": 2**31 - 1 if settings.idempotence else 3,
            "delivery.timeout.ms": 30000,
            "request.timeout.ms": 10000,
            "max.in.flight.requests.per.connection": 5 if settings.idempotence else 1,
            "queue.buffering.max.messages": 1_000_000,
            "topic.metadata.refresh.interval.ms": 2000,  # partitions added while it runs are written to within seconds
            **(
                {"transactional.id": f"harness-generator-{settings.seed}-{os.getpid()}"}
                if settings.transaction_records > 0
                else {}
            ),
        }
    )


def run(settings: WorkloadSettings) -> dict:
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    signal.signal(signal.SIGINT, lambda *_: stopping.append(True))
    transactional = settings.transaction_records > 0
    producer = _producer(settings)
    log = AckLog(settings.ack_log, transactional)
    transactions = (
        Transactions(producer, log, settings.transaction_records, settings.abort_every) if transactional else None
    )
    topic_of, message_of = routed_messages(settings)
    plan = record_plan(settings)
    total = planned_records(settings)
    resends = Resends(settings)
    partners = Partners(settings) if settings.partners else None
    start = time.monotonic()
    sent = 0
    try:
        while not stopping and (total is None or sent < total or resends.waiting or (partners and partners.waiting)):
            for message, row in resends.due():
                _produce(producer, topic_of(row[0]), message, log.add(row, resend=True))
                if transactions is not None:
                    transactions.add(message, row, resend=True)
            for key, seq, fields in partners.due() if partners else ():  # no transactions (scenario/parse.py)
                event_ms = int(time.time() * 1000)
                row = (key, seq, event_ms, 0)
                _produce(producer, topic_of(key), message_of(key, seq, event_ms, "", fields), log.add(row))
            elapsed = time.monotonic() - start
            # Record i is due at i / rate: the last of rate x duration records goes out just before the end.
            due = int(elapsed * settings.rate) + 1 - sent
            if total is not None:
                due = min(due, total - sent)
            if due <= 0:
                producer.poll(min(0.05, 1.0 / settings.rate))  # serves delivery callbacks while it waits
                log.drain()
                continue
            for _ in range(min(due, 1000)):
                resend = False
                if transactions is not None and transactions.again:
                    message, row, resend = transactions.again.popleft()  # an aborted record, sent again
                else:
                    key, seq, payload, late = next(plan)
                    event_ms = int(time.time() * 1000) - (int(settings.late_by_s * 1000) if late else 0)
                    message = message_of(key, seq, event_ms, payload)
                    row = (key, seq, event_ms, int(late))
                    resends.note(message, row)
                    if partners is not None:
                        partners.note(key, seq)
                    sent += 1
                _produce(producer, topic_of(row[0]), message, log.add(row, resend))
                if transactions is not None:
                    transactions.add(message, row, resend)
            producer.poll(0)
            log.drain()
        while transactions is not None and transactions.again and not stopping:  # the last aborted ones, once more
            message, row, resend = transactions.again.popleft()
            _produce(producer, topic_of(row[0]), message, log.add(row, resend))
            transactions.add(message, row, resend)
        if transactions is not None:
            transactions.end(last=True)
        producer.flush(60)
    finally:
        producer.flush(30)  # after a stop: what is in flight still gets its outcome
        log.drain(final=True)
        log.close()
        if partners is not None:
            partners.close()
    sent += partners.sent if partners else 0
    return {"sent": sent, "acked": log.acked, "unknown": log.unknown, "aborted": log.aborted}


class Resends:
    """The resend fault: a seeded share of the records, each sent again (the same message) resend_after_s after
    the first time."""

    def __init__(self, settings: WorkloadSettings):
        self._rng = random.Random(f"resend-{settings.seed}")
        self._share, self._after_s = settings.resend_share, settings.resend_after_s
        self._queue: deque = deque()  # (due monotonic time, message, row), in due order

    def note(self, message: Message, row: tuple) -> None:
        if self._share and self._rng.random() < self._share:
            self._queue.append((time.monotonic() + self._after_s, message, row))

    @property
    def waiting(self) -> bool:
        return bool(self._queue)

    def due(self) -> list[tuple[Message, tuple]]:
        now, found = time.monotonic(), []
        while self._queue and self._queue[0][0] <= now:
            found.append(self._queue.popleft()[1:])
        return found


def routed_messages(settings: WorkloadSettings) -> tuple[Callable[[str], str], Callable[..., Message]]:
    """Key -> the topic its records go to, and (key, seq, event time, payload, fields set over it) -> the record's
    message: the one source topic's, or with several each key's own topic's (its format, its codec)."""
    if not settings.sources:
        return (lambda key: settings.topic), source_messages(settings)
    topics, makers = {}, {}
    for source in settings.sources:
        own = {f: source[f] for f in ("topic", "keys", "rate", "record", "codec")}
        maker = source_messages(replace(settings, **own, sources=[]))
        for k in range(source["keys"]):
            topics[key_text(source["prefix"], k)] = source["topic"]
            makers[key_text(source["prefix"], k)] = maker
    return topics.__getitem__, lambda key, seq, event_ms, payload, fields=None: makers[key](
        key, seq, event_ms, payload, fields
    )


def source_messages(settings: WorkloadSettings) -> Callable[..., Message]:
    """(key, seq, event time, payload, fields) -> the source record's message: the harness's own record in the
    topic's codec, or one of the workload's record template (JSON, or Avro of the team's schema), `fields` (a
    partner's: partners.py) set over it; with `headers`, TRACE_HEADER = "key:seq" on each."""

    def trace(key: str, seq: int) -> list:
        return [(TRACE_HEADER, f"{key}:{seq}".encode())] if settings.headers else []

    if settings.record is None:
        encode = value_encoder(settings.codec, SOURCE_RECORD)
        return lambda key, seq, event_ms, payload, fields=None: (
            key,
            encode({"key": key, "seq": seq, "event_time_ms": event_ms, "payload": payload}),
            trace(key, seq) or None,
        )
    maker = RecordMaker(settings.record, settings.seed)
    drops = DeclaredDrops(record_fields(settings.record), settings.keeps, settings.dropped_dir)
    values = _value_log(settings)
    encode_record = template_encoder(settings.record)

    def templated(key: str, seq: int, event_ms: int, payload: str, fields: dict | None = None) -> Message:
        value, message_key, headers = maker.make(key, seq, event_ms, fields)
        drops.note(key, seq, value)
        if values is not None:
            values.note(key, seq, value)
        return message_key, encode_record(value), (headers + trace(key, seq)) or None

    return templated


def _value_log(settings: WorkloadSettings) -> ValueLog | None:
    """Where the values the aggregates are judged by go, one file per generator process (None: none declared)."""
    if not settings.value_fields or settings.value_log is None:
        return None
    name = f"{GENERATOR_VALUES}-{settings.worker}.csv" if settings.workers > 1 else f"{GENERATOR_VALUES}.csv"
    return ValueLog(Path(settings.value_log) / name, settings.value_fields)


class DeclaredDrops:
    """The records each declared filter drops by design (an application's `keeps`, an output's `receives`),
    appended to dropped/<streamlet>.jsonl as they are sent: the checker expects them missing downstream of it,
    not lost. `filters`: streamlet -> its SQL predicate over the template's `fields`."""

    def __init__(self, fields: list[str], filters: dict[str, str], folder: str | None):
        self.filters = {name: Predicate(sql, fields) for name, sql in filters.items()}
        self.files = {}
        if self.filters:
            Path(folder).mkdir(parents=True, exist_ok=True)
            self.files = {name: open(Path(folder) / f"{name}.jsonl", "a", buffering=1) for name in self.filters}

    def note(self, key: str, seq: int, value: dict) -> None:
        for name, predicate in self.filters.items():
            if not predicate.keeps(value):
                line = {"key": key, "seq": seq, "reason": f"declared: {predicate.sql}", "batch": -1}
                self.files[name].write(json.dumps({**line, "ts_ms": int(time.time() * 1000)}) + "\n")

    def close(self) -> None:
        for file in self.files.values():
            file.close()


def _produce(producer: "Producer", topic: str, message: Message, on_delivery: Callable) -> None:
    """Queue one record; when librdkafka's local queue is full, serve callbacks until there is room."""
    key, value, headers = message
    while True:
        try:
            producer.produce(
                topic,
                key=None if key is None else key.encode(),
                value=value,
                on_delivery=on_delivery,
                headers=headers,
            )
            return
        except BufferError:
            producer.poll(0.05)


USAGE = "usage: python -m harness.workload.generator SETTINGS.json [--worker N]"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) not in (1, 3) or (len(argv) == 3 and (argv[1] != "--worker" or not argv[2].isdigit())):
        print(USAGE, file=sys.stderr)
        return 2
    settings = WorkloadSettings.load(argv[0])
    if len(argv) == 3:
        settings = worker_settings(settings, int(argv[2]), planned_records(settings))
    elif settings.workers > 1:
        return run_workers(argv[0], settings.workers)
    summary = run(settings)
    print(json.dumps({"generator": summary}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
