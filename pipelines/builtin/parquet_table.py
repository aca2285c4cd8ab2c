"""What Spark's file-based sinks (the Parquet file sink, Delta) have in common for the evidence: the columns
they are given, their data files, and reading a file's rows back without Spark."""

from __future__ import annotations

import os
from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from contract.egress import EXPORTED
from contract.table_files import data_files
from pipelines.api import Streamlet
from pipelines.context import batch_map_json

COLUMNS = ("key", "seq", "event_time_ms", "batches", "topic", "partition", "offset")


def table_columns(records: DataFrame) -> DataFrame:
    """An inlet's records as the table stores them: the evidence columns, then the payload."""
    return records.select(
        "key",
        "seq",
        F.unix_millis("event_time").alias("event_time_ms"),
        batch_map_json(records).alias("batches"),
        "topic",
        "partition",
        "offset",
        "payload",
    )


def rows(path: Path):
    """The file's rows (as COLUMNS); none from a file a killed attempt left unfinished (empty or cut: no
    reader sees it), which the export's log names."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path, columns=list(COLUMNS))
    except (pa.ArrowInvalid, OSError) as exc:
        print(f"{path.name}: unreadable, skipped ({exc})", flush=True)
        return iter(())
    return zip(*(table.column(c).to_pylist() for c in COLUMNS))


def state_rows(table: Path, committed: dict[str, int]):
    """The rows of the committed files (name -> the batch that committed it): what a reader of the table sees."""
    for path in data_files(table):
        if path.name in committed:
            for key, seq, *_ in rows(path):
                yield {"key": key, "seq": seq, "batch_id": committed[path.name]}


def delivered_rows(table: Path, committed: dict[str, int]):
    """Every row of every data file, committed or not (batch -1: written by an attempt that never committed)."""
    for path in data_files(table):
        written_ms = os.stat(path).st_mtime_ns // 1_000_000
        for key, seq, event_ms, batches, topic, partition, offset in rows(path):
            yield {
                "key": key,
                "seq": seq,
                "event_time_ms": event_ms,
                "batches": batches,
                "topic": topic,
                "kafka_partition": partition,
                "kafka_offset": offset,
                "batch_id": committed.get(path.name, -1),
                "received_ms": written_ms,
            }


class TableSink(Streamlet):
    """An egress that writes a table of Parquet files in ctx.workdir/table and commits them through a log of its
    own: `committed(table)` reads that log (data file name -> the batch that committed it)."""

    egress_evidence = EXPORTED

    @staticmethod
    def committed(table: Path) -> dict[str, int]:  # pragma: no cover - interface
        raise NotImplementedError

    def export_state(self, ctx):
        table = ctx.workdir / "table"
        return state_rows(table, self.committed(table))

    def export_deliveries(self, ctx):
        table = ctx.workdir / "table"
        return delivered_rows(table, self.committed(table))
