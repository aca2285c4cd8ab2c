"""A team's own job writing a database through foreachBatch (examples/orders-db, unchanged), under a SIGKILL
with a batch in flight and one at any moment: upserts into a real PostgreSQL absorb the replayed batch
(effectively-exactly-once, every insert seen by the harness's audit trigger), plain inserts into SQLite keep its
copies (at-least-once). Each report's counts equal a count made here from the database itself and acks.csv."""

from __future__ import annotations

import sqlite3
from collections import Counter

import pytest
import yaml

from harness.checker.anomaly_records import WITNESSES
from harness.checker.check import check_run
from harness.checker.counts import COUNTS, VERDICT
from harness.checker.expect import EXPECTATIONS
from harness.checker.fault_results import FAULTS
from harness.outputs.tables import schema_name
from harness.runner.console import Console
from harness.runner.run import run_scenario
from harness.scenario.parse import parse_scenario
from tests.evidence_helpers import acked, held_batch_records, why
from tests.test_faults import ROOT, history

# A job's JVM takes minutes to start and run its batches on a busy machine: more than pytest's default 600 s.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]
EXAMPLE = ROOT / "examples" / "orders-db"


def _run(tmp_path, postgres, mode: str):
    raw = yaml.safe_load((EXAMPLE / f"{mode}.yaml").read_text())
    if postgres is not None:
        raw["store"] = postgres.url
    run_dir = tmp_path / f"orders-{mode}"
    summary = run_scenario(parse_scenario(raw, EXAMPLE), run_dir, console=Console(quiet=True))
    assert summary.status == "complete" and summary.faults_played == 2 and not summary.failed_streamlets, why(summary)
    return run_dir, check_run(run_dir)


def _identity(order_id: str) -> tuple[str, int]:
    key, seq = order_id.rsplit("-", 1)
    return key, int(seq)


def _database(postgres, run_dir) -> tuple[Counter, Counter]:
    """Rows of the job's table and the inserts the audit saw, per (key, seq) of their order_id."""
    import psycopg

    schema = schema_name(run_dir.name)
    identity = _identity
    with psycopg.connect(postgres.url) as db:
        rows = Counter(identity(r) for (r,) in db.execute(f"SELECT order_id FROM {schema}.orders"))
        inserts = Counter(
            identity(r)
            for (r,) in db.execute(f"SELECT row->>'order_id' FROM {schema}.harness_audit_orders WHERE op = 'insert'")
        )
    return rows, inserts


def _counted(report, rows: Counter, inserts: Counter, sent: set) -> None:
    assert report[COUNTS].lost == len(sent - set(rows)) == 0
    assert report[COUNTS].duplicated_in_state == sum(1 for r, n in rows.items() if n > 1 and r in sent)
    assert report[COUNTS].duplicated_deliveries == sum(1 for r, n in inserts.items() if n > 1 and r in sent)
    assert report[COUNTS].phantom == len((set(rows) | set(inserts)) - sent) == 0


def test_upserts_in_foreach_batch_absorb_the_replayed_batch_and_every_insert_is_seen(tmp_path, postgres):
    run_dir, report = _run(tmp_path, postgres, "upsert")
    rows, inserts = _database(postgres, run_dir)
    _counted(report, rows, inserts, acked(run_dir))
    assert report[COUNTS].duplicated_deliveries > 0 and report[COUNTS].duplicated_in_state == 0
    assert report[VERDICT] == "effectively-exactly-once" and report.outcome == "pass", report[EXPECTATIONS]
    exported = next(e for e in history(run_dir) if e["event"] == "output_exported")
    assert exported["observed"] == "fully" and exported["inserts"] == sum(inserts.values())
    # The password reached the job through its environment only: in no file the run kept.
    leaks = [p for p in run_dir.rglob("*") if p.is_file() and postgres.password.encode() in p.read_bytes()]
    assert leaks == []


@pytest.mark.long  # a job's table output in make test: the PostgreSQL upserts above
def test_plain_inserts_into_sqlite_keep_the_replayed_batchs_copies(tmp_path):
    run_dir, report = _run(tmp_path, None, "insert")
    with sqlite3.connect(run_dir / "work" / "table" / "orders.sqlite") as db:  # the file the job was given
        rows = Counter(_identity(r) for (r,) in db.execute("SELECT order_id FROM orders"))
        audit = "SELECT json_extract(row, '$.order_id') FROM harness_audit_orders WHERE op = 'insert'"
        inserts = Counter(_identity(r) for (r,) in db.execute(audit))
        audit = "SELECT json_extract(row, '$.order_id'), min(at_ms) FROM harness_audit_orders GROUP BY 1"
        first_written = {_identity(r): at_ms for r, at_ms in db.execute(audit)}
    _counted(report, rows, inserts, acked(run_dir))
    assert report[COUNTS].duplicated_in_state > 0
    assert report[VERDICT] == "at-least-once" and report.outcome == "pass", report[EXPECTATIONS]
    # The after-write kill held a batch between its write and Spark's commit: each of its records was in the table
    # before the kill, is there twice after the replay, and the batch was committed only after the restart.
    held, events = held_batch_records(run_dir, "orders"), history(run_dir)
    begun = next(e for e in events if e["event"] == "fault_begun" and e["fault"] == 1)
    killed_ms = next(e["ts_ms"] for e in events if e["event"] == "process_killed")
    assert held and all(rows[r] >= 2 and first_written[r] < killed_ms for r in held), sorted(held)[:5]
    commit = run_dir / "checkpoints" / "orders" / begun["held_query"] / "commits" / str(begun["held_batch"])
    assert commit.stat().st_mtime_ns // 1_000_000 > killed_ms
    assert report[FAULTS][0].redelivered >= len(held) and report[FAULTS][0].declared == ""
    # A table has no partition or offset; its rows carry the job's batch, read from the job's checkpoint.
    table_copies = [c for w in report[WITNESSES] for c in w.copies if c.hop == "table"]
    assert table_copies and all(c.partition is None and c.offset is None for c in table_copies)
    assert any(c.batches == {"table": begun["held_batch"]} and c.fault == 1 for c in table_copies)


@pytest.mark.long  # make test-long: the same table written through Spark's JDBC writer (the psycopg path above)
@pytest.mark.parametrize(
    "mode, verdict", [("jdbc-insert", "at-least-once"), ("jdbc-upsert", "effectively-exactly-once")]
)
def test_spark_jdbc_writer_appending_keeps_the_replayed_copies_and_upserting_absorbs_them(
    tmp_path, postgres, mode, verdict
):
    run_dir, report = _run(tmp_path, postgres, mode)
    rows, inserts = _database(postgres, run_dir)
    _counted(report, rows, inserts, acked(run_dir))
    assert report[VERDICT] == verdict and report.outcome == "pass", report[EXPECTATIONS]
    exported = next(e for e in history(run_dir) if e["event"] == "output_exported")
    assert exported["observed"] == "fully" and exported["inserts"] == sum(inserts.values())
    leaks = [p for p in run_dir.rglob("*") if p.is_file() and postgres.password.encode() in p.read_bytes()]
    assert leaks == []  # the password only in the job's environment, its JDBC URL without it
