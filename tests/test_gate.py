"""`harness gate` on a real suite: a cheap scenario of the caveat catalog, which must show what its document
predicts (its losses counted again here from the raw evidence), one whose expectation cannot hold, and a team's job
that exits at start; the exit code, junit.xml (the job's own error line), the summary, the index and what the GitHub
recipe uploads must say exactly that. (Routine retention's losses, the catalog's
retention-shorter-than-downtime, are counted the same way from a retention fault in test_faults.py; the whole
catalog is make test-caveats.)"""

from __future__ import annotations

import csv
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from harness.scaffold import TEMPLATES
from tests.conftest import run_harness
from tests.evidence_helpers import acked, egress_counts
from tests.test_scenario import GOOD

pytestmark = pytest.mark.e2e


CAVEATS = Path(__file__).resolve().parent.parent / "scenarios" / "caveats"


def test_gate_runs_the_suite_and_fails_on_the_scenario_whose_expectation_does_not_hold(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "a-topic-recreated.yaml").write_text((CAVEATS / "topic-recreated.yaml").read_text())
    # No fault can re-deliver anything here, so asking for re-deliveries must fail the gate.
    (suite / "b-wants-duplicates.yaml").write_text(
        GOOD.replace("name: ok", "name: wants-duplicates")
        + "expectations: {max_lost: 0, min_duplicated_deliveries: 1}\n"
    )
    # A team's job that exits at start: the run fails before its workload, and the gate must still say why.
    (suite / "c-job-exits-at-start.yaml").write_text((TEMPLATES / "job.yaml").read_text())
    (tmp_path / "job").mkdir()
    (tmp_path / "job" / "job.py").write_text('raise SystemExit("job: no table orders_by_region")\n')
    out = tmp_path / "out"
    result = run_harness("gate", str(suite), "--out", str(out), timeout=900)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "suite: 1 of 3 scenarios passed" in result.stdout, result.stdout + _odd_losses(out)
    assert "    min_duplicated_deliveries: 0 record(s) delivered more than once, at least 1 expected\n" in result.stdout

    names = ["a-topic-recreated", "b-wants-duplicates", "c-job-exits-at-start"]
    suites = ET.parse(out / "junit.xml").getroot().findall("testsuite")
    assert [s.get("name") for s in suites] == names
    failed = {
        (s.get("name"), c.get("name")): c.find("failure")
        for s in suites
        for c in s.findall("testcase")
        if c.find("failure") is not None
    }
    assert set(failed) == {("b-wants-duplicates", "min_duplicated_deliveries"), ("c-job-exits-at-start", "run")}
    assert "    job: no table orders_by_region" in failed["c-job-exits-at-start", "run"].text
    _failed_at_start(out / "c-job-exits-at-start")
    uploaded = _uploaded_by_the_github_recipe(out)
    assert out / "c-job-exits-at-start" / "logs" / "streamlet-job.log" in uploaded
    assert out / "c-job-exits-at-start" / "report.html" in uploaded and out / "index.html" in uploaded

    summary = json.loads((out / "summary.json").read_text())
    rows = {Path(r["scenario"]).stem: r for r in summary["scenarios"]}
    assert summary["passed"] is False
    assert not rows["c-job-exits-at-start"]["passed"] and rows["c-job-exits-at-start"]["verdict"] == "unknown"
    # The caveat showed: the re-created source topic lost what the ingress skipped.
    assert rows["a-topic-recreated"]["passed"] and rows["a-topic-recreated"]["verdict"] == "at-most-once"
    assert not rows["b-wants-duplicates"]["passed"] and rows["b-wants-duplicates"]["failed_expectations"] == [
        "min_duplicated_deliveries"
    ]
    _recreated_topic_lost_what_spark_said_it_skipped(out / "a-topic-recreated")
    for name in names:
        assert (out / name / "report.html").is_file() and (out / name / "junit.xml").is_file()
    index = (out / "index.html").read_text()
    assert all(name in index for name in names)
    assert "b-wants-duplicates" in (out / "summary.md").read_text()


def _failed_at_start(run_dir: Path) -> None:
    """Its report: status failed, verdict and outcome unknown, nothing sent; which process failed and its log's end."""
    report = json.loads((run_dir / "report.json").read_text())
    assert (report["status"], report["verdict"]["end_to_end"], report["outcome"]) == ("failed", "unknown", "unknown")
    assert report["counts"]["acked"] == 0 and not (run_dir / "acks.csv").exists()
    failure = report["sections"]["failure"]["lines"]
    assert failure[0].startswith("the run failed: gave up waiting for every streamlet's first batch: streamlet job")
    assert failure[1] == "streamlet-job ended by itself (exit code 1); the last lines of logs/streamlet-job.log:"
    assert "    job: no table orders_by_region" in failure[2:]


def _uploaded_by_the_github_recipe(out: Path) -> set[Path]:
    """The files the GitHub recipe's upload step would take, its paths (under reports/gate) found under `out`."""
    recipe = yaml.safe_load((TEMPLATES / "github-actions.yml").read_text())
    [upload] = [s for s in recipe["jobs"]["gate"]["steps"] if s.get("uses", "").startswith("actions/upload")]
    found = {p for pattern in upload["with"]["path"].split() for p in out.glob(pattern.removeprefix("reports/gate/"))}
    return {f for p in found for f in ([p] if p.is_file() else p.rglob("*")) if f.is_file()}


