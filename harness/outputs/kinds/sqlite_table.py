"""A table in an SQLite file of the run's own (`database: sqlite`: work/<output>/<table>.sqlite), audited by row
triggers (harness/outputs/tables.py); the job gets the file's path as ${database.NAME}."""

from harness.outputs.kind import Placeholder
from harness.outputs.tables import TABLE, SqliteTable, TableSink, offers_table, table_kind

DATABASE = Placeholder(
    "database",
    "the SQLite file of the output table NAME (an output with database: sqlite)",
    "SQLite output table",
    "SQLite tables",
)


def _sink(run, name: str, settings: dict) -> TableSink:
    path = str(run.layout.workdir(name) / f"{settings['table']}.sqlite")
    table = SqliteTable(settings["table"], settings["columns"], settings["identity"], path=path)
    placeholders = {f"table.{table.table}": table.name, f"database.{table.table}": path}
    return TableSink(run, name, table, placeholders, settings)


def _offers(name: str, raw: dict) -> dict[str, str]:
    """${table.NAME} and ${database.NAME}: the table's name."""
    return {prefix: table for prefix in (TABLE.prefix, DATABASE.prefix) for table in offers_table(name, raw).values()}


KIND = table_kind(
    "sqlite-table", "a table in an SQLite file of the run's own", "sqlite", _sink, (TABLE, DATABASE), offers=_offers
)
