"""An SQLite output table as the harness prepares it (its audit trigger, WAL), written by statements a job would
use, read back and exported as the checker reads it: every insert attempt is a delivery, an upsert's update is
explained by its insert, an UPDATE alone makes the output partly observable; the harness's reads never wait for a
job's open transaction."""

from __future__ import annotations

import sqlite3
import time

from contract.egress import AUDIT, STATE
from harness.runner.table_outputs import SqliteTable
from pipelines.audit import ExportedEvidence

IDENTITY = {"id": "order_id", "format": "{key}-{seq}"}
COLUMNS = {"order_id": "text PRIMARY KEY", "amount": "real"}


def _table(tmp_path) -> SqliteTable:
    table = SqliteTable("orders", COLUMNS, IDENTITY, path=str(tmp_path / "out" / "orders.sqlite"))
    table.prepare()
    return table


def _job(table: SqliteTable, *statements: tuple[str, list]) -> None:
    """What a job's foreachBatch does: one transaction of statements."""
    db = sqlite3.connect(table.path)
    with db:
        for sql, rows in statements:
            db.executemany(sql, rows)
    db.close()


def _exported(tmp_path, table: SqliteTable) -> tuple[dict, list, list]:
    summary = table.export(ExportedEvidence(tmp_path / "egress.sqlite"))
    with sqlite3.connect(tmp_path / "egress.sqlite") as db:
        deliveries = db.execute(f"SELECT key, seq FROM {AUDIT} ORDER BY rowid").fetchall()
        state = db.execute(f"SELECT key, seq FROM {STATE} ORDER BY key, seq").fetchall()
    return summary, deliveries, state


def test_upserts_are_counted_as_deliveries_and_the_state_as_the_table_holds_it(tmp_path):
    table = _table(tmp_path)
    upsert = "INSERT INTO orders VALUES (?, ?) ON CONFLICT (order_id) DO UPDATE SET amount = excluded.amount"
    _job(table, (upsert, [("k0001-0", 5.0), ("k0001-1", 6.0)]))
    _job(table, (upsert, [("k0001-1", 6.0), ("k0002-0", 7.0)]))  # a replayed batch: k0001-1 again
    summary, deliveries, state = _exported(tmp_path, table)
    assert deliveries == [("k0001", 0), ("k0001", 1), ("k0001", 1), ("k0002", 0)]
    assert state == [("k0001", 0), ("k0001", 1), ("k0002", 0)]
    assert summary == {"rows": 3, "inserts": 4, "updates_alone": 0}  # the upsert's update: its insert explains it
    assert table.rows()[0] == {"value": {"order_id": "k0001-0", "amount": 5.0}}


def test_an_update_no_insert_explains_makes_the_output_partly_observable(tmp_path):
    table = _table(tmp_path)
    _job(table, ("INSERT INTO orders VALUES (?, ?)", [("k0001-0", 5.0), ("k0001-1", 6.0)]))
    _job(table, ("UPDATE orders SET amount = amount + 1 WHERE order_id = ?", [("k0001-1",)]))
    _job(table, ("INSERT OR IGNORE INTO orders VALUES (?, ?)", [("k0001-0", 9.0)]))  # offered, then skipped
    summary, deliveries, _ = _exported(tmp_path, table)
    assert summary["updates_alone"] == 1 and summary["rows"] == 2
    assert deliveries == [("k0001", 0), ("k0001", 1), ("k0001", 0)]  # BEFORE INSERT saw the skipped offer too


def test_a_rolled_back_batch_leaves_no_delivery_and_reads_never_wait_for_an_open_transaction(tmp_path):
    table = _table(tmp_path)
    db = sqlite3.connect(table.path)
    db.execute("BEGIN IMMEDIATE")  # the job's transaction holds the write lock
    db.execute("INSERT INTO orders VALUES ('k0003-0', 1.0)")
    t0 = time.monotonic()
    assert table.rows() == [] and table.audit_rows() == []  # uncommitted: unseen, and not waited for
    assert time.monotonic() - t0 < 1.0
    db.rollback()
    db.close()
    assert _exported(tmp_path, table)[1] == []
    assert sqlite3.connect(table.path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
