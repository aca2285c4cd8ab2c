"""A table output, of either database's kind (harness/outputs/kinds/): a table an application writes (through
foreachBatch, say), in a PostgreSQL schema of the run's own or an SQLite file of the run's own, so the harness
touches nothing else of any database.

Before the job starts: the table (from the output's columns) and an audit the job cannot trip on: a row trigger
that appends each row the job writes to an audit table in the same transaction (no lock on the job's table; rolled
back with it; an SQLite file is put in WAL mode, where the harness's reads never block the job's writes). BEFORE
INSERT sees every row a statement offers, also one that an ON CONFLICT clause then updates or skips; AFTER UPDATE
sees rows changed by an UPDATE statement (or an upsert's update, which its insert attempt already counted). After
the drivers stopped: the table (the state) and the inserts (the deliveries) are exported into the run directory as
the egress store's contract tables (egress/<output>.sqlite), each row's identity read from the output's columns;
writes by UPDATE alone, which no insert attempt explains, are counted and make the output partly observable.
"""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

from contract.applications import FULLY, PARTLY, TABLE_OUTPUT, UNREAD
from contract.egress import AGGREGATE, AUDIT, MAIN_QUERY, RECORDS, STATE
from contract.identity import IdentityReader
from harness.evidence.checkpoint import BatchTimes
from harness.evidence.history import OUTPUT_EXPORTED
from harness.field import Field
from harness.outputs.aggregate import parse_aggregate, written_values
from harness.outputs.kind import IDENTITY, RECEIVES, WRITTEN_BY, OutputKind, OutputSpec, Placeholder

if TYPE_CHECKING:
    from harness.outputs.run import OutputRun
    from pipelines.audit import ExportedEvidence

AUDIT_TABLE = "harness_audit"  # beside the output table: one per output table, suffixed with its name
IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]{0,62}")
COLUMN_TYPE = re.compile(r"[A-Za-z0-9_ (),]{1,200}")
FIELDS = (  # a table output's, in a scenario
    Field("table", str, None, "its lower-case SQL name", required=True),
    Field("database", str, None, "postgresql (the scenario's store) or sqlite"),
    Field("columns", dict, None, "its columns: name -> SQL type (the harness creates it)", required=True),
    IDENTITY,
    WRITTEN_BY,
    RECEIVES,
    Field(
        "aggregate", dict, None, "a running aggregate's values per group, instead of records (outputs.NAME.aggregate)"
    ),
)
TABLE = Placeholder(
    "table", "the output table NAME, with its schema in PostgreSQL (schema.NAME)", "output table", "tables"
)


def parse_table(spec: OutputSpec, database: str) -> dict:
    """A table output's settings: its `table` and `columns` (SQL names and types: the harness creates it), its
    `database` (its kind's), where its rows' `identity` is read, the application writing it, what it `receives`."""
    table = spec.values["table"]
    if not IDENTIFIER.fullmatch(table):
        raise spec.error("table", f"expected a lower-case SQL name, got {table!r}")
    columns = spec.values["columns"]
    for column, kind in columns.items():
        if not isinstance(column, str) or not IDENTIFIER.fullmatch(column):
            raise spec.error("columns", f"expected lower-case SQL names, got {column!r}")
        if not isinstance(kind, str) or not COLUMN_TYPE.fullmatch(kind):
            raise spec.error(f"columns.{column}", f"expected an SQL type like 'text PRIMARY KEY', got {kind!r}")
    aggregate = parse_aggregate(spec)
    identity = None if aggregate else spec.identity()
    for part in ("key", "seq", "id"):
        if identity and part in identity and identity[part] not in columns:
            raise spec.error(f"identity.{part}", f"{identity[part]!r} is not one of the columns")
    for column in [*aggregate["group"], *aggregate["values"]] if aggregate else ():
        if column not in columns:
            raise spec.error("aggregate", f"{column!r} is not one of the columns ({', '.join(columns)})")
    return {
        "table": table,
        "database": database,
        "columns": dict(columns),
        "identity": identity,
        "aggregate": aggregate,
        "written_by": spec.writer(),
        "receives": spec.receives(),
    }


def table_kind(name: str, help: str, database: str, sink, placeholders: tuple[Placeholder, ...], **more) -> OutputKind:
    """The output kind of a table in `database` (`table:` with `database: <it>`); `more`: the rest of OutputKind's
    fields (offers, default_variant, needs_store)."""
    return OutputKind(
        name,
        TABLE_OUTPUT,
        help,
        marker="table",
        fields=FIELDS,
        parse=lambda spec: parse_table(spec, database),
        evidence=lambda settings: AGGREGATE if settings.get("aggregate") else RECORDS,
        sink=sink,
        variant=("database", database),
        placeholders=placeholders,
        **more,
    )


