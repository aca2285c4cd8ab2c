"""An SQLite output table as the harness prepares it (its audit trigger, WAL), written by statements a job would
use, read back and exported as the checker reads it: every insert attempt is a delivery, an upsert's update is
explained by its insert, an UPDATE alone makes the output partly observable; the harness's reads never wait for a
job's open transaction."""

from __future__ import annotations

import json
import sqlite3
import time

from contract.egress import AUDIT, STATE
from harness.evidence.checkpoint import BatchTimes
from harness.outputs.tables import SqliteTable, TableProbe
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


def _exported(tmp_path, table: SqliteTable, batches: BatchTimes | None = None) -> tuple[dict, list, list]:
    """The export, its deliveries (key, seq, batch) and state; `batches`: the job's checkpoint (default: none)."""
    batches = batches or BatchTimes(tmp_path / "no-checkpoints")
    summary = table.export(ExportedEvidence(tmp_path / "egress.sqlite"), batches)
    with sqlite3.connect(tmp_path / "egress.sqlite") as db:
        deliveries = db.execute(f"SELECT key, seq, batch_id FROM {AUDIT} ORDER BY rowid").fetchall()
        state = db.execute(f"SELECT key, seq FROM {STATE} ORDER BY key, seq").fetchall()
    return summary, deliveries, state


def test_upserts_are_counted_as_deliveries_and_the_state_as_the_table_holds_it(tmp_path):
    table = _table(tmp_path)
    upsert = "INSERT INTO orders VALUES (?, ?) ON CONFLICT (order_id) DO UPDATE SET amount = excluded.amount"
    _job(table, (upsert, [("k0001-0", 5.0), ("k0001-1", 6.0)]))
    _job(table, (upsert, [("k0001-1", 6.0), ("k0002-0", 7.0)]))  # a replayed batch: k0001-1 again
    summary, deliveries, state = _exported(tmp_path, table)
    assert deliveries == [("k0001", 0, -1), ("k0001", 1, -1), ("k0001", 1, -1), ("k0002", 0, -1)]
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
    assert deliveries == [("k0001", 0, -1), ("k0001", 1, -1), ("k0001", 0, -1)]  # BEFORE INSERT saw the skipped offer


def test_a_rolled_back_batch_leaves_no_delivery_and_reads_never_wait_for_an_open_transaction(tmp_path):
    table = _table(tmp_path)
    db = sqlite3.connect(table.path)
    db.execute("BEGIN IMMEDIATE")  # the job's transaction holds the write lock
    db.execute("INSERT INTO orders VALUES ('k0003-0', 1.0)")
    # uncommitted: unseen, and not waited for (a read that waited would end, after the connection's 30 s, raising
    # "database is locked", since the job's transaction is still open)
    assert table.rows() == [] and table.audit_rows() == []
    db.rollback()
    db.close()
    assert _exported(tmp_path, table)[1] == []
    assert sqlite3.connect(table.path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def _step(query, step: str, batch: int) -> None:
    """The job's checkpoint writes offsets/N (planned) or commits/N (done), now; each a millisecond apart."""
    time.sleep(0.005)
    (query / step).mkdir(parents=True, exist_ok=True)
    (query / step / str(batch)).write_text("v1\n")
    time.sleep(0.005)


def test_each_insert_carries_the_jobs_batch_that_was_running_as_it_was_written(tmp_path):
    table, query = _table(tmp_path), tmp_path / "checkpoints" / "main"
    insert = "INSERT OR IGNORE INTO orders VALUES (?, ?)"  # a replay offers its rows again
    _job(table, (insert, [("k0001-0", 1.0)]))  # before the query planned anything: no batch
    _step(query, "offsets", 0)
    _job(table, (insert, [("k0001-1", 1.0)]))
    _step(query, "commits", 0)
    _step(query, "offsets", 1)
    _job(table, (insert, [("k0001-2", 1.0)]))  # batch 1, killed before its commit: its replay writes again
    _job(table, (insert, [("k0001-2", 1.0)]))
    deliveries = _exported(tmp_path, table, BatchTimes(query.parent))[1]
    assert deliveries == [("k0001", 0, -1), ("k0001", 1, 0), ("k0001", 2, 1), ("k0001", 2, 1)]
    (query.parent / "second").mkdir()  # two queries: which one wrote a row cannot be told by time
    assert {b for _, _, b in _exported(tmp_path, table, BatchTimes(query.parent))[1]} == {-1}


def test_the_probe_counts_the_rows_a_job_offered_for_the_status_line(tmp_path):
    table = _table(tmp_path)
    probe = TableProbe(table)
    try:
        assert probe.delivered() == 0
        _job(table, ("INSERT OR IGNORE INTO orders VALUES (?, ?)", [("k0001-0", 1.0), ("k0001-1", 1.0)]))
        _job(table, ("INSERT OR IGNORE INTO orders VALUES (?, ?)", [("k0001-1", 1.0)]))  # a replay's offer counts
        assert probe.delivered() == 3 and probe.latest_ms() > 0
    finally:
        probe.close()


def test_a_table_the_job_replaced_is_not_read_and_the_history_says_why(tmp_path):
    """Spark's JDBC writer in mode overwrite drops the table and creates it again: its audit is gone with it, and
    what the new table holds is not judged as if every write had been seen."""
    from types import SimpleNamespace

    from harness.evidence.history import OUTPUT_EXPORTED, History
    from harness.evidence.layout import RunLayout
    from harness.outputs.tables import TableSink

    table = _table(tmp_path)
    _job(table, ("INSERT INTO orders VALUES (?, ?)", [("k0001-0", 5.0)]))
    assert table.audited()
    _job(table, ("DROP TABLE orders", [()]), ("CREATE TABLE orders (order_id text, amount real)", [()]))
    _job(table, ("INSERT INTO orders VALUES (?, ?)", [("k0001-1", 6.0)]))
    assert not table.audited()
    layout = RunLayout(tmp_path / "run")
    layout.root.mkdir()
    history = History(layout.history)
    run = SimpleNamespace(layout=layout, history=history, driver_paths=lambda name: None)
    assert TableSink(run, "table", table, {}, {"written_by": "orders"}).export() == {}
    history.close()
    (exported,) = [e for e in map(json.loads, layout.history.read_text().splitlines()) if e["event"] == OUTPUT_EXPORTED]
    assert exported["observed"] == "none" and "the job replaced the table" in exported["unobserved"]
