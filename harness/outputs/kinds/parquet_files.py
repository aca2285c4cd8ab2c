"""A table of Parquet files an application writes with Spark's file sink (`format: parquet`): committed through
its `_spark_metadata` log, one entry per batch naming the files it added."""

from contract.applications import FILE_OUTPUT
from contract.table_files import SPARK_LOG, spark_committed_files
from harness.outputs.files import (
    FIELDS,
    PATH,
    FileSink,
    TableFormat,
    evidence,
    newest_entry_ms,
    offers_path,
    parse_files,
)
from harness.outputs.kind import OutputKind

FORMAT = TableFormat("parquet", spark_committed_files, lambda folder: newest_entry_ms(folder / SPARK_LOG))

KIND = OutputKind(
    "parquet-files",
    FILE_OUTPUT,
    "Spark's Parquet file sink, writing in ${path.NAME}",
    marker="format",
    fields=FIELDS,
    parse=parse_files,
    evidence=evidence,
    sink=lambda run, name, settings: FileSink(run, name, settings, FORMAT),
    placeholders=(PATH,),
    offers=offers_path,
    variant=("format", FORMAT.name),
)