def offers_table(name: str, raw: dict) -> dict[str, str]:
    """${table.NAME}: the table's name as the scenario gives it (checked by parse_table)."""
    return {TABLE.prefix: raw["table"]} if isinstance(raw.get("table"), str) else {}


def schema_name(run_id: str) -> str:
    """The run's own schema: the only one the harness creates or writes."""
    return "harness_" + re.sub(r"[^a-z0-9_]", "_", run_id.lower())


def jdbc_url(store_url: str, schema: str) -> str:
    """The store as Spark's JDBC writer names it (jdbc:postgresql://HOST:PORT/DB?user=USER&currentSchema=SCHEMA),
    its password left out: the job gets it as PGPASSWORD and passes it as a property."""
    parts = urlsplit(store_url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k not in ("user", "password", "currentSchema")]
    query = ([("user", unquote(parts.username))] if parts.username else []) + query + [("currentSchema", schema)]
    host = parts.hostname or "localhost"
    netloc = f"[{host}]" if ":" in host else host
    return f"jdbc:postgresql://{netloc}:{parts.port or 5432}{parts.path or '/'}?{urlencode(query)}"


@dataclass(frozen=True)
class TableOutput:
    """An output table and its audit; `audit_rows` and the DDL differ per database, the export does not."""

    table: str
    columns: dict[str, str]  # column -> SQL type (with constraints)
    identity: dict

    @property
    def name(self) -> str:
        return self.table

    @property
    def audit(self) -> str:
        return f"{AUDIT_TABLE}_{self.table}"

    def prepare(self) -> None:
        raise NotImplementedError

    def rows(self) -> list[dict]:
        """The table's rows now, each as {"value": {column: value}} (how identities are read)."""
        raise NotImplementedError

    def audit_rows(self) -> list[tuple[str, int, int, dict]]:
        """The audit in write order: (op, group, at_ms, row); an update whose group an insert attempt of the same
        row shares is that upsert's (insert or update)."""
        raise NotImplementedError

    def connect(self):
        """A connection for reads while the job writes (never holding a lock it could trip on)."""
        raise NotImplementedError

    def errors(self) -> tuple[type[Exception], ...]:
        """What a failed read raises: the server busy or gone, the file locked."""
        raise NotImplementedError

    def audited(self) -> bool:
        """Whether the table still has the audit's insert trigger: a job that drops the table and creates it again
        (Spark's JDBC writer in mode overwrite) leaves a table no audit sees."""
        raise NotImplementedError

    def export(self, evidence: ExportedEvidence, batches: BatchTimes) -> dict:
        """Copy the table (state) and its audited inserts (deliveries) into the run directory's evidence, as the
        contract's tables, each insert with the job's batch that was running as it was written (`batches`);
        returns what was exported and what was seen only as an update."""
        read = IdentityReader(self.identity)
        state = [read(row) for row in self.rows()]
        audit = [(op, txid, at_ms, read({"value": row})) for op, txid, at_ms, row in self.audit_rows()]
        updates_alone = sum(1 for i, entry in enumerate(audit) if entry[0] == "update" and not _explained(audit, i))
        deliveries = [
            (MAIN_QUERY, batches.batch_at(at_ms), identity_text(key), identity_text(seq), -1, "{}", None, -1, -1, at_ms)
            for op, _, at_ms, (key, seq) in audit
            if op == "insert"
        ]
        rows = [(identity_text(key), identity_text(seq), -1, None, -1, "{}", None) for key, seq in state]
        evidence.write({AUDIT: deliveries, STATE: rows})
        return {"rows": len(state), "inserts": len(deliveries), "updates_alone": updates_alone}


def _explained(audit: list[tuple], i: int) -> bool:
    """An update is an upsert's when an insert attempt of the same identity precedes it in the same group (its
    transaction in PostgreSQL; in SQLite the insert attempt just before it that stored no row)."""
    _, group, _, identity = audit[i]
    return any(o == "insert" and g == group and ident == identity for o, g, _, ident in audit[:i])


