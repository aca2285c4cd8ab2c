"""A table in an SQLite file of the run's own (`database: sqlite`: work/<output>/<table>.sqlite), audited by row
triggers (harness/outputs/tables.py); the job gets the file's path as ${database.NAME}."""

from contract.applications import TABLE_OUTPUT
from contract.egress import RECORDS
from harness.outputs.kind import OutputKind, Placeholder
from harness.outputs.tables import FIELDS, TABLE, SqliteTable, TableSink, offers_table, parse_table

SQLITE = "sqlite"  # its `database`


def _sink(run, name: str, settings: dict) -> TableSink:
    path = str(run.layout.workdir(name) / f"{settings['table']}.sqlite")
    table = SqliteTable(settings["table"], settings["columns"], settings["identity"], path=path)
    placeholders = {f"table.{table.table}": table.name, f"database.{table.table}": path}
    return TableSink(run, name, table, placeholders, settings["written_by"])


DATABASE = Placeholder(
    "database",
    "the SQLite file of the output table NAME (an output with database: sqlite)",
    "SQLite output table",
    "SQLite tables",
)

KIND = OutputKind(
    "sqlite-table",
    TABLE_OUTPUT,
    "a table in an SQLite file of the run's own",
    marker="table",
    fields=FIELDS,
    parse=lambda spec: parse_table(spec, SQLITE),
    evidence=lambda settings: RECORDS,
    sink=_sink,
    variant=("database", SQLITE),
    placeholders=(TABLE, DATABASE),
    offers=lambda name, raw: {
        prefix: table for prefix in (TABLE.prefix, DATABASE.prefix) for table in offers_table(name, raw).values()
    },
)
