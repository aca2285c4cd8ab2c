"""Running totals per account (examples/account-totals) judged on real runs under SIGKILLs, each count equal to one
made here from the raw outputs: the source topic as the run read it back (each order's account and amount) and the
output topic's recording (each value written) or the PostgreSQL table read here, the job's batches from its
checkpoint's offsets files."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from harness.checker.check import check_run
from harness.checker.expect import EXPECTATIONS
from harness.outputs.tables import schema_name
from harness.runner.console import Console
from harness.runner.run import run_scenario
from harness.scenario.parse import parse_scenario
from tests.evidence_helpers import run_example, why
from tests.test_application_files import _kills
from tests.test_faults import ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.long, pytest.mark.timeout(900)]  # make test-long
EXAMPLE = ROOT / "examples" / "account-totals"


def _orders(run_dir: Path) -> list[dict]:
    """The source topic's orders as the run read them back: partition, offset, account, amount."""
    table = pq.read_table(run_dir / "source" / "orders.parquet", columns=["partition", "offset", "value"])
    return [{**row, **json.loads(row.pop("value"))} for row in table.to_pylist() if row["value"]]


def _totals(orders: list[dict]) -> dict[str, tuple]:
    by: dict[str, list[float]] = {}
    for order in orders:
        by.setdefault(order["account"], []).append(order["amount"])
    return {a: (len(v), round(sum(v), 2), max(v)) for a, v in by.items()}


def _written(run_dir: Path) -> list[dict]:
    """The values the job wrote, in write order (broker timestamp, then partition and offset)."""
    lines = [json.loads(line) for line in (run_dir / "topics" / "account-totals.jsonl").read_text().splitlines()]
    return [line["value"] for line in sorted(lines, key=lambda x: (x["timestamp_ms"], x["partition"], x["offset"]))]


def _section(report) -> dict:
    section = report.sections["aggregates"]
    return dict(zip(section.header, section.rows[0]))


def test_running_totals_in_sparks_state_end_right_though_the_driver_was_killed(tmp_path):
    run_dir = tmp_path / "run"
    report = run_example(EXAMPLE, "scenario.yaml", run_dir)
    assert len(_kills(run_dir)) == 2 and report.outcome == "pass", report[EXPECTATIONS]
    expected, written = _totals(_orders(run_dir)), _written(run_dir)
    last = {v["account"]: (v["orders"], v["total"], v["largest"]) for v in written}
    assert last == expected
    copies = sum(n - 1 for n in Counter(json.dumps(v, sort_keys=True) for v in written).values())
    row = _section(report)
    assert (row["groups"], row["exact"], row["values written"]) == (len(expected), len(expected), len(written))
    assert row["written twice"] == copies > 0 and row["no batch gives"] == 0
    assert row["verdict"] == "effectively-exactly-once"


def _batch_ranges(run_dir: Path, batch: int) -> dict[int, tuple[int, int]]:
    """partition -> [start, end) the job's batch read, from its checkpoint's offsets files."""
    offsets = run_dir / "checkpoints" / "totals" / "main" / "offsets"

    def ends(n: int) -> dict[int, int]:
        if n < 0:
            return {}
        (topic,) = json.loads((offsets / str(n)).read_text().splitlines()[-1]).values()
        return {int(p): o for p, o in topic.items()}

    before, after = ends(batch - 1), ends(batch)
    return {p: (before.get(p, 0), end) for p, end in after.items()}


def _witnessed(run_dir: Path, report, orders: list[dict], over: dict[str, int]) -> None:
    """Each group the report names over: the records of its account the batches it names read (their offsets from
    the checkpoint's offsets files) are as many as its total is over by."""
    judged = report.sections["aggregates"].lines[1:]
    assert judged, "no group named"
    for line in judged:  # "balances: group k0002 over: batch 11, 12 counted twice, 226 of its records (...)"
        account = line.split("group ")[1].split(" ")[0]
        batches = [int(b) for b in line.split(": batch ")[1].split(" counted")[0].split(", ")]
        ranges = [_batch_ranges(run_dir, b) for b in batches]
        read = [
            o
            for o in orders
            if o["account"] == account
            and any(r[o["partition"]][0] <= o["offset"] < r[o["partition"]][1] for r in ranges)
        ]
        assert len(read) == over[account] and f", {len(read)} of its records" in line, line