def _odd_losses(out: Path) -> str:
    """For a failure message: each run's lost records whose cause is not its most common one (at most 10), with where
    and when they were sent against the faults' times, and the report's gaps: enough to tell a rare case afterwards
    (a CI run keeps nothing but its output)."""
    lines = []
    for run_dir in sorted(p for p in out.iterdir() if (p / "report.json").is_file()):
        report = json.loads((run_dir / "report.json").read_text())
        lost = (
            list(csv.DictReader((run_dir / "anomalies" / "lost.csv").open()))
            if (run_dir / "anomalies" / "lost.csv").is_file()
            else []
        )
        causes = [row["cause"] for row in lost]
        odd = [row for row in lost if row["cause"] != max(set(causes), key=causes.count)][:10]
        sent = {(r["key"], r["seq"]): r for r in csv.DictReader((run_dir / "acks.csv").open())} if odd else {}
        events = [
            e
            for e in map(json.loads, (run_dir / "history.jsonl").open())
            if e["event"] in ("topic_recreated", "fault_begun", "fault_ended")
        ]
        if odd or report["gaps"]:
            lines.append(f"\n{run_dir.name}: gaps {report['gaps']}; events {events}")
            lines += [f"  {row} sent {sent.get((row['key'], row['seq']))}" for row in odd]
    return "\n".join(lines)


def _recreated_topic_lost_what_spark_said_it_skipped(run_dir: Path) -> None:
    """Spark's log names, per partition whose offsets it saw go back, the offset its query had planned up to in the
    old topic and the new topic's offset it went on from ("offset was changed from X to Y"); the history names what it
    had committed at the deletion (C <= X: a batch planned from C to X was in flight). A partition Spark logged
    nothing for carried on from its old position X in the new topic (its next batch read from there), so it skipped
    the new topic's offsets below X, at least those below C. The batch in flight, run (or run again after its query
    failed) once the new topic had records, may have read the new topic's offsets from C up to X; run before the topic
    went, it read the old topic from C up to some M (the highest old offset the egress holds) and the new topic's
    offsets from C up to M were then taken as read. In the ack log (send order) a partition's offsets drop when the new
    topic begins. The egress must lack every old record at X or above and above M, and every new one below both C and
    Y (skipped for certain), and nothing but those, the old records above M (the batch in flight may not have read
    them before the topic went) and new ones below Y, from C up to M, or from C where Spark logged nothing."""
    log = (run_dir / "logs" / "streamlet-ingress.log").read_text()
    changed = {
        int(p): (int(x), int(y))
        for p, x, y in re.findall(r"Partition source-(\d+)'s offset was changed from (\d+) to (\d+)", log)
    }
    [event] = [e for e in map(json.loads, (run_dir / "history.jsonl").open()) if e["event"] == "topic_recreated"]
    committed = {int(p): int(o) for _, p, o in event["read_to"]}
    delivered = set(egress_counts(run_dir, "egress", "records"))
    highest, renewed, certain, possible = {}, set(), set(), set()
    read_old: dict[int, int] = {}  # the highest old offset from C the egress holds: where the batch in flight stopped
    with open(run_dir / "acks.csv") as acks:
        for row in csv.DictReader(acks):
            if row["status"] != "acked":
                continue
            partition, record = int(row["partition"]), (row["key"], int(row["seq"]))
            # No offset reported: in the producer's write order it lies above every offset acknowledged before it.
            offset = int(row["offset"]) if row["offset"] else highest.get(partition, -1) + 1
            if row["offset"] and offset < highest.get(partition, -1):
                renewed.add(partition)
            if not row["offset"] and partition in renewed:
                continue  # in the new topic, only bounded from below: neither certain nor possible
            highest[partition] = max(highest.get(partition, -1), offset)
            # carried on: planned up to X >= C, unknown here, and went on from there in the new topic
            planned_to, went_on_from = changed.get(partition, (None, None))
            if partition in renewed:
                skipped_below = (
                    committed[partition] if went_on_from is None else min(committed[partition], went_on_from)
                )
                if offset < skipped_below:
                    certain.add(record)
                in_flight = committed[partition] <= offset <= read_old.get(partition, -1)
                if went_on_from is None or offset < went_on_from or in_flight:
                    possible.add(record)
            elif offset >= committed[partition]:
                if record in delivered:
                    read_old[partition] = max(read_old.get(partition, -1), offset)
                    continue
                # A batch reads a range whole: an old record not delivered below one delivered was not skipped.
                if offset > read_old.get(partition, -1):
                    possible.add(record)
                    if planned_to is not None and offset >= planned_to:
                        certain.add(record)
    lost = acked(run_dir) - delivered
    report = json.loads((run_dir / "report.json").read_text())
    assert certain <= lost <= possible, (
        len(certain),
        len(lost),
        len(possible),
        {"changed": changed, "committed": committed, "delivered but certain": sorted(certain - lost)[:5]},
        {"lost but not possible": sorted(lost - possible)[:5]},
    )
    assert report["counts"]["lost"] == len(lost) == report["causes"]["lost"]["topic_recreated"] > 0
