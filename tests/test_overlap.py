"""scenarios/overlap.yaml on three real brokers: a retention shrink under the stopped processor, overlapped by a
broker kill and a broker pause (for a few seconds two of three brokers are gone, the controller quorum with
them). The harness's own admin calls must outlast both, the run must complete, and every lost record must be
one retention deleted: the lost set is counted here from the raw evidence (acks.csv, the egress's table, the
run's recording of `ingested` and the positions and log starts the history holds), importing no checker."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tests.conftest import run_harness
from tests.evidence_helpers import acked, egress_counts

pytestmark = pytest.mark.e2e

SCENARIO = Path(__file__).resolve().parent.parent / "scenarios" / "overlap.yaml"


def _deleted_unread(run_dir: Path) -> tuple[set[tuple[str, int]], set[tuple[str, int]], int]:
    """Records of `ingested` between the processor's committed position and the log start observed when it
    resumed, with no copy at or after that log start, and never written to `processed` (written by the batch
    interrupted at the stop); every record the recording of `ingested` saw; and how many offsets in that window
    retention deleted before the recording saw them (a broker fault can stall it for seconds)."""
    history = [json.loads(line) for line in (run_dir / "history.jsonl").open()]
    position = next(e for e in history if e["event"] == "consumer_position" and e["streamlet"] == "processor")
    resumed = next(e for e in history if e["event"] == "log_start_observed" and e["streamlet"] == "processor")
    low = {p: o for _, p, o in position["partitions"]}
    high = {row[1]: row[2] for row in resumed["partitions"]}
    inside, kept, seen = set(), set(), set()
    for r in map(json.loads, (run_dir / "topics" / "ingested.jsonl").open()):
        record = (r["value"]["key"], r["value"]["seq"])
        seen.add(record)
        if low[r["partition"]] <= r["offset"] < high[r["partition"]]:
            inside.add(record)
        elif r["offset"] >= high[r["partition"]]:
            kept.add(record)
    recorded = next(e for e in history if e["event"] == "topics_recorded")
    unseen = sum(
        max(0, min(end, high[p]) - max(start, low[p]))
        for topic, p, start, end in recorded.get("missed") or []
        if topic == "ingested"
    )
    downstream = {
        (r["value"]["key"], r["value"]["seq"]) for r in map(json.loads, (run_dir / "topics" / "processed.jsonl").open())
    }
    return (inside - kept - downstream) & acked(run_dir), seen, unseen


@pytest.mark.long  # three brokers, a retention shrink overlapped by broker faults
def test_overlapping_faults_complete_and_every_loss_is_the_deleted_range(tmp_path):
    run_dir = tmp_path / "overlap"
    result = run_harness("run", str(SCENARIO), "--duration", "30", "--out", str(run_dir), timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "harness: error" not in result.stderr and "3 of 3 faults played" in result.stdout, result.stdout
    lost = acked(run_dir) - set(egress_counts(run_dir, "egress", "records"))
    deleted, seen, unseen = _deleted_unread(run_dir)
    assert lost and deleted <= lost, "every record retention deleted unread is lost"
    # The rest were never seen by the recording, and retention deleted at least as many offsets it never saw.
    assert not (lost - deleted) & seen and len(lost - deleted) <= unseen, (len(lost - deleted), unseen)
    reported = {
        (row["key"], int(row["seq"])): row["cause"]
        for row in csv.DictReader((run_dir / "anomalies" / "lost.csv").open())
    }
    assert set(reported) == lost and set(reported.values()) == {"retention"}
    report = json.loads((run_dir / "report.json").read_text())
    assert report["counts"]["lost"] == len(lost) and report["outcome"] == "pass" and not report["doubts"]
    history = [json.loads(line)["event"] for line in (run_dir / "history.jsonl").open()]
    assert "fault_failed" not in history and "fault_skipped" not in history
    assert run_harness("clean", str(run_dir)).stdout.strip() == "nothing was running"
