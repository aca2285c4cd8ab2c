"""A Delta Lake table an application writes (`format: delta`): committed through its `_delta_log`, whose newest
commit records each data file added or removed; the job gets Delta's jars from the harness (jars/delta/pom.xml)."""

from contract.table_files import DELTA_LOG, delta_live_files
from harness.outputs.files import TableFormat, file_kind, newest_entry_ms

FORMAT = TableFormat("delta", delta_live_files, lambda folder: newest_entry_ms(folder / DELTA_LOG))

KIND = file_kind("delta-table", "a Delta Lake table the job writes in ${path.NAME}", FORMAT, jar_sets=("delta",))
