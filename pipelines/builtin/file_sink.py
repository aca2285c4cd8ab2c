"""Spark's own file sink (Parquet), as users write it: writeStream.format("parquet") with a checkpoint.

Spark documents the file sink as exactly-once: a batch's files count once its entry is in the sink's
metadata log (`_spark_metadata/`), and readers that go through that log never see the files of an attempt
that did not commit. The harness judges what really happens under kills, from the files themselves:

- deliveries: every data file in the folder, committed or not (an attempt killed after writing its files
  and before committing them left them there), each row with the Kafka offset it came from;
- state: the rows of the files the metadata log lists, which is what a reader of the table sees.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from pyspark.sql import functions as F

from pipelines.api import SEQ_RECORD, Inlet, Shape, Streamlet

COLUMNS = ("key", "seq", "event_time_ms", "batches", "topic", "partition", "offset")


def committed_files(table: Path) -> dict[str, int]:
    """Data file name -> the batch that committed it, from the sink's metadata log (a compacted log lists
    every earlier batch's files too: a file first seen there is given that batch)."""
    logs = []
    for entry in (table / "_spark_metadata").glob("*"):
        name = entry.name.removesuffix(".compact")
        if name.isdigit():
            logs.append((int(name), entry))
    batch_of, deleted = {}, set()
    for batch, entry in sorted(logs):
        for line in entry.read_text().splitlines()[1:]:  # the first line is the log's version ("v1")
            if not line.strip():
                continue
            item = json.loads(line)
            name = Path(item["path"]).name
            if item.get("action") == "delete":
                deleted.add(name)
            else:
                batch_of.setdefault(name, batch)
    return {name: batch for name, batch in batch_of.items() if name not in deleted}


def data_files(table: Path) -> list[Path]:
    """Every data file the sink wrote, committed or not, in the order they were written."""
    return sorted(table.glob("part-*.parquet"), key=lambda p: (p.stat().st_mtime_ns, p.name))


def _rows(path: Path):
    """The file's rows; none from a file a killed attempt left unfinished (empty or cut: no reader sees it)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path, columns=list(COLUMNS))
    except (pa.ArrowInvalid, OSError) as exc:
        print(f"{path.name}: unreadable, skipped ({exc})", flush=True)
        return iter(())
    return zip(*(table.column(c).to_pylist() for c in COLUMNS))


class FileSink(Streamlet):
    kind = "file-sink"
    shape = Shape(inlets=(Inlet("in", SEQ_RECORD),))
    description = "Spark's own Parquet file sink (writeStream.format('parquet')): judged from its data files and metadata log"
    egress_evidence = "exported"

    def build(self, ctx):
        records = ctx.read(self.shape.inlets[0]).select(
            "key", "seq", F.unix_millis("event_time").alias("event_time_ms"),
            F.coalesce(F.to_json("batches"), F.lit("{}")).alias("batches"), "topic", "partition", "offset", "payload")
        return [ctx.write_stream(records, "parquet", path=str(ctx.workdir / "table"))]

    def export_state(self, ctx):
        table = ctx.workdir / "table"
        committed = committed_files(table)
        for path in data_files(table):
            if path.name in committed:
                for key, seq, *_ in _rows(path):
                    yield {"key": key, "seq": seq, "batch_id": committed[path.name]}

    def export_deliveries(self, ctx):
        table = ctx.workdir / "table"
        committed = committed_files(table)
        for path in data_files(table):
            written_ms = os.stat(path).st_mtime_ns // 1_000_000
            for key, seq, event_ms, batches, topic, partition, offset in _rows(path):
                yield {"key": key, "seq": seq, "event_time_ms": event_ms, "batches": batches, "topic": topic,
                       "kafka_partition": partition, "kafka_offset": offset, "batch_id": committed.get(path.name, -1),
                       "received_ms": written_ms}
