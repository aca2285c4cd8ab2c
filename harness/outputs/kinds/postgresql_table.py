"""A table in the run's own schema of the scenario's PostgreSQL store (`database: postgresql`, the default), audited
by row triggers (harness/outputs/tables.py); the job gets its name with the schema as ${table.NAME}."""

from contract.applications import TABLE_OUTPUT
from contract.egress import RECORDS
from harness.outputs.kind import OutputKind
from harness.outputs.tables import FIELDS, TABLE, PostgresTable, TableSink, offers_table, parse_table, schema_name

POSTGRESQL = "postgresql"  # its `database`, the default


def _sink(run, name: str, settings: dict) -> TableSink:
    table = PostgresTable(
        settings["table"], settings["columns"], settings["identity"], url=run.store_url, schema=schema_name(run.run_id)
    )
    return TableSink(run, name, table, {f"table.{table.table}": table.name}, settings["written_by"])


KIND = OutputKind(
    "postgresql-table",
    TABLE_OUTPUT,
    "a table in the run's own schema of the scenario's PostgreSQL store",
    marker="table",
    fields=FIELDS,
    parse=lambda spec: parse_table(spec, POSTGRESQL),
    evidence=lambda settings: RECORDS,
    sink=_sink,
    variant=("database", POSTGRESQL),
    default_variant=True,
    placeholders=(TABLE,),
    offers=offers_table,
    needs_store="output tables live in a PostgreSQL store (set store: postgresql://...) or SQLite (database: sqlite)",
)