@dataclass(frozen=True)
class PostgresTable(TableOutput):
    """A table in the run's own schema of the scenario's PostgreSQL store."""

    url: str = ""  # the store's URL, password included (it never leaves this process)
    schema: str = ""

    @property
    def name(self) -> str:
        return f"{self.schema}.{self.table}"

    @property
    def audit(self) -> str:
        return f"{self.schema}.{AUDIT_TABLE}_{self.table}"

    def prepare(self) -> None:
        import psycopg

        function = f"{self.schema}.{AUDIT_TABLE}_{self.table}_row"
        columns = ", ".join(f"{name} {kind}" for name, kind in self.columns.items())
        with psycopg.connect(self.url, autocommit=True) as db:
            db.execute(f"CREATE SCHEMA IF NOT EXISTS {self.schema}")
            db.execute(f"CREATE TABLE {self.name} ({columns})")
            db.execute(
                f"CREATE TABLE {self.audit} (n BIGSERIAL PRIMARY KEY, op TEXT, txid BIGINT, at_ms BIGINT, row JSONB)"
            )
            db.execute(
                f"CREATE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                f"INSERT INTO {self.audit} (op, txid, at_ms, row) VALUES (lower(TG_OP), txid_current(), "
                "(extract(epoch FROM clock_timestamp()) * 1000)::bigint, to_jsonb(NEW)); RETURN NEW; END $$"
            )
            db.execute(
                f"CREATE TRIGGER {AUDIT_TABLE}_insert BEFORE INSERT ON {self.name} "
                f"FOR EACH ROW EXECUTE FUNCTION {function}()"
            )
            db.execute(
                f"CREATE TRIGGER {AUDIT_TABLE}_update AFTER UPDATE ON {self.name} "
                f"FOR EACH ROW EXECUTE FUNCTION {function}()"
            )

    def rows(self) -> list[dict]:
        import psycopg

        with psycopg.connect(self.url) as db:
            return [{"value": row} for (row,) in db.execute(f"SELECT to_jsonb(t) FROM {self.name} t")]

    def audit_rows(self) -> list[tuple[str, int, int, dict]]:
        import psycopg

        with psycopg.connect(self.url) as db:
            return db.execute(f"SELECT op, txid, at_ms, row FROM {self.audit} ORDER BY n").fetchall()

    def connect(self):
        import psycopg

        return psycopg.connect(self.url, autocommit=True)

    def errors(self) -> tuple[type[Exception], ...]:
        import psycopg

        return (psycopg.Error,)

    def audited(self) -> bool:
        import psycopg

        with psycopg.connect(self.url) as db:
            found = db.execute(
                "SELECT count(*) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
                "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname = %s "
                "AND t.tgname = %s",
                (self.schema, self.table, f"{AUDIT_TABLE}_insert"),
            ).fetchone()
        return bool(found and found[0])


# SQLite's clock in milliseconds since the epoch (julianday counts days from noon, 4714 BC)
SQLITE_NOW_MS = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"


@dataclass(frozen=True)
class SqliteTable(TableOutput):
    """A table in an SQLite file of the run's own (the job is given its path: ${database.TABLE})."""

    path: str = ""

    def connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)  # autocommit: no transaction held open
        db.row_factory = sqlite3.Row
        return db

    def errors(self) -> tuple[type[Exception], ...]:
        return (sqlite3.Error,)

    def audited(self) -> bool:
        name = f"{AUDIT_TABLE}_insert_{self.table}"
        db = self.connect()
        try:
            (found,) = db.execute("SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name = ?", (name,))
        finally:
            db.close()
        return found[0] > 0

    def prepare(self) -> None:
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        columns = ", ".join(f"{name} {kind}" for name, kind in self.columns.items())
        row = "json_object(" + ", ".join(f"'{c}', NEW.{c}" for c in self.columns) + ")"
        audit = f"INSERT INTO {self.audit} (op, at_ms, row) VALUES"
        db = self.connect()
        try:
            db.execute("PRAGMA journal_mode=WAL")  # readers never block the job's writer, nor it them
            db.execute(f"CREATE TABLE {self.table} ({columns})")
            db.execute(
                f"CREATE TABLE {self.audit} (n INTEGER PRIMARY KEY AUTOINCREMENT, op TEXT, at_ms INTEGER, row TEXT, "
                "stored INTEGER NOT NULL DEFAULT 0)"
            )
            # SQLite fires a row's BEFORE and AFTER triggers around its change, row by row: an insert attempt that
            # stored no row (an upsert's conflict) stays stored = 0, and the update it turned into follows it.
            triggers = {
                "insert": ("BEFORE INSERT", f"{audit} ('insert', {SQLITE_NOW_MS}, {row})"),
                "stored": (
                    "AFTER INSERT",
                    f"UPDATE {self.audit} SET stored = 1 WHERE n = (SELECT max(n) FROM {self.audit})",
                ),
                "update": ("AFTER UPDATE", f"{audit} ('update', {SQLITE_NOW_MS}, {row})"),
            }
            for name, (when, body) in triggers.items():
                trigger = f"{AUDIT_TABLE}_{name}_{self.table}"
                db.execute(f"CREATE TRIGGER {trigger} {when} ON {self.table} FOR EACH ROW BEGIN {body}; END")
        finally:
            db.close()

    def rows(self) -> list[dict]:
        db = self.connect()
        try:
            return [{"value": dict(row)} for row in db.execute(f"SELECT * FROM {self.table}")]
        finally:
            db.close()

    def audit_rows(self) -> list[tuple[str, int, int, dict]]:
        db = self.connect()
        try:
            found = db.execute(f"SELECT n, op, at_ms, row, stored FROM {self.audit} ORDER BY n").fetchall()
        finally:
            db.close()
        rows = []
        for i, (n, op, at_ms, row, _) in enumerate(found):
            before = found[i - 1] if i else None
            turned = op == "update" and before is not None and before["op"] == "insert" and not before["stored"]
            rows.append((op, before["n"] if turned else n, at_ms, json.loads(row)))
        return rows


