"""Fault-free pipeline runs: real broker, real Spark drivers, real stores."""

from __future__ import annotations

import pytest

from harness.checker.check import check_run
from harness.checker.counts import CAUSES, COUNTS, HOP_FINDINGS, VERDICT, WINDOWS
from harness.checker.latency import LATENCY
from harness.report.write import check_and_write
from harness.runner.console import Console
from harness.runner.run import run_scenario
from harness.scenario.parse import parse_scenario
from tests.conftest import unavailable
from tests.evidence_helpers import acked, egress_counts
from tests.test_faults import history

pytestmark = pytest.mark.e2e

MODES = ("append", "upsert", "dedup", "transactional")

FAN_OUT = {
    "name": "all-egress-modes",
    "blueprint": {
        "streamlets": {
            "ingress": {"kind": "ingress"},
            **{f"egress-{m}": {"kind": "egress", "settings": {"mode": m}} for m in MODES},
        },
        "connections": {"ingress.out": [f"egress-{m}.in" for m in MODES]},
    },
    "workload": {"rate": 150, "duration_s": 8, "keys": 5},
}


@pytest.mark.long  # the four modes under kills in make test: test_faults.py's kills after the write
def test_every_egress_mode_gets_every_acknowledged_record_exactly_once(tmp_path):
    summary = run_scenario(parse_scenario(FAN_OUT), tmp_path / "run", console=Console(quiet=True))
    sent = acked(tmp_path / "run")
    assert len(sent) == summary.acked > 1000
    assert summary.unknown == 0
    assert set(summary.driver_exit_codes.values()) == {0}
    for mode in MODES:
        state = egress_counts(tmp_path / "run", f"egress-{mode}", "records")
        audit = egress_counts(tmp_path / "run", f"egress-{mode}", "audit")
        assert set(state) == sent, mode
        assert set(state.values()) == {1}, f"{mode}: duplicates in state"
        assert set(audit) == sent and set(audit.values()) == {1}, f"{mode}: audit should see each record once"
    report = check_run(tmp_path / "run")
    assert report[VERDICT] == "exactly-once" and report[COUNTS].acked == summary.acked
    assert all(h.verdict == "exactly-once" for h in report[HOP_FINDINGS]) and report.gaps == []
    assert report[LATENCY].records == summary.acked


LATE = {
    "name": "late-events",
    "blueprint": {
        "streamlets": {
            "ingress": {"kind": "ingress"},
            "counter": {"kind": "windowed-count", "settings": {"window": "5 seconds", "watermark": "5 seconds"}},
            "egress": {"kind": "window-egress"},
        },
        "connections": {"ingress.out": ["counter.in"], "counter.out": ["egress.in"]},
    },
    "workload": {"rate": 100, "duration_s": 25, "keys": 4, "late_share": 0.1, "late_by_s": 60, "late_after_s": 10},
}


