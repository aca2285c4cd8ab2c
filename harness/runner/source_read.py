"""The source topic's records, read back once after the workload (before the cluster stops) into the run directory,
so that what the source sent can be audited without the broker: each record's partition, offset, timestamp, key and
value (decoded from the topic's codec into JSON text), one Parquet file per topic. What retention deleted before the
read is said to be missing (offsets below a partition's first), never guessed. Reading nothing while the pipeline
runs, it costs the run nothing but this read at its end."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.parquet as pq
from kafka import KafkaConsumer, TopicPartition

from harness.cluster.access import KafkaAccess
from harness.errors import HarnessError
from harness.evidence.topics import dump_record

SCHEMA = pa.schema(
    [
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp_ms", pa.int64()),
        ("key", pa.string()),
        ("value", pa.string()),  # the decoded value as JSON text (DuckDB: value->>'field')
    ]
)
ROW_GROUP = 100_000
STALL_S = 60.0  # no record for this long while some remain: the read stops, the rest said to be missing


@dataclass
class SourceRead:
    """What was read: records written, and per partition the offsets missing ([partition, from, to), to exclusive)."""

    records: int = 0
    missing: list[list[int]] = field(default_factory=list)


def read_source(
    access: KafkaAccess,
    topic: str,
    starts: dict[int, int],
    ends: dict[int, int],
    decode: Callable[[bytes], Any],
    path: Path,
) -> SourceRead:
    """Every record of `topic` from each partition's first offset (`starts`) to its end (`ends`) into `path`."""
    read = SourceRead(missing=[[p, 0, start] for p, start in sorted(starts.items()) if start > 0])
    remaining = {p: end for p, end in ends.items() if end > starts.get(p, 0)}
    path.parent.mkdir(parents=True, exist_ok=True)
    consumer = KafkaConsumer(**access.kafka_python(), enable_auto_commit=False, group_id=None, auto_offset_reset="none")
    try:
        consumer.assign([TopicPartition(topic, p) for p in remaining])
        for p in remaining:
            consumer.seek(TopicPartition(topic, p), starts.get(p, 0))
        with pq.ParquetWriter(path, SCHEMA, compression="zstd") as writer:
            _copy(consumer, topic, remaining, decode, writer, read)
    except Exception as exc:  # the broker gone, a record that cannot be read: what was read stays
        raise HarnessError(f"reading the source topic {topic} back: {type(exc).__name__}: {exc}") from None
    finally:
        consumer.close(autocommit=False)
    return read


def _copy(consumer: KafkaConsumer, topic: str, remaining: dict[int, int], decode, writer, read: SourceRead) -> None:
    """Copy records until every partition's position reaches its end (a transaction's markers are no records, so
    the position, not the last record, says so), or nothing comes for STALL_S."""
    rows: list[tuple] = []
    last = time.monotonic()
    while remaining and time.monotonic() - last < STALL_S:
        for tp, records in consumer.poll(timeout_ms=500, max_records=10_000).items():
            end = remaining.get(tp.partition, -1)
            for line in (dump_record(r, decode) for r in records if r.offset < end):  # as a topic dump reads it
                value = None if line["value"] is None else json.dumps(line["value"])
                rows.append((line["partition"], line["offset"], line["timestamp_ms"], line["key"], value))
            last = time.monotonic()
        for p, end in list(remaining.items()):
            if consumer.position(TopicPartition(topic, p)) >= end:
                del remaining[p]
        if len(rows) >= ROW_GROUP:
            _write(writer, rows, read)
            rows = []
    if rows:
        _write(writer, rows, read)
    for p, end in sorted(remaining.items()):  # stalled: what could not be read is missing, not guessed
        read.missing.append([p, consumer.position(TopicPartition(topic, p)), end])


def _write(writer: pq.ParquetWriter, rows: list[tuple], read: SourceRead) -> None:
    writer.write_table(pa.Table.from_arrays([pa.array(c) for c in zip(*rows)], schema=SCHEMA))
    read.records += len(rows)