def test_each_batch_a_kill_made_the_job_write_again_is_counted_twice_into_its_accounts_totals(tmp_path):
    run_dir = tmp_path / "run"
    report = run_example(EXAMPLE, "per-batch.yaml", run_dir)
    assert len(_kills(run_dir)) == 2 and report.outcome == "pass", report[EXPECTATIONS]
    orders, written = _orders(run_dir), _written(run_dir)
    expected = _totals(orders)
    parts: dict[str, int] = Counter()
    for value in written:
        parts[value["account"]] += value["orders"]
    over = {a: parts[a] - expected[a][0] for a in expected}
    row = _section(report)
    assert row["records counted twice"] == sum(over.values()) > 0 and row["over"] == sum(n > 0 for n in over.values())
    _witnessed(run_dir, report, orders, over)


def _table(postgres, run_dir: Path) -> dict[str, tuple]:
    """The job's table as the test reads it: account -> orders, total, largest."""
    import psycopg

    with psycopg.connect(postgres.url) as db:
        rows = db.execute(f"SELECT account, orders, total, largest FROM {schema_name(run_dir.name)}.balances")
        return {a: (n, round(t, 2), m) for a, n, t, m in rows}


@pytest.mark.parametrize("scenario", ["postgres", "postgres-per-batch"])
def test_totals_upserted_into_postgresql_are_judged_from_the_table_and_its_audit(tmp_path, postgres, scenario):
    """Spark's running totals set into each account's row end right; each batch's part added to it counts the batch
    a kill made the job write again twice, as the table the test reads shows."""
    raw = yaml.safe_load((EXAMPLE / f"{scenario}.yaml").read_text())
    raw["store"] = postgres.url
    run_dir = tmp_path / scenario
    summary = run_scenario(parse_scenario(raw, EXAMPLE), run_dir, console=Console(quiet=True))
    assert summary.status == "complete" and not summary.failed_streamlets, why(summary)
    report = check_run(run_dir)
    assert len(_kills(run_dir)) == 2 and report.outcome == "pass", report[EXPECTATIONS]
    orders, table = _orders(run_dir), _table(postgres, run_dir)
    expected = _totals(orders)
    over = {a: table[a][0] - expected[a][0] for a in expected}
    row = _section(report)
    assert row["groups"] == len(expected) == len(table)
    assert row["records counted twice"] == sum(over.values()) and row["exact"] == sum(n == 0 for n in over.values())
    if scenario == "postgres":
        assert table == expected and row["verdict"] == "effectively-exactly-once"
    else:
        assert sum(over.values()) > 0 and row["verdict"] == "at-least-once"
        _witnessed(run_dir, report, orders, over)


def _window_start(created: str) -> str:
    """The 10-second window an order's time falls in, as the report names it (UTC, to the second)."""
    moment = datetime.fromisoformat(created.replace("Z", "+00:00"))
    return datetime.fromtimestamp(int(moment.timestamp()) // 10 * 10, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize("scenario", ["windows", "windows-append"])
def test_windowed_totals_to_kafka_match_their_orders_but_the_late_ones(tmp_path, scenario):
    """Per account and 10-second window, in update mode and in append mode (each window once it closed): every
    window's last value is its orders' less those sent a minute late, which the job's watermark dropped."""
    run_dir = tmp_path / "run"
    report = run_example(EXAMPLE, f"{scenario}.yaml", run_dir)
    assert len(_kills(run_dir)) == 2 and report.outcome == "pass", report[EXPECTATIONS]
    table = pq.read_table(run_dir / "source" / "orders.parquet", columns=["value", "timestamp_ms"]).to_pylist()
    orders = [{**json.loads(r["value"]), "sent_ms": r["timestamp_ms"]} for r in table if r["value"]]
    orders = [o for o in orders if o["account"].startswith("k")]  # the closing record left out
    late = [
        o
        for o in orders
        if o["sent_ms"] - datetime.fromisoformat(o["created"].replace("Z", "+00:00")).timestamp() * 1000 > 30_000
    ]
    on_time = Counter((o["account"], _window_start(o["created"])) for o in orders if o not in late)
    last = {}
    for value in _written(run_dir):
        last[(value["account"], _window_start(value["window"]["start"]))] = value["orders"]
    assert last == dict(on_time)
    row = _section(report)
    assert row["dropped by the watermark"] == len(late) > 0 and row["exact"] == row["groups"] == len(on_time)
    assert row["open"] == 0 and row["verdict"] in ("exactly-once", "effectively-exactly-once")