def test_late_events_are_dropped_behind_the_watermark_and_reported(tmp_path):
    """Rows dropped behind the watermark are recovered record by record from the evidence,
    and the window counts the egress received agree with them exactly."""
    import pandas as pd

    from harness.evidence.progress import query_events
    from harness.evidence.watermark import dropped_rows
    from tests.evidence_helpers import read_topic_dump

    run_dir = tmp_path / "run"
    run_scenario(parse_scenario(LATE), run_dir, console=Console(quiet=True))
    # Stopped in the data's order, each once it read what the one before wrote: the counter's last batch, one
    # without input that the watermark moved on, emits the windows it closed after the drain, and the egress must
    # still store them (the checker finds them under-counted otherwise).
    stops = {e["process"] for e in history(run_dir) if e["event"] == "process_stopped"}
    assert stops == {"streamlet-ingress", "streamlet-counter", "streamlet-egress"}, stops
    ended = {
        name: [e["ts_ms"] for e in query_events(run_dir / "progress" / f"{name}.jsonl") if e["event"] == "terminated"]
        for name in ("ingress", "counter", "egress")
    }
    assert ended["ingress"][-1] <= ended["counter"][-1] <= ended["egress"][-1], ended
    acks = pd.read_csv(run_dir / "acks.csv")
    late = acks[(acks.status == "acked") & (acks.late == 1)]
    assert len(late) > 50
    events = query_events(run_dir / "progress" / "counter.jsonl")
    records = read_topic_dump(run_dir / "topics" / "ingress-out.jsonl")
    dropped = dropped_rows(events, "ingress-out", records, 5000, 5000)
    # Only late records are dropped; a late record read before the first watermark existed is not.
    assert len(dropped) > 0
    assert set(zip(dropped.key, dropped.seq)) <= set(zip(late.key, late.seq))

    # Every window the egress received counts exactly the records that were not dropped.
    def per_window(df):
        return df.assign(window_start_ms=df.event_time_ms // 5000 * 5000).groupby(["key", "window_start_ms"]).size()

    expected = per_window(records).sub(per_window(dropped), fill_value=0)
    windows = egress_counts(run_dir, "egress", "windows", "key, window_start_ms, count")
    assert len(windows) >= 4
    for key, start, count in windows:
        assert expected.loc[(key, start)] == count, (key, start)

    # The checker: every missing count is a row dropped behind the watermark; nothing over-counted.
    report = check_run(run_dir)
    assert report[WINDOWS].under_counted == 0 and report[WINDOWS].over_counted == 0 and report[WINDOWS].phantom == 0
    assert report[CAUSES]["lost"]["watermark"] == report[COUNTS].lost > 0
    assert report[CAUSES]["lost"]["unexplained"] == 0
    # Spark's own metric, summed from the progress here: rows at the stateful operator, after the partial
    # aggregation, so never more than the records dropped (and fewer when several late records share a window).
    spark_rows = sum(
        op.get("numRowsDroppedByWatermark", 0)
        for e in events
        if e.get("event") == "progress"
        for op in e["progress"].get("stateOperators", [])
    )
    assert report[WINDOWS].spark_rows_dropped_by_watermark == spark_rows <= len(dropped)
    print(f"late records dropped {len(dropped)}, Spark's numRowsDroppedByWatermark {spark_rows}")


def test_postgres_egress_round_trip(tmp_path):
    import psycopg

    from harness.process import Supervisor
    from tests.postgres_server import PostgresServer, unavailable_reason

    reason = unavailable_reason()
    if reason:
        unavailable(reason)
    server = PostgresServer(Supervisor(tmp_path / "pg-pids"))
    try:
        server.start()
        scenario = {
            "name": "postgres",
            "blueprint": {
                "streamlets": {
                    "ingress": {"kind": "ingress"},
                    "egress": {"kind": "egress", "settings": {"mode": "transactional"}},
                },
                "connections": {"ingress.out": ["egress.in"]},
            },
            "workload": {"rate": 100, "duration_s": 6, "keys": 3},
            "store": server.url,
        }
        run_dir = tmp_path / "pgrun"
        run_scenario(parse_scenario(scenario), run_dir, console=Console(quiet=True))
        sent = acked(run_dir)
        with psycopg.connect(server.url) as db:
            rows = db.execute("SELECT key, seq FROM pgrun_egress.records").fetchall()
            batches = db.execute("SELECT count(*) FROM pgrun_egress.committed_batches").fetchone()[0]
            audited = db.execute("SELECT count(*) FROM pgrun_egress.audit").fetchone()[0]
    finally:
        server.stop()
    assert len(sent) > 300
    assert sorted(rows) == sorted(sent)
    assert audited == len(sent)
    assert batches > 0
    # The tables were copied into the run directory, where the checker judges them.
    assert sorted(egress_counts(run_dir, "egress", "records")) == sorted(sent)
    report, _ = check_and_write(run_dir)
    assert report[VERDICT] == "exactly-once" and report[COUNTS].acked == len(sent) and report.gaps == []
    # The password is in no file the run kept (settings, scenario, history, logs, reports).
    leaks = [p for p in run_dir.rglob("*") if p.is_file() and server.password.encode() in p.read_bytes()]
    assert leaks == []
