"""A Delta Lake table an application writes (`format: delta`): committed through its `_delta_log`, whose newest
commit records each data file added or removed; the job gets Delta's jars from the harness (jars/delta/pom.xml)."""

from contract.applications import FILE_OUTPUT
from contract.table_files import DELTA_LOG, delta_live_files
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

FORMAT = TableFormat("delta", delta_live_files, lambda folder: newest_entry_ms(folder / DELTA_LOG))

KIND = OutputKind(
    "delta-table",
    FILE_OUTPUT,
    "a Delta Lake table the job writes in ${path.NAME}",
    marker="format",
    fields=FIELDS,
    parse=parse_files,
    evidence=evidence,
    sink=lambda run, name, settings: FileSink(run, name, settings, FORMAT),
    placeholders=(PATH,),
    offers=offers_path,
    variant=("format", FORMAT.name),
    jar_sets=("delta",),
)
