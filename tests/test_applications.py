"""A team's own PySpark job, unchanged (examples/enrich-kafka: plain PySpark, argparse, importing nothing of the
harness), run under SIGKILLs of its driver on a real broker and judged from the topic it writes: the report's
counts equal a count made here from the recorded output topic and acks.csv alone."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
import yaml

from harness.checker.anomaly_records import WITNESSES
from harness.checker.check import check_run
from harness.checker.counts import CAUSES, COUNTS, VERDICT
from harness.checker.expect import EXPECTATIONS
from harness.checker.fault_results import FAULTS
from harness.checker.summary.engines import engine
from harness.evidence.compact import compact_run
from harness.runner.console import Console
from harness.runner.preflight import CANARY_KEY
from harness.runner.run import run_scenario
from harness.scenario import load_scenario
from harness.scenario.parse import parse_scenario
from harness.workload.generator import record_plan
from harness.workload.generator_settings import WorkloadSettings
from harness.workload.predicate import Predicate
from harness.workload.template import RecordMaker, parse_template, record_fields
from tests.evidence_helpers import acked, held_batch_records, why
from tests.test_faults import ROOT, history

# A job's JVM takes minutes to start and run its batches on a busy machine: more than pytest's default 600 s.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]
EXAMPLE = ROOT / "examples" / "enrich-kafka"


def test_the_job_needs_nothing_of_the_harness():
    source = (EXAMPLE / "job.py").read_text()
    assert not re.search(r"^\s*(from|import)\s+(harness|pipelines|contract)\b", source, re.M)


@pytest.fixture(scope="module")
def enrich_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("enrich") / "run"
    summary = run_scenario(load_scenario(EXAMPLE / "scenario.yaml"), run_dir, console=Console(quiet=True))
    assert summary.status == "complete" and not summary.failed_streamlets, why(summary)
    report = check_run(run_dir)
    assert [f.kind for f in report[FAULTS]] == ["resend", "kill-driver", "kill-driver"], why(summary)
    return run_dir, history(run_dir), report


def test_the_jobs_folder_is_left_as_it_was_though_its_driver_was_killed(enrich_run):
    """Nothing of the run in the job's folder, hidden files included: no Spark artifacts, warehouse or metastore,
    no byte-code cache; what killed drivers left is in the run directory instead."""
    run_dir, _, _ = enrich_run
    left = subprocess.run(
        ["git", "status", "--porcelain", "--ignored", "--untracked-files=all", "--", str(EXAMPLE)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert left == "", left  # Spark up to 4.0 made an artifacts/ folder in its working directory: it is in work/


def test_the_sources_records_are_read_back_as_acks_csv_acknowledged_them(enrich_run):
    """Record for record: partition, offset and identity (the value's own order_id) against the ack log's lines."""
    run_dir, events, _ = enrich_run
    [read] = [e for e in events if e["event"] == "source_read"]
    source = pd.read_parquet(run_dir / "source" / "orders.parquet")
    assert read["missing"] == [] and read["records"] == len(source) > 1000
    copies = Counter(
        (int(row.partition), int(row.offset), *json.loads(row.value)["order_id"].rsplit("-", 1))
        for row in source.itertuples()
    )
    acks = pd.read_csv(run_dir / "acks.csv", dtype={"key": str, "seq": str})
    acked = acks[acks.status == "acked"]
    assert copies == Counter(zip(acked.partition.astype(int), acked.offset.astype(int), acked.key, acked.seq))


def test_killed_in_flight_the_kafka_to_kafka_job_is_at_least_once_as_its_output_topics_count(enrich_run):
    run_dir, events, report = enrich_run
    # The independent count: every record of the two output topics as the run recorded them, its identity parsed
    # from the job's own order_id ("k0003-17"), against what the broker acknowledged to the generator.
    copies = {topic: _copies(run_dir, topic) for topic in ("orders-enriched", "orders-rejected")}
    sent = acked(run_dir)
    # The job's filter and routes, declared (keeps: "amount IS NOT NULL"; receives: "amount >= 5", "amount < 5"),
    # evaluated here on the source records as sent.
    routed: dict = {"orders-enriched": set(), "orders-rejected": set()}
    for r in _source_records(run_dir):
        if r["amount"] is not None:
            key, seq = r["order_id"].rsplit("-", 1)
            routed["orders-enriched" if r["amount"] >= 5 else "orders-rejected"].add((key, int(seq)))
    canary = {(CANARY_KEY, 0)}  # the preflight's canary: drawn to pass the filter, at the output it was routed to
    assert sum(1 for found in copies.values() if canary & set(found)) == 1
    lost = {topic: (sent & routed[topic]) - set(copies[topic]) for topic in copies}
    assert report[COUNTS].lost == sum(len(records) for records in lost.values()) == 0
    kept = routed["orders-enriched"] | routed["orders-rejected"] | canary
    assert report[COUNTS].dropped == len(sent - kept) > 0  # no amount: dropped by the job, expected at neither
    for topic, found in copies.items():
        assert set(found) <= routed[topic] | canary and len(found) > 0, topic
    duplicated = {r for found in copies.values() for r, n in found.items() if n > 1 and r in sent}
    assert report[COUNTS].duplicated_deliveries == report[COUNTS].duplicated_in_state == len(duplicated) > 0
    every_sent = set(pd.read_csv(run_dir / "acks.csv")[["key", "seq"]].itertuples(index=False, name=None))
    assert report[COUNTS].phantom == sum(len(set(found) - every_sent) for found in copies.values()) == 0
    assert report[VERDICT] == "at-least-once" and report.outcome == "pass", report[EXPECTATIONS]
    # The after-write kill held a batch planned, its output partly written, not committed: the replay wrote its
    # records again (each of them is there, some twice), and the report counts the copies it made.
    held = held_batch_records(run_dir, "enrich") & kept
    assert held and all(sum(found[r] for found in copies.values()) >= 1 for r in held)
    assert any(sum(found[r] for found in copies.values()) >= 2 for r in held)
    assert report[FAULTS][1].redelivered > 0 and report[FAULTS][1].declared == ""
    # The source sent some orders twice (acks.csv lines with resend 1); the job declares it drops such copies, so
    # none is counted as read from the source, and each is at its output (a copy beyond one: a replay's).
    acks = pd.read_csv(run_dir / "acks.csv")
    resent = set(acks[(acks.resend == 1) & (acks.status == "acked")][["key", "seq"]].itertuples(index=False, name=None))
    assert len(resent) > 50 and report[CAUSES]["duplicated"]["resent_read"] == 0
    assert all(sum(found[r] for found in copies.values()) >= 1 for r in resent & kept)
    absorbed = sum(1 for r in resent & kept if sum(found[r] for found in copies.values()) == 1)
    assert absorbed > len(resent & kept) / 2, (absorbed, len(resent & kept))


def test_its_output_topics_compacted_give_the_same_report(enrich_run, tmp_path):
    """The acknowledgement log and the recorded output topics rewritten in columnar form, the job's identity
    (order_id "k0003-17") read into the columns (harness compact): the same report."""
    run_dir, _, report = enrich_run
    copy = shutil.copytree(run_dir, tmp_path / "run", ignore=shutil.ignore_patterns("report.*", "junit.xml"))
    done = {c.name: c for c in compact_run(copy)}
    assert all(c.records > 0 and c.kept_because is None for c in done.values()) and "acks.csv" in done
    assert not list((copy / "topics").glob("*.jsonl")) and not (copy / "acks.csv").exists()
    again = json.dumps(check_run(copy).to_dict(), default=str).replace(str(copy), str(run_dir))
    assert again == json.dumps(report.to_dict(), default=str)
    # The hops reconciled by the dense engine (harness/checker/summary/), the default now that every recording is
    # columnar: two output topics judged per partition, records the job drops by design and the resend's copies,
    # as numpy judged them.
    by_numpy = check_run(copy, engine=engine("numpy")).to_dict()
    assert json.dumps(by_numpy, default=str).replace(str(copy), str(run_dir)) == again


def _copies(run_dir: Path, topic: str) -> Counter:
    """(key, seq) -> copies in an output topic, read from the job's order_id."""
    found: Counter = Counter()
    for line in (run_dir / "topics" / f"{topic}.jsonl").read_text().splitlines():
        key, seq = json.loads(line)["value"]["order_id"].rsplit("-", 1)
        found[(key, int(seq))] += 1
    return found


def _source_records(run_dir) -> list[dict]:
    """The values of the records the generator sent, in send order, made again from its settings and seed (the
    template's draws do not depend on the clock)."""
    settings = WorkloadSettings.load(run_dir / "generator.json")
    plan, maker = record_plan(settings), RecordMaker(settings.record, settings.seed)
    acks = pd.read_csv(run_dir / "acks.csv")
    sent = int(((acks.key != CANARY_KEY) & (acks.resend == 0)).sum())  # nor the canary, nor a resend: not new ones
    return [maker.make(key, seq, 0)[0] for key, seq, _, _ in (next(plan) for _ in range(sent))]


def test_the_driver_was_killed_and_restarted_by_its_own_command_and_its_recovery_read_from_its_checkpoint(enrich_run):
    run_dir, events, report = enrich_run
    started = [e for e in events if e["event"] == "process_started" and e["process"] == "streamlet-enrich"]
    killed = [e for e in events if e["event"] == "process_killed" and e["process"] == "streamlet-enrich"]
    assert len(started) == 3 and len(killed) == 2 and all(k["signal"] == "SIGKILL" for k in killed)
    argv = json.loads((run_dir / "streamlets" / "enrich.json").read_text())["argv"]
    assert argv[1] == "job.py" and argv[argv.index("--orders") + 1] == "orders"
    # kill -> the first batch committed in the job's checkpoint after its restart
    kills = report[FAULTS][1:]
    assert all(f.recovery_s is not None and f.recovery_s > 0 for f in kills), report[FAULTS]
    # kill -> the first record an output topic got after the restart, counted here from the topics' own timestamps
    stamps = [
        json.loads(line)["timestamp_ms"]
        for topic in ("orders-enriched", "orders-rejected")
        for line in (run_dir / "topics" / f"{topic}.jsonl").open()
    ]
    for fault, kill, restart in zip(kills, killed, started[1:]):
        # None where the job wrote nothing after that restart: on a busy machine its first restart can take so long
        # that the job has caught up with every record before the second kill
        later = [t for t in stamps if t > restart["ts_ms"]]
        first_s = round((min(later) - fault.start_ms) / 1000, 3) if later else None
        assert fault.output_s == first_s and kill["ts_ms"] >= fault.start_ms
    assert kills[0].output_s is not None  # the first restart always has records left to write
    described = json.loads((run_dir / "pipeline.json").read_text())["streamlets"]
    assert sorted((s["name"], s["kind"], s["role"]) for s in described) == [
        ("enrich", "application", "ingress"),
        ("enriched", "kafka-output", "egress"),
        ("rejected", "kafka-output", "egress"),
    ]


def test_an_undeclared_filter_and_a_redeploy_from_latest_lose_records_and_the_run_is_at_most_once(tmp_path):
    raw = _plain(yaml.safe_load((EXAMPLE / "scenario.yaml").read_text()))
    del raw["applications"]["enrich"]["keeps"]  # the job filters (amount >= 5); the scenario does not say so
    # a fresh checkpoint, the job told (${starting_offsets}) to start from the end: what arrives meanwhile is skipped
    raw["faults"] = [{"kind": "redeploy", "target": "enrich", "start_s": 6, "starting": "latest", "down_s": 4}]
    raw["expectations"] = {}
    raw["workload"]["duration_s"] = 20
    run_dir = tmp_path / "undeclared"
    summary = run_scenario(parse_scenario(raw, EXAMPLE), run_dir, console=Console(quiet=True))
    assert summary.status == "complete", why(summary)
    report = check_run(run_dir)
    filtered = set()
    for value in _source_records(run_dir):
        if value["amount"] is None or value["amount"] < 5:
            key, seq = value["order_id"].rsplit("-", 1)
            filtered.add((key, int(seq)))
    sent = acked(run_dir)
    lost = sent - set(_copies(run_dir, "orders-enriched"))
    skipped = lost - filtered  # records the job kept that the redeploy's new query started past
    assert report[COUNTS].lost == len(lost) and report[COUNTS].dropped == 0
    # The redeploy explains the records its new query skipped (filtered ones among them: on a busy machine the job
    # may not have read any before it); nothing but the job's own filter is left unexplained.
    causes = report[CAUSES]["lost"]
    assert causes["redeploy"] >= len(skipped) > 0 and causes["redeploy"] + causes["unexplained"] == len(lost)
    assert causes["unexplained"] <= len(lost & filtered)
    assert report[VERDICT] == "at-most-once"
    witnesses = {(w.key, w.seq) for w in report[WITNESSES] if w.anomaly == "lost"}
    assert witnesses and witnesses <= lost


def _plain(raw: dict) -> dict:
    """The example's scenario with the job in its plain mode: no dead-letter topic, orders under 5 dropped."""
    app = raw["applications"]["enrich"]
    at = app["command"].index("--rejected")
    del app["command"][at : at + 2], raw["outputs"]["rejected"], raw["outputs"]["enriched"]["receives"]
    del raw["topics"]["orders-rejected"]
    app["writes"], app["keeps"] = ["orders-enriched"], "amount >= 5"
    return raw


def test_a_declared_filter_is_evaluated_as_spark_evaluates_it_nulls_included(tmp_path):
    template = parse_template(
        {
            "identity": {"key": "k", "seq": "s"},
            "fields": {
                "amount": {"decimal": [-5, 20], "scale": 1, "nulls": 0.2},
                "qty": {"int": [0, 3], "nulls": 0.2},
                "currency": {"choice": ["EUR", "eur", "USD"], "nulls": 0.2},
                "vip": {"choice": [True, False], "nulls": 0.2},
            },
        }
    )
    maker = RecordMaker(template, 3)
    records = [maker.make("k", seq, 0)[0] for seq in range(10_000)]
    predicates = [
        "amount >= 5",
        "amount >= 5 AND currency <> 'GBP'",
        "NOT (amount < 0) OR qty IS NULL",
        "currency IN ('EUR', 'USD') AND qty BETWEEN 1 AND 2",
        "currency LIKE 'E%' OR vip",
        "coalesce(qty, 0) + 1 > 2 AND NOT vip",
        "lower(currency) = 'eur' AND amount IS NOT NULL",
    ]
    # Spark in a process of its own: its JVM ends with it (a JVM left in this worker would be reused by later tests)
    (tmp_path / "records.json").write_text("\n".join(json.dumps(r) for r in records))
    (tmp_path / "predicates.json").write_text(json.dumps(predicates))
    script = (
        "import json, sys\n"
        "from harness.spark.session import spark_session\n"
        "spark = spark_session('declared-filters', 'local[1]')\n"
        "frame = spark.read.schema('k STRING, s LONG, amount DOUBLE, qty LONG, currency STRING, vip BOOLEAN')"
        ".json(sys.argv[1])\n"
        "kept = {p: sorted(r.s for r in frame.filter(p).select('s').collect()) for p in json.load(open(sys.argv[2]))}\n"
        "print(json.dumps(kept))\n"
        "spark.stop()\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "records.json"), str(tmp_path / "predicates.json")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    kept_by_spark = json.loads(out.stdout.strip().splitlines()[-1])
    for sql in predicates:
        harness = Predicate(sql, record_fields(template))
        kept_here = sorted(r["s"] for r in records if harness.keeps(r))
        assert kept_here == kept_by_spark[sql], sql
        assert 0 < len(kept_here) < len(records), sql


def _cli_run(tmp_path, change) -> tuple[subprocess.CompletedProcess, Path]:
    raw = yaml.safe_load((EXAMPLE / "scenario.yaml").read_text())
    raw["applications"]["enrich"]["cwd"] = str(EXAMPLE)
    raw["faults"], raw["expectations"] = [], {}
    raw["preflight"] = {"canary_timeout_s": 20}
    change(raw)
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(raw))
    run_dir = tmp_path / "run"
    result = subprocess.run(
        [sys.executable, "-m", "harness.cli", "run", str(path), "--out", str(run_dir)], capture_output=True, text=True
    )
    return result, run_dir


def _nothing_left(run_dir: Path) -> None:
    for pid_file in (run_dir / "pids").glob("*.json"):
        pid = json.loads(pid_file.read_text())["pid"]
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()


@pytest.mark.long  # the preflight stopping a job in make test: the wrong checkpoint placeholder, below
def test_the_preflight_stops_a_template_the_job_does_not_read_before_the_workload(tmp_path):
    def renamed(raw):  # the template calls the amount "total": the job reads amount, null, and filters every record
        fields = raw["workload"]["record"]["fields"]
        fields["total"] = fields.pop("amount")
        _plain(raw)["applications"]["enrich"]["keeps"] = "total >= 5"

    result, run_dir = _cli_run(tmp_path, renamed)
    error = result.stderr.strip()
    assert result.returncode == 2 and "\n" not in error, result.stderr
    assert "outputs.enriched: the canary record did not arrive" in error
    assert "expected a record with order_id = 'canary-0'; it holds no record" in error
    assert len(pd.read_csv(run_dir / "acks.csv")) == 1  # the canary only: the workload never began
    _nothing_left(run_dir)


def test_the_preflight_catches_a_job_given_the_wrong_checkpoint_placeholder(tmp_path):
    def elsewhere(raw):
        command = raw["applications"]["enrich"]["command"]
        command[command.index("${checkpoint}")] = "${scratch}/checkpoint"

    result, run_dir = _cli_run(tmp_path, elsewhere)
    error = result.stderr.strip()
    assert result.returncode == 2 and "\n" not in error, result.stderr
    assert "applications.enrich: its checkpoint is " in error and "not the ${checkpoint} it is given" in error
    assert not (run_dir / "acks.csv").exists()
    _nothing_left(run_dir)


@pytest.mark.long  # one more job's JVM; the entry point's parsing and refusals are unit-tested
def test_an_entry_point_is_called_with_a_session_and_its_settings_and_judged_the_same_way(tmp_path):
    raw = {
        "name": "entry-point",
        "workload": {
            "topic": {"name": "in"},
            "rate": 100,
            "duration_s": 8,
            "record": {"identity": {"key": "who", "seq": "n"}, "fields": {"v": {"int": [1, 9]}}},
        },
        "applications": {
            "copy": {
                "entry": "copy_job:run",
                "cwd": str(ROOT / "tests" / "plugins"),
                "settings": {
                    "bootstrap": "${bootstrap}",
                    "source": "${topic.in}",
                    "target": "${topic.out}",
                    "checkpoint": "${checkpoint}",
                },
                "reads": ["in"],
                "writes": ["out"],
            }
        },
        "outputs": {"copied": {"topic": "out", "identity": {"key": "who", "seq": "n"}}},
        "expectations": {"verdict": "exactly-once", "max_lost": 0},
    }
    run_dir = tmp_path / "run"
    summary = run_scenario(parse_scenario(raw, tmp_path), run_dir, console=Console(quiet=True))
    assert summary.status == "complete", why(summary)
    report = check_run(run_dir)
    assert report[VERDICT] == "exactly-once" and report.outcome == "pass" and report[COUNTS].acked == 801
    assert json.loads((run_dir / "streamlets" / "copy.entry.json").read_text())["settings"]["target"] == "out"


@pytest.mark.long  # three brokers, a partition and a broker kill under the job: about 3 minutes
def test_the_job_under_a_network_partition_and_a_broker_kill_loses_nothing(tmp_path):
    raw = yaml.safe_load((EXAMPLE / "scenario.yaml").read_text())
    raw["cluster"] = {"brokers": 3}
    raw["workload"]["topic"]["replication"] = 3
    raw["topics"]["orders-enriched"]["replication"] = 3
    raw["faults"] = [
        # the job's own link to the brokers (its ${bootstrap} is the link's proxy), then a broker under all
        {"kind": "network-partition", "target": "enrich", "start_s": 6, "duration_s": 10},
        {"kind": "broker-kill", "target": "broker-2", "start_s": 18, "down_s": 8},
    ]
    raw["expectations"] = {"max_lost": 0}
    run_dir = tmp_path / "run"
    summary = run_scenario(parse_scenario(raw, EXAMPLE), run_dir, console=Console(quiet=True))
    assert summary.status == "complete" and summary.faults_played == 2, why(summary)
    report = check_run(run_dir)
    argv = json.loads((run_dir / "streamlets" / "enrich.json").read_text())["argv"]
    routes = json.loads((run_dir / "control" / "network" / "proxy.json").read_text())["routes"]
    proxied = {f"127.0.0.1:{r['listen']}" for r in routes if r["link"] == "enrich"}
    assert set(argv[argv.index("--bootstrap") + 1].split(",")) == proxied  # ${bootstrap} was the job's link
    assert report[COUNTS].lost == 0 and report.outcome == "pass", report[EXPECTATIONS]
