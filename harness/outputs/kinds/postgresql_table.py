"""A table in the run's own schema of the scenario's PostgreSQL store (`database: postgresql`, the default), audited
by row triggers (harness/outputs/tables.py); the job gets its name with the schema as ${table.NAME}."""

from harness.outputs.tables import TABLE, PostgresTable, TableSink, offers_table, schema_name, table_kind


def _sink(run, name: str, settings: dict) -> TableSink:
    table = PostgresTable(
        settings["table"], settings["columns"], settings["identity"], url=run.store_url, schema=schema_name(run.run_id)
    )
    return TableSink(run, name, table, {f"table.{table.table}": table.name}, settings)


KIND = table_kind(
    "postgresql-table",
    "a table in the run's own schema of the scenario's PostgreSQL store",
    "postgresql",
    _sink,
    (TABLE,),
    offers=offers_table,
    default_variant=True,
    needs_store="output tables live in a PostgreSQL store (set store: postgresql://...) or SQLite (database: sqlite)",
)
