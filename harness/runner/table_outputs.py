"""A table output: a PostgreSQL table an application writes (through foreachBatch, say), in a schema of the run's
own, so the harness touches nothing else of the database.

Before the job starts: the schema, the table (from the output's columns) and an audit the job cannot trip on: a
row trigger that appends each row the job writes to an audit table in the same transaction (no lock on the job's
table; rolled back with it). BEFORE INSERT sees every row a statement offers, also one that an ON CONFLICT clause
then updates or skips; AFTER UPDATE sees rows changed by an UPDATE statement (or an upsert's update, which its
insert attempt already counted). After the drivers stopped: the table (the state) and the inserts (the
deliveries) are exported into the run directory as the egress store's contract tables (egress/<output>.sqlite),
each row's identity read from the output's columns; writes by UPDATE alone, which no insert attempt explains, are
counted and make the output partly observable.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from contract.applications import TABLE_OUTPUT
from contract.egress import AUDIT, AUDIT_COLUMNS, MAIN_QUERY, STATE, STATE_COLUMNS
from contract.identity import IdentityReader
from pipelines.stores import Store

if TYPE_CHECKING:
    from harness.runner.pipeline_run import PipelineRun

AUDIT_TABLE = "harness_audit"  # in the run's schema: one per output table, suffixed with its name


def schema_name(run_id: str) -> str:
    """The run's own schema: the only one the harness creates or writes."""
    return "harness_" + re.sub(r"[^a-z0-9_]", "_", run_id.lower())


@dataclass(frozen=True)
class TableOutput:
    url: str  # the store's URL, password included (it never leaves this process)
    schema: str
    table: str
    columns: dict[str, str]  # column -> SQL type (with constraints)
    identity: dict

    @property
    def name(self) -> str:
        return f"{self.schema}.{self.table}"

    @property
    def audit(self) -> str:
        return f"{self.schema}.{AUDIT_TABLE}_{self.table}"

    def prepare(self) -> None:
        """Create the schema, the table and its audit trigger (before the job starts)."""
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
        """The table's rows now, each as {"value": {column: value}} (how identities are read)."""
        import psycopg

        with psycopg.connect(self.url) as db:
            return [{"value": row} for (row,) in db.execute(f"SELECT to_jsonb(t) FROM {self.name} t")]

    def export(self, sqlite_path: Path) -> dict:
        """Copy the table (state) and its audited inserts (deliveries) into `sqlite_path`, in the contract's
        tables; returns what was exported and what was seen only as an update."""
        import psycopg

        read = IdentityReader(self.identity)
        state = [read(row) for row in self.rows()]
        with psycopg.connect(self.url) as db:
            audit = db.execute(f"SELECT op, txid, at_ms, row FROM {self.audit} ORDER BY n").fetchall()
        inserted = {(txid, read({"value": row})) for op, txid, _, row in audit if op == "insert"}
        updates_alone = sum(
            1 for op, txid, _, row in audit if op == "update" and (txid, read({"value": row})) not in inserted
        )
        deliveries = [
            (MAIN_QUERY, -1, _text(key), _text(seq), -1, "{}", None, -1, -1, at_ms)
            for op, _, at_ms, row in audit
            if op == "insert"
            for key, seq in [read({"value": row})]
        ]
        store = Store(sqlite_path=sqlite_path)
        store.create_tables(upsert_key=False, only=(AUDIT, STATE))
        with store.transaction() as tx:
            store.insert(tx, AUDIT, AUDIT_COLUMNS, deliveries)
            rows = [(_text(key), _text(seq), -1, None, -1, "{}", None) for key, seq in state]
            store.insert(tx, STATE, STATE_COLUMNS, rows)
        return {"rows": len(state), "inserts": len(deliveries), "updates_alone": updates_alone}


class TableProbe:
    """When the job last wrote an output table (its audit's newest row, visible once the job's transaction
    committed), over one connection kept open while a kill waits for its moment."""

    def __init__(self, table: TableOutput):
        self.table = table
        self._db = None

    def latest_ms(self) -> int:
        import psycopg

        try:
            if self._db is None:
                self._db = psycopg.connect(self.table.url, autocommit=True)
            return self._db.execute(f"SELECT coalesce(max(at_ms), 0) FROM {self.table.audit}").fetchone()[0]
        except psycopg.Error:  # the server is busy or gone: nothing newer seen this time
            self.close()
            return 0

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


def _text(value) -> str | int | None:
    """An identity part as the store keeps it: integers as integers, anything else as JSON text."""
    if value is None or isinstance(value, (int, str)) and not isinstance(value, bool):
        return value
    return json.dumps(value)


def table_outputs(run: PipelineRun) -> dict[str, TableOutput]:
    """The output tables applications write, in the run's own schema of the scenario's store."""
    return {
        name: TableOutput(
            run.scenario.store_url,
            schema_name(run.run_id),
            inst.settings["table"],
            inst.settings["columns"],
            inst.settings["identity"],
        )
        for name, inst in run.scenario.blueprint.streamlets.items()
        if inst.kind == TABLE_OUTPUT
    }


def output_tables(run: PipelineRun, name: str) -> list[TableProbe]:
    """Probes of the output tables application `name` writes: when it last wrote one (in-flight kills)."""
    return [
        TableProbe(table)
        for output, table in table_outputs(run).items()
        if run.scenario.blueprint.streamlets[output].settings["written_by"] == name
    ]


def prepare_outputs(run: PipelineRun) -> None:
    """Create each output table with its audit, before the applications start."""
    for name, table in table_outputs(run).items():
        table.prepare()
        run.history.record("output_prepared", output=name, table=table.name, audit=table.audit)


def export_tables(run: PipelineRun) -> None:
    """After the drivers stopped: each output table and its audit, into the run directory."""
    for name, table in table_outputs(run).items():
        exported = table.export(run.layout.egress_db(name))
        observed = "partly" if exported["updates_alone"] else "fully"
        run.history.record("output_exported", output=name, table=table.name, observed=observed, **exported)
