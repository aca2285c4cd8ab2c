"""Fault actions against real brokers and real drivers: each does what it says, and the history shows it."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import pandas as pd
import pytest

from harness.checker.causes import RETENTION
from harness.checker.check import check_run
from harness.checker.counts import CAUSES, COUNTS, HOP_FINDINGS, VERDICT
from harness.checker.fault_results import FAULTS
from harness.cluster import KafkaAdmin
from harness.errors import HarnessError
from harness.faults.kind import FaultKind, Param
from harness.faults.kinds.broker_kill import kill_broker
from harness.faults.kinds.broker_pause import pause_broker
from harness.runner.console import Console
from harness.runner.pipeline_run import PipelineRun
from harness.runner.run import run_scenario
from harness.scenario.parse import parse_scenario
from harness.waiting import wait_for
from tests.blueprints import three_step
from tests.evidence_helpers import acked, batch_started_ms, egress_counts, why

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parent.parent

TWO_STEP = {
    "name": "two-step",
    "blueprint": {
        "streamlets": {"ingress": {"kind": "ingress"}, "egress": {"kind": "egress", "settings": {"mode": "upsert"}}},
        "connections": {"ingress.out": ["egress.in"]},
        "topics": {"ingress.out": {"name": "ingested"}},
    },
    "workload": {"rate": 200, "duration_s": 15, "after_faults_s": 5, "keys": 8},
}


def history(run_dir) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]


def answers(kafka) -> bool:
    try:
        with KafkaAdmin(kafka, request_timeout_ms=2000, connect_timeout_ms=2000) as admin:
            return admin.live_broker_ids() == {1}
    except HarnessError:
        return False


def test_a_paused_broker_stops_answering_then_answers_again_and_a_killed_one_comes_back(tmp_path):
    with PipelineRun(parse_scenario(TWO_STEP), tmp_path / "run", say=lambda m: None) as run:
        run.brokers.start()
        broker = run.cluster.broker(1)
        assert answers(run.kafka)
        pause = threading.Thread(target=pause_broker, args=(run, "broker-1", 8.0))
        pause.start()
        try:
            wait_for(lambda: broker.state() == "paused", timeout=10, what="the broker to be paused")
            assert not answers(run.kafka), "a SIGSTOPped broker must not answer"
        finally:
            pause.join()
        assert broker.state() == "running" and answers(run.kafka)

        old_pid = broker.pid
        kill_broker(run, "broker-1", down_s=1.0)
        assert broker.pid != old_pid and answers(run.kafka)
    events = [(e["event"], e.get("kind")) for e in history(tmp_path / "run")]
    for expected in [
        ("fault_begun", "broker-pause"),
        ("process_paused", None),
        ("process_resumed", None),
        ("fault_ended", "broker-pause"),
        ("fault_begun", "broker-kill"),
        ("process_killed", None),
        ("fault_ended", "broker-kill"),
    ]:
        assert expected in events


def _records_in(run_dir, topic: str) -> set[tuple[str, int]]:
    """(key, seq) of every record in a topic dump."""
    return {
        (r["value"]["key"], r["value"]["seq"]) for r in map(json.loads, (run_dir / "topics" / f"{topic}.jsonl").open())
    }


def _assert_lost_to_retention_exactly(run_dir, expected_lost: set, first_hop: str):
    """The egress lost exactly `expected_lost` (counted from its table), and the checker says so: every one
    retention."""
    stored = set(egress_counts(run_dir, "egress", "records"))
    assert expected_lost and acked(run_dir) - stored == expected_lost
    report = check_run(run_dir)
    assert report[COUNTS].lost == len(expected_lost) and report[VERDICT] == "at-most-once"
    assert report[CAUSES]["lost"]["retention"] == len(expected_lost) and report[CAUSES]["lost"]["unexplained"] == 0
    [window] = report[RETENTION]
    assert window["exact"] and window["lost"] == len(expected_lost)
    assert {h.name: h.first_seen["lost"] for h in report[HOP_FINDINGS]}[first_hop] == len(expected_lost)
    return report, window


def _retention_scenario(fail_on_data_loss: bool) -> dict:
    return {
        **TWO_STEP,
        "source_options": {"ingress": {"fail_on_data_loss": fail_on_data_loss}},
        "faults": [{"kind": "retention-shrink", "target": "ingress", "start_s": 8}],
    }


@pytest.mark.long
def test_retention_shrink_deletes_unread_records_and_the_history_shows_the_log_start_jump(tmp_path):
    run_dir = tmp_path / "run"
    summary = run_scenario(parse_scenario(_retention_scenario(False)), run_dir, console=Console(quiet=True))
    assert summary.status == "complete" and summary.faults_played == 1 and not summary.failed_streamlets, why(summary)
    events = history(run_dir)
    committed = {(t, p): o for t, p, o in next(e for e in events if e["event"] == "consumer_position")["partitions"]}
    resumed = {
        (t, p): start for t, p, start, _ in next(e for e in events if e["event"] == "log_start_observed")["partitions"]
    }
    assert any(resumed[tp] > committed[tp] for tp in committed), (
        "retention must delete records the ingress had not read"
    )

    # The sampled log-start offsets jump during the fault (they were 0 before it).
    samples = [e for e in events if e["event"] == "offsets"]
    starts = [{(t, p): s for t, p, s, _ in e["partitions"] if t == "source"} for e in samples]
    assert starts[0] == {("source", 0): 0, ("source", 1): 0}
    assert any(all(s[tp] >= resumed[tp] for tp in resumed) for s in starts)

    # The segments really went: the oldest segment file left starts past offset 0.
    for (_, partition), start in resumed.items():
        segments = sorted((run_dir / "cluster" / "node-1" / "data" / f"source-{partition}").glob("*.log"))
        assert int(segments[0].stem) >= start > 0

    # What was lost is exactly the acknowledged records retention deleted unread: those between the
    # committed position and the log-start at resume, except what the batch interrupted by the stop
    # had already written downstream before its commit.
    acks = pd.read_csv(run_dir / "acks.csv")
    deleted = acks[
        [committed[("source", p)] <= o < resumed[("source", p)] for p, o in zip(acks.partition, acks.offset)]
    ]
    # The checker finds the same loss and attributes every lost record to retention, exactly.
    _assert_lost_to_retention_exactly(
        run_dir, set(zip(deleted.key, deleted.seq)) - _records_in(run_dir, "ingested"), "ingested"
    )


@pytest.mark.long  # retention-shrink's run in make test: fail_on_data_loss below
def test_retention_shrink_under_a_stopped_processor_loses_exactly_what_it_deleted_on_the_intermediate_topic(tmp_path):
    """3 brokers; the processor (reading the intermediate topic `ingested`) is stopped and retention deletes what it
    had not read. Counted here from the raw evidence: the run's recording of `ingested` (every record written to it),
    the committed position and the log start at resume (history), the segments left on the brokers' disks, the
    processor's output (topic dump) and the egress's table. The checker must find the same loss, all of it
    retention, exactly."""
    run_dir = tmp_path / "run"
    scenario = {
        "name": "retention-mid",
        "cluster": {"brokers": 3},
        "blueprint": three_step({"replication": 3}, {"replication": 3}),
        "workload": {
            "topic": {"name": "source", "replication": 3},
            "rate": 200,
            "duration_s": 15,
            "after_faults_s": 5,
            "keys": 8,
        },
        "source_options": {"processor": {"fail_on_data_loss": False}},
        # Retention of 5 s, not 1: the ingress goes on writing `ingested`, and the run's recording of it (the
        # test's count) must read each record before retention deletes it, on a machine busy with other runs.
        "faults": [{"kind": "retention-shrink", "target": "processor", "start_s": 8, "retention_ms": 5000}],
        "expectations": {"lost_causes": ["retention"]},
    }
    summary = run_scenario(parse_scenario(scenario), run_dir, console=Console(quiet=True))
    assert summary.status == "complete" and summary.faults_played == 1 and not summary.failed_streamlets, why(summary)
    events = history(run_dir)
    committed = {(t, p): o for t, p, o in next(e for e in events if e["event"] == "consumer_position")["partitions"]}
    observed = next(e for e in events if e["event"] == "log_start_observed")
    resumed = {(t, p): start for t, p, start, _ in observed["partitions"]}
    assert set(committed) == {("ingested", 0), ("ingested", 1)}
    assert any(resumed[tp] > committed[tp] for tp in committed), (
        "retention must delete records the processor had not read"
    )

    # The run recorded `ingested` as it was written, so its dump still has the records retention deleted since.
    recorded = [json.loads(line) for line in (run_dir / "topics" / "ingested.jsonl").open()]
    assert [r["offset"] for r in recorded if r["partition"] == 0][0] == 0, "recorded from the first offset"
    deleted = {
        (r["value"]["key"], r["value"]["seq"])
        for r in recorded
        if committed[("ingested", r["partition"])] <= r["offset"] < resumed[("ingested", r["partition"])]
    }
    assert deleted
    for (
        _,
        partition,
    ), start in resumed.items():  # they are gone from the broker: only the segment holding the log start
        for node in (run_dir / "cluster").glob(
            "node-*"
        ):  # may begin below it (a follower rolls its segments at its own offsets)
            segments = sorted((node / "data" / f"ingested-{partition}").glob("*.log"))
            assert len([s for s in segments if int(s.stem) < start]) <= 1, (node.name, partition, start, segments)
    # minus what the batch the stop interrupted wrote before its commit
    expected_lost = deleted - _records_in(run_dir, "processed")
    report, window = _assert_lost_to_retention_exactly(run_dir, expected_lost, "processed")
    assert window["topic"] == "ingested" and window["acked_in_window"] == len(deleted)
    assert report.passed
    print(
        f"retention on an intermediate topic: recorded {len(recorded)}, deleted {len(deleted)}, "
        f"reached downstream {len(deleted) - len(expected_lost)}, lost {len(expected_lost)}, attributed "
        f"{report[CAUSES]['lost']['retention']}"
    )


def test_retention_shrink_with_fail_on_data_loss_stops_the_query_and_the_run_says_so(tmp_path):
    run_dir = tmp_path / "run"
    summary = run_scenario(parse_scenario(_retention_scenario(True)), run_dir, console=Console(quiet=True))
    assert summary.status == "complete", why(summary)
    assert "data may have been lost" in summary.failed_streamlets["ingress"].lower()
    failed = [e for e in history(run_dir) if e["event"] == "query_failed"]
    assert [e["streamlet"] for e in failed] == ["ingress"]
    report = check_run(run_dir)
    assert [f["streamlet"] for f in report.query_failures] == ["ingress"]
    assert "data may have been lost" in report.query_failures[0]["error"].lower()
    assert (
        report[COUNTS].lost > 0
        and report[CAUSES]["lost"]["query_failed"] + report[CAUSES]["lost"]["retention"] == report[COUNTS].lost
    )


MODES = ("append", "upsert", "dedup", "transactional")
PARTITION = {"kind": "network-partition", "target": "egress-upsert", "start_s": 4, "duration_s": 20}
KILLS_AFTER_WRITE = {
    # Ingress -> one egress per mode; each egress killed once while a batch is held after its write. The kills
    # overlap (different targets); each holds a batch first, and a restart takes 10 to 40 s here with five
    # drivers: records keep coming until 8 s after the last fault ended, for every kill to find a batch to hold.
    # First the upsert egress's network link is cut for 20 s (its kill waits for that: one fault at a time on a
    # target), and later the ingress is frozen by a fault kind of one's own (examples/faults/freeze.py, loaded
    # from a temporary package): one run costs one start-up.
    "name": "kill-after-write",
    "blueprint": {
        "streamlets": {
            "ingress": {"kind": "ingress"},
            **{f"egress-{m}": {"kind": "egress", "settings": {"mode": m}} for m in MODES},
        },
        "connections": {"ingress.out": [f"egress-{m}.in" for m in MODES]},
        "topics": {"ingress.out": {"name": "ingested"}},
    },
    "workload": {"rate": 30, "duration_s": 34, "after_faults_s": 8, "keys": 4},
    "faults": [
        {"kind": "kill-driver", "target": f"egress-{m}", "start_s": 5 + i, "at": "after-write", "restart_after_s": 1}
        for i, m in enumerate(MODES)
    ]
    + [PARTITION],
}


@pytest.fixture(scope="module")
def kills_after_write(tmp_path_factory):
    """One run for the four modes (the tests below look at two each): the kills overlap, so it costs one."""
    root = tmp_path_factory.mktemp("kills")
    package = f"userfaults_{root.name.replace('-', '_')}"
    (root / "plugins" / package).mkdir(parents=True)
    (root / "plugins" / package / "__init__.py").write_text("")
    shutil.copy(ROOT / "examples" / "faults" / "freeze.py", root / "plugins" / package / "freeze.py")
    scenario = {
        **KILLS_AFTER_WRITE,
        "imports": [str(root / "plugins")],
        "faults": KILLS_AFTER_WRITE["faults"]
        + [{"kind": f"{package}.freeze:KIND", "target": "ingress", "start_s": 30, "frozen_s": 4}],
    }
    run_dir = root / "run"
    summary = run_scenario(parse_scenario(scenario), run_dir, console=Console(quiet=True))
    assert summary.status == "complete" and summary.faults_played == len(MODES) + 2 and not summary.failed_streamlets, (
        why(summary)
    )
    held = {
        e["target"]: e["held_batch"]
        for e in history(run_dir)
        if e["event"] == "fault_begun" and e["kind"] == "kill-driver"
    }
    assert set(held) == {f"egress-{m}" for m in MODES}
    return run_dir, held, check_run(run_dir)


def test_a_kill_after_the_write_makes_append_store_that_batch_twice_and_upsert_absorb_it(kills_after_write):
    run_dir, held, report = kills_after_write

    # Independent of the checker: append's duplicates are exactly the records of the held batch, twice each.
    append_audit = egress_counts(run_dir, "egress-append", "audit", "key, seq, batch_id")
    held_records = {(k, s) for (k, s, b) in append_audit if b == held["egress-append"]}
    stored = egress_counts(run_dir, "egress-append", "records")
    assert held_records and {r for r, n in stored.items() if n > 1} == held_records
    assert all(append_audit[(k, s, held["egress-append"])] == 2 for k, s in held_records), "the batch ran twice"
    assert set(stored) == acked(run_dir)

    hops = {h.name: h for h in report[HOP_FINDINGS]}
    assert hops["ingested"].verdict == "exactly-once"
    assert hops["egress-append"].verdict == "at-least-once" and hops["egress-append"].counts.duplicated_in_state == len(
        held_records
    )
    assert hops["egress-upsert"].verdict == "effectively-exactly-once" and hops["egress-upsert"].counts.lost == 0
    # End to end over every egress: the weakest one (append) decides.
    assert report[VERDICT] == "at-least-once" and report[COUNTS].lost == 0
    assert report[COUNTS].duplicated_in_state == len(held_records)
    # Every extra copy is tied to the replay after its egress's kill.
    assert report[CAUSES]["duplicated"]["unexplained"] == 0
    redelivered = {f.target: f.redelivered for f in report[FAULTS] if f.kind == "kill-driver"}
    assert redelivered["egress-append"] == len(held_records) and redelivered["egress-upsert"] > 0


def test_a_kill_after_the_write_is_absorbed_by_dedup_and_transactional(kills_after_write):
    run_dir, _, report = kills_after_write
    for mode in ("dedup", "transactional"):
        stored = egress_counts(run_dir, f"egress-{mode}", "records")
        assert set(stored) == acked(run_dir) and set(stored.values()) == {1}, mode

    hops = {h.name: h for h in report[HOP_FINDINGS]}
    # The transactional egress audits in a transaction of its own: the replayed batch reaches the audit twice.
    assert hops["egress-transactional"].verdict == "effectively-exactly-once"
    assert hops["egress-dedup"].verdict in ("exactly-once", "effectively-exactly-once")
    for mode in ("dedup", "transactional"):
        counts = hops[f"egress-{mode}"].counts
        assert counts.lost == 0 and counts.duplicated_in_state == 0, mode
    assert report[CAUSES]["duplicated"]["unexplained"] == 0


def test_a_cut_link_stops_the_egress_without_a_restart_and_it_resumes_with_nothing_lost(kills_after_write):
    run_dir, _, report = kills_after_write
    events = history(run_dir)
    begun = next(e for e in events if e["event"] == "fault_begun" and e["kind"] == "network-partition")
    ended = next(e for e in events if e["event"] == "fault_ended" and e["kind"] == "network-partition")
    assert begun["target"] == "egress-upsert" and begun["partition"] is True and begun["scope"] == "streamlet"
    assert ended["ts_ms"] - begun["ts_ms"] >= 19_500  # held for its 20 s (ending once healed, however late)
    # The proxy says when it cut the link and when it healed it.
    applied = [
        json.loads(line)
        for line in (run_dir / "logs" / "network-proxy.log").read_text().splitlines()
        if '"applied"' in line
    ]
    assert [a["applied"].get("partition", False) for a in applied] == [True, False]

    # Independent of the checker, from the egress's own progress events: no batch that started while the link
    # was cut finished before it healed, and batches with input came again after it. The driver never restarted.
    progress = [json.loads(line) for line in (run_dir / "progress" / "egress-upsert.jsonl").open()]
    batches = [e for e in progress if e.get("event") == "progress"]
    assert not [e for e in batches if begun["ts_ms"] < batch_started_ms(e) and e["ts_ms"] < ended["ts_ms"]]
    assert any(e["ts_ms"] > ended["ts_ms"] and e["progress"]["numInputRows"] > 0 for e in batches)
    assert not [
        e
        for e in events
        if e["event"] == "process_started"
        and e.get("streamlet") == "egress-upsert"
        and begun["ts_ms"] <= e["ts_ms"] <= ended["ts_ms"]
    ]
    stored = egress_counts(run_dir, "egress-upsert", "records")
    assert set(stored) == acked(run_dir) and set(stored.values()) == {1}, "nothing lost, nothing stored twice"

    fault = next(f for f in report[FAULTS] if f.kind == "network-partition")
    assert fault.recovery_s is not None and fault.recovery_s >= 20 and fault.redelivered == 0


def test_a_fault_kind_of_ones_own_is_loaded_by_module_and_attr_and_played(kills_after_write):
    run_dir, _, report = kills_after_write
    begun = next(e for e in history(run_dir) if e["event"] == "fault_begun" and e["kind"] == "freeze-driver")
    assert begun["target"] == "ingress" and begun["frozen_s"] == 4.0
    assert (begun["scope"], begun["restarts"], begun["recovers"]) == ("streamlet", False, True)
    fault = next(f for f in report[FAULTS] if f.kind == "freeze-driver")
    assert fault.end_ms - fault.start_ms >= 4000 and fault.recovery_s is not None


@pytest.mark.long  # redeploy's run in make test: test_applications.py's undeclared filter
def test_a_redeploy_from_latest_skips_what_arrived_while_down_and_the_checker_says_so(tmp_path):
    """The egress is redeployed without its checkpoint, from `latest`: the records appended to its
    input while it was down are never read. Lost = exactly those, attributed to the redeploy."""
    run_dir = tmp_path / "run"
    scenario = {
        **TWO_STEP,
        "faults": [{"kind": "redeploy", "target": "egress", "start_s": 8, "starting": "latest", "down_s": 4}],
        "expectations": {"lost_causes": ["redeploy"]},
    }
    summary = run_scenario(parse_scenario(scenario), run_dir, console=Console(quiet=True))
    assert summary.status == "complete" and summary.faults_played == 1 and not summary.failed_streamlets, why(summary)
    assert (run_dir / "checkpoints-retired" / "egress-1").is_dir()

    # Independent of the checker: from the history, the position the egress had committed; from the new
    # checkpoint, the offsets its new query started at (`latest` resolved); between them, what it skipped,
    # except what a batch the stop interrupted (one still running 5 s after SIGTERM) wrote before its commit.
    committed = {
        p: o for t, p, o in next(e for e in history(run_dir) if e["event"] == "consumer_position")["partitions"]
    }
    initial = (run_dir / "checkpoints" / "egress" / "main" / "sources" / "0" / "0").read_text().splitlines()[-1]
    start = {int(p): o for p, o in json.loads(initial)["ingested"].items()}
    ingested = [json.loads(line) for line in (run_dir / "topics" / "ingested.jsonl").open()]
    skipped = {
        (r["value"]["key"], r["value"]["seq"])
        for r in ingested
        if committed[r["partition"]] <= r["offset"] < start[r["partition"]]
    }
    stored = set(egress_counts(run_dir, "egress", "records"))
    expected_lost = skipped - stored
    assert expected_lost, "records must have arrived while the egress was down"
    assert acked(run_dir) - stored == expected_lost

    report = check_run(run_dir)
    assert report[COUNTS].lost == len(expected_lost) and report[VERDICT] == "at-most-once"
    assert report[CAUSES]["lost"]["redeploy"] == len(expected_lost) and report[CAUSES]["lost"]["unexplained"] == 0
    assert {h.name: h.first_seen["lost"] for h in report[HOP_FINDINGS]}["egress"] == len(expected_lost)
    assert report.passed


@pytest.mark.parametrize(
    "play, message",
    [
        (
            lambda run, target, down_s=5.0: None,
            "play's down_s has a default of its own (5.0): state it once, in its Param",
        ),
        (lambda run, target, down_s, up_s: None, "play takes up_s, which is not one of its params (down_s)"),
        (lambda run, target: None, "play does not take its param down_s"),
    ],
)
def test_a_fault_kind_whose_play_disagrees_with_its_params_is_refused_naming_both(play, message):
    with pytest.raises(ValueError) as caught:
        FaultKind("pause-it", "broker", "pauses a broker", play=play, params={"down_s": Param((int, float), 10.0)})
    assert str(caught.value).startswith(f"fault kind 'pause-it': {message}")
