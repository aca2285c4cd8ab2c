"""The brokers' view of who wrote each record (producers.csv): one line per record batch of the run's topics, read
from the embedded brokers' log segments after the workload: its offsets, the producer id and epoch the broker
assigned to the client that wrote it, whether it is transactional, its first and last timestamps, and, for a
control batch (a transaction's end, written by its coordinator), whether it marks a commit or an abort.

Every Kafka producer that writes idempotently (the default since Kafka 3.0: Spark's Kafka sink, the harness's
streamlets) gets a producer id of its own from the broker, so two drivers writing the same topic, a zombie and its
successor, write batches under different ids: producers.csv tells their copies apart where the records do not.
Written by the runner for faults that declare they need it (FaultKind.records_producers); absent on a cluster the
harness did not start (its log segments are not the run's)."""

from __future__ import annotations

import csv
import struct
from pathlib import Path
from typing import Iterator

import pandas as pd

PRODUCER_COLUMNS = (
    "topic",
    "partition",
    "base_offset",
    "last_offset",
    "producer_id",
    "producer_epoch",
    "transactional",
    "base_ms",
    "max_ms",
    "control",
)
_HEAD = struct.Struct(">qi")  # baseOffset, batchLength
_BATCH = struct.Struct(">ibihiqqqhii")  # leader epoch, magic, crc, attributes, last offset delta, timestamps, ...
TRANSACTIONAL = 0x10  # attributes bit 4
CONTROL = 0x20  # attributes bit 5: the batch holds one control record, a transaction marker
COMMIT, ABORT = "commit", "abort"  # a control record's key: version, then its type (0 abort, 1 commit)


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """A zigzag varint at `pos`: its value and the position after it."""
    shift = raw = 0
    while True:
        byte = data[pos]
        raw |= (byte & 0x7F) << shift
        pos += 1
        if not byte & 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7


def _marker(data: bytes, pos: int) -> str:
    """The type of the control record at `pos` (its length, attributes, timestamp and offset deltas, key length,
    then the key: version int16, type int16)."""
    _, pos = _varint(data, pos)
    _, pos = _varint(data, pos + 1)
    _, pos = _varint(data, pos)
    _, pos = _varint(data, pos)
    (kind,) = struct.unpack_from(">h", data, pos + 2)
    return COMMIT if kind == 1 else ABORT if kind == 0 else f"control-{kind}"


def log_batches(path: Path) -> Iterator[tuple[int, int, int, int, bool, int, int, str]]:
    """Each record batch of a log segment (format v2): base and last offset, producer id and epoch, transactional,
    first and last timestamp (ms), its marker ("" for records). Stops at the end, or at a batch cut short (a
    segment still being written)."""
    data = Path(path).read_bytes()
    pos = 0
    while pos + _HEAD.size + _BATCH.size <= len(data):
        base, length = _HEAD.unpack_from(data, pos)
        if length <= 0 or pos + _HEAD.size + length > len(data):
            return
        _, magic, _, attributes, last_delta, base_ms, max_ms, producer, epoch, _, _ = _BATCH.unpack_from(
            data, pos + _HEAD.size
        )
        if magic != 2:
            return
        marker = _marker(data, pos + _HEAD.size + _BATCH.size) if attributes & CONTROL else ""
        yield base, base + last_delta, producer, epoch, bool(attributes & TRANSACTIONAL), base_ms, max_ms, marker
        pos += _HEAD.size + length


def _partition_dirs(cluster: Path, topics: set[str]) -> dict[tuple[str, int], Path]:
    """One replica's folder per partition of `topics` among the brokers' data folders (node-N/data/TOPIC-P)."""
    found: dict[tuple[str, int], Path] = {}
    for folder in sorted(cluster.glob("node-*/data/*-*")):
        topic, _, partition = folder.name.rpartition("-")
        if topic in topics and partition.isdigit():
            found.setdefault((topic, int(partition)), folder)
    return found


def record_producers(cluster: Path, topics: set[str], path: Path) -> int:
    """Write producers.csv for `topics` from the log segments under `cluster`; the number of batches written."""
    count = 0
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(PRODUCER_COLUMNS)
        for (topic, partition), folder in sorted(_partition_dirs(cluster, topics).items()):
            for segment in sorted(folder.glob("*.log")):
                for batch in log_batches(segment):
                    writer.writerow((topic, partition, *batch[:4], int(batch[4]), *batch[5:]))
                    count += 1
    return count


def read_producers(path: Path) -> pd.DataFrame | None:
    """producers.csv (None: the run has none). ValueError or OSError where it cannot be read."""
    if not path.is_file():
        return None
    frame = pd.read_csv(path, dtype={"topic": str, "control": str}, keep_default_na=False)
    missing = [c for c in PRODUCER_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"no column {missing[0]}")
    return frame
