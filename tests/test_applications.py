"""A team's own PySpark job, unchanged (examples/enrich-kafka: plain PySpark, argparse, importing nothing of the
harness), run under SIGKILLs of its driver on a real broker and judged from the topic it writes: the report's
counts equal a count made here from the recorded output topic and acks.csv alone."""

from __future__ import annotations

import json
import re
from collections import Counter

import pandas as pd
import pytest

from harness.checker.check import check_run
from harness.runner.console import Console
from harness.runner.run import run_scenario
from harness.scenario import load_scenario
from tests.evidence_helpers import acked, why
from tests.test_faults import ROOT, history

pytestmark = pytest.mark.e2e
EXAMPLE = ROOT / "examples" / "enrich-kafka"


def test_the_job_needs_nothing_of_the_harness():
    source = (EXAMPLE / "job.py").read_text()
    assert not re.search(r"^\s*(from|import)\s+(harness|pipelines|contract)\b", source, re.M)


@pytest.fixture(scope="module")
def enrich_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("enrich") / "run"
    summary = run_scenario(load_scenario(EXAMPLE / "scenario.yaml"), run_dir, console=Console(quiet=True))
    assert summary.status == "complete" and summary.faults_played == 2 and not summary.failed_streamlets, why(summary)
    return run_dir, history(run_dir), check_run(run_dir)


def test_killed_in_flight_the_kafka_to_kafka_job_is_at_least_once_as_its_output_topic_counts(enrich_run):
    run_dir, events, report = enrich_run
    # The independent count: every record of the output topic as the run recorded it, its identity parsed from the
    # job's own order_id ("k0003-17"), against what the broker acknowledged to the generator.
    copies: Counter = Counter()
    for line in (run_dir / "topics" / "orders-enriched.jsonl").read_text().splitlines():
        key, seq = json.loads(line)["value"]["order_id"].rsplit("-", 1)
        copies[(key, int(seq))] += 1
    sent = acked(run_dir)
    assert report.counts.lost == len(sent - set(copies)) == 0
    duplicated = sum(1 for record, n in copies.items() if n > 1 and record in sent)
    assert report.counts.duplicated_deliveries == report.counts.duplicated_in_state == duplicated > 0
    every_sent = set(pd.read_csv(run_dir / "acks.csv")[["key", "seq"]].itertuples(index=False, name=None))
    assert report.counts.phantom == len(set(copies) - every_sent) == 0
    assert report.verdict == "at-least-once" and report.outcome == "pass", report.expectations
    # The in-flight kill held a batch planned and partly written: its replay made the copies.
    held = next(e for e in events if e["event"] == "fault_begun" and e.get("at") == "in-flight")
    assert "held_batch" in held and report.faults[0].redelivered > 0


def test_the_driver_was_killed_and_restarted_by_its_own_command_and_its_recovery_read_from_its_checkpoint(enrich_run):
    run_dir, events, report = enrich_run
    started = [e for e in events if e["event"] == "process_started" and e["process"] == "streamlet-enrich"]
    killed = [e for e in events if e["event"] == "process_killed" and e["process"] == "streamlet-enrich"]
    assert len(started) == 3 and len(killed) == 2 and all(k["signal"] == "SIGKILL" for k in killed)
    argv = json.loads((run_dir / "streamlets" / "enrich.json").read_text())["argv"]
    assert argv[1] == "job.py" and argv[argv.index("--orders") + 1] == "orders"
    # kill -> the first batch committed in the job's checkpoint after its restart
    assert all(f.recovery_s is not None and 0 < f.recovery_s < 300 for f in report.faults), report.faults
    described = json.loads((run_dir / "pipeline.json").read_text())["streamlets"]
    assert [(s["name"], s["kind"], s["role"]) for s in described] == [
        ("enrich", "application", "ingress"),
        ("enriched", "kafka-output", "egress"),
    ]
