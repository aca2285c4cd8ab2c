"""A table of Parquet files an application writes with Spark's file sink (`format: parquet`): committed through
its `_spark_metadata` log, one entry per batch naming the files it added."""

from pathlib import Path

from contract.table_files import SPARK_LOG, spark_committed_files
from harness.outputs.files import Committed, TableFormat, file_kind, newest_entry_ms


def committed(folder: Path) -> Committed:
    return Committed(spark_committed_files(folder))


FORMAT = TableFormat("parquet", committed, lambda folder: newest_entry_ms(folder / SPARK_LOG))

KIND = file_kind("parquet-files", "Spark's Parquet file sink, writing in ${path.NAME}", FORMAT)
