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
from pathlib import Path
from typing import Iterator

import pandas as pd

from harness.network.kafka_wire import Batch, record_batches

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


def log_batches(path: Path) -> Iterator[Batch]:
    """Each record batch of a log segment; stops at a batch cut short (a segment still being written)."""
    return record_batches(Path(path).read_bytes())


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
                for b in log_batches(segment):
                    writer.writerow(
                        (topic, partition, b.base_offset, b.last_offset, b.producer_id, b.producer_epoch)
                        + (int(b.transactional), b.base_ms, b.max_ms, b.marker)
                    )
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