class TableProbe:
    """When the job last wrote an output table (its audit's newest row, visible once the job's transaction
    committed), over one connection kept open while a kill waits for its moment."""

    def __init__(self, table: TableOutput):
        self.table = table
        self._db = None

    def latest_ms(self) -> int:
        found = self._ask(f"SELECT coalesce(max(at_ms), 0) FROM {self.table.audit}")
        return 0 if found is None else found

    def delivered(self) -> int | None:
        """How many rows the job has offered the table so far (its audited inserts: the run's status line's
        deliveries); None when it could not be read this time."""
        return self._ask(f"SELECT count(*) FROM {self.table.audit} WHERE op = 'insert'")

    def _ask(self, sql: str) -> int | None:
        try:
            if self._db is None:
                self._db = self.table.connect()
            return self._db.execute(sql).fetchone()[0]
        except self.table.errors():  # the server is busy or gone, the file locked: nothing seen this time
            self.close()
            return None

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


def identity_text(value) -> str | int | None:
    """An identity part as the store keeps it: integers as integers, anything else as JSON text."""
    if value is None or isinstance(value, (int, str)) and not isinstance(value, bool):
        return value
    return json.dumps(value)


def record_export(
    run: OutputRun, name: str, exported: dict, unobserved: str | None, observed: str | None = None, **fields
) -> None:
    """output_exported in the history: what an output's export read, observed only in part when `unobserved` says
    what could not be (or not at all: `observed` UNREAD)."""
    observed = observed or (PARTLY if unobserved else FULLY)
    run.history.record(OUTPUT_EXPORTED, output=name, observed=observed, unobserved=unobserved, **fields, **exported)


class TableSink:
    """An output table in a run (a Sink, harness/outputs/kind.py): prepared with its audit before the job starts,
    exported with it after the drivers stopped."""

    def __init__(self, run: OutputRun, name: str, table: TableOutput, placeholders: dict[str, str], settings: dict):
        self.run, self.name, self.table = run, name, table
        self._placeholders = placeholders
        self.writer = settings["written_by"]  # the application writing it: its checkpoint dates each insert's batch
        self.aggregate = settings.get("aggregate")  # its values per group, instead of records

    def prepare(self) -> dict:
        self.table.prepare()
        return {"table": self.table.name, "audit": self.table.audit}

    def placeholders(self) -> dict[str, str]:
        return self._placeholders

    def reader(self) -> tuple[dict, Callable[[], list[dict]]] | None:
        return None if self.aggregate else (self.table.identity, self.table.rows)

    def probe(self) -> TableProbe:
        return TableProbe(self.table)

    def export(self) -> dict:
        from pipelines.audit import ExportedEvidence  # here: its Arrow and NumPy only where a run exports

        if not self.table.audited():
            why = "the job replaced the table (dropped and created it, as Spark's JDBC writer in mode overwrite does)"
            record_export(self.run, self.name, {}, why, observed=UNREAD, table=self.table.name)
            return {}
        if self.aggregate:
            exported = self._export_values()
            record_export(self.run, self.name, exported, None, table=self.table.name)
            return exported
        evidence = ExportedEvidence.of(self.run.driver_paths(self.name))
        exported = self.table.export(evidence, BatchTimes(self.run.layout.checkpoints(self.writer)))
        alone = exported["updates_alone"]
        unobserved = f"{alone} write(s) by UPDATE statements no insert explains (not deliveries the audit can count)"
        record_export(self.run, self.name, exported, unobserved if alone else None, table=self.table.name)
        return exported

    def _export_values(self) -> dict:
        """An aggregate's table: its rows at the end (its state) and each value a row took, in write order."""
        state = [row["value"] for row in self.table.rows()]
        written = written_values(self.table.audit_rows(), self.aggregate["group"])
        layout = self.run.layout
        write_lines(layout.egress_state(self.name), state)
        write_lines(layout.egress_values(self.name), [{"at_ms": at_ms, "row": row} for at_ms, row in written])
        return {"rows": len(state), "written": len(written)}


def write_lines(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row, default=str) + "\n" for row in rows))
