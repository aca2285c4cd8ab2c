"""The reconciliation's SQL on DuckDB, in this process: each table streamed from its source into DuckDB's own
storage, which spills to disk past its memory limit, so a run larger than memory is still counted."""

from __future__ import annotations

import os
import tempfile

import pyarrow as pa

from harness.checker.summary.identities import schema_of, source_batches
from harness.checker.summary.sources import Source
from harness.checker.summary.sql import Plan, statements

# Not a hard bound on the process (Arrow buffers and results lie outside it): 800MB keeps the whole check of 50M records
# under 2 GiB, and spilled sooner it was no slower (docs/performance.md).
MEMORY_LIMIT = "800MB"


def run_duckdb(views: dict[str, Source], plan: Plan, memory_limit: str = MEMORY_LIMIT) -> dict:
    import duckdb

    with tempfile.TemporaryDirectory(prefix="harness-duckdb-") as spill:
        config = {"memory_limit": memory_limit, "temp_directory": spill, "threads": os.cpu_count() or 1}
        with duckdb.connect(config=config) as con:
            con.execute("SET enable_progress_bar = false")  # its bar goes to stdout, which may be a report (--json)
            for name, source in views.items():
                incoming = pa.RecordBatchReader.from_batches(schema_of(source), source_batches(source))
                con.register("incoming", incoming)
                con.execute(f"CREATE TABLE {name} AS SELECT * FROM incoming")
                con.unregister("incoming")
            results = {}
            for statement in statements(plan):
                if statement.keep:
                    con.execute(f"CREATE TABLE {statement.name} AS {statement.sql}")
                else:
                    results[statement.name] = con.sql(statement.sql).to_arrow_table()
            return results
