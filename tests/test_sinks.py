"""Spark's own file sinks as users write them (the Parquet file sink; Delta Lake's foreachBatch with
txnAppId/txnVersion, and in make test-long its streaming sink), each driver SIGKILLed in the middle of a batch,
judged from their files and logs and checked here against a count made from the same files without the checker (nor
the sinks' exports, which this run records in columnar form)."""

from __future__ import annotations

import json
import signal
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from harness.checker.check import check_run
from harness.checker.counts import COUNTS, HOP_FINDINGS, VERDICT
from harness.checker.fault_results import FAULTS
from harness.checker.resources import RESOURCE_USE
from harness.evidence.progress import query_events
from harness.runner.console import Console
from harness.runner.run import run_scenario
from harness.scenario.parse import parse_scenario
from tests.evidence_helpers import acked, read_acks, why

pytestmark = pytest.mark.e2e

STREAMLETS = {
    "files": {"kind": "file-sink"},
    "stream": {"kind": "delta-sink", "settings": {"mode": "stream"}},
    "txn": {"kind": "delta-sink", "settings": {"mode": "foreach-batch-txn"}},
}
# Each sink's driver is killed once, with a batch in flight (the file sinks: the Parquet sink's asked for
# after-write, which for a driver with no crash point is the same moment) or just written (foreachBatch with
# txnVersion), and records still come until 6 s after the last kill's end.
KILLS = {
    "files": {"at": "after-write", "start_s": 4},  # no crash point (Spark's own sink only): its in-flight moment
    "stream": {"at": "in-flight", "start_s": 5},
    "txn": {"at": "after-write", "start_s": 6},
}
# make test's run: Spark's Parquet sink and Delta's idempotent foreachBatch. Delta's own streaming sink commits a
# batch with the same transaction (its query's id and the batch's) and is read by the same Delta log reader: its run,
# the slowest restart of the three, is make test-long's.
IN_MAKE_TEST = ("files", "txn")


def sinks_scenario(names: tuple[str, ...]) -> dict:
    """Ingress -> the sinks `names`, each killed once (KILLS)."""
    return {
        "name": "spark-sinks",
        "blueprint": {
            "streamlets": {"ingress": {"kind": "ingress"}, **{name: STREAMLETS[name] for name in names}},
            "connections": {"ingress.out": [f"{name}.in" for name in names]},
        },
        "workload": {"rate": 100, "duration_s": 10, "after_faults_s": 6, "keys": 4},
        "evidence": {"recordings": "columnar"},  # each sink's export: segments, no store
        "faults": [{"kind": "kill-driver", "target": name, "restart_after_s": 1, **KILLS[name]} for name in names],
    }


SINKS = sinks_scenario(IN_MAKE_TEST)


def _finished(path: Path) -> bool:
    """A Parquet file is finished when it ends with its footer: the magic bytes at both ends."""
    size = path.stat().st_size
    if size < 8:
        return False
    with path.open("rb") as f:
        head = f.read(4)
        f.seek(size - 4)
        return head == b"PAR1" and f.read(4) == b"PAR1"


def _records(files) -> Counter:
    copies = Counter()
    for path in files:
        if not _finished(path):  # a file a killed attempt left empty or cut: no reader gets a row from it
            continue
        table = pq.read_table(path, columns=["key", "seq"])
        copies.update(zip(table.column("key").to_pylist(), table.column("seq").to_pylist()))
    return copies


def _metadata_log_files(table: Path) -> set[str]:
    """The data files Spark's file-sink metadata log lists as committed."""
    names, deleted = set(), set()
    for log in (table / "_spark_metadata").iterdir():
        if not log.name.removesuffix(".compact").isdigit():
            continue
        for line in log.read_text().splitlines()[1:]:
            if line.strip():
                entry = json.loads(line)
                (deleted if entry.get("action") == "delete" else names).add(Path(entry["path"]).name)
    return names - deleted


def _delta_log(table: Path) -> tuple[set[str], list[int]]:
    """The data files the Delta log has live at the end, and the txn versions of its commits, in order."""
    live, versions = set(), []
    for commit in sorted((table / "_delta_log").glob("*.json")):
        for action in map(json.loads, commit.read_text().splitlines()):
            if "add" in action:
                live.add(Path(action["add"]["path"]).name)
            elif "remove" in action:
                live.discard(Path(action["remove"]["path"]).name)
            elif "txn" in action:
                versions.append(action["txn"]["version"])
    return live, versions


def _run(folder: Path, names: tuple[str, ...]) -> Path:
    run_dir = folder / "run"
    summary = run_scenario(parse_scenario(sinks_scenario(names)), run_dir, console=Console(quiet=True))
    assert summary.status == "complete" and summary.faults_played == len(names) and not summary.failed_streamlets, why(
        summary
    )
    return run_dir


@pytest.fixture(scope="module")
def sinks_run(tmp_path_factory) -> Path:
    return _run(tmp_path_factory.mktemp("sinks"), IN_MAKE_TEST)


def test_file_and_delta_sinks_killed_mid_batch_are_judged_as_their_files_and_logs_say(sinks_run):
    _judged_as_files_and_logs_say(sinks_run, IN_MAKE_TEST)


@pytest.mark.long
def test_deltas_streaming_sink_killed_mid_batch_is_judged_as_its_files_and_log_say(tmp_path):
    _judged_as_files_and_logs_say(_run(tmp_path, ("stream",)), ("stream",))


def _judged_as_files_and_logs_say(run_dir: Path, names: tuple[str, ...]) -> None:
    """Each sink's kill held a batch; its committed files (its own log) and every file it wrote, counted here, are
    its hop's state and deliveries; the held batch's replay was skipped by every one of them."""
    history = list(map(json.loads, (run_dir / "history.jsonl").open()))
    held = {}
    for e in history:
        if e["event"] == "fault_begun":
            held.setdefault(e["target"], []).append(e.get("held_batch"))
    assert all(len(held[name]) == 1 and None not in held[name] for name in names), held
    # the file sink offered no crash point, so its after-write kill held a batch at its in-flight moment; the
    # foreachBatch writer (txn) offered one and held there
    offered = {name for name in names if (run_dir / "control" / f"{name}.point").exists()}
    assert offered == {"txn"} & set(names) and not [e for e in history if e["event"] == "crash_point_missed"]
    if "files" in names:
        assert [e.get("frozen_looks", 0) > 0 for e in history if e.get("target") == "files" and "at" in e] == [True]
    sent = acked(run_dir)

    committed, versions = {}, {}
    for name in names:
        table = run_dir / "work" / name / "table"
        if name == "files":
            committed[name] = _metadata_log_files(table)
        else:
            committed[name], versions[name] = _delta_log(table)
    if "txn" in names:  # its held batch was written and committed to the Delta log before the kill; its replay skipped
        assert all(versions["txn"].count(batch) == 1 for batch in held["txn"]), (held["txn"], versions["txn"])

    for name in names:
        assert (run_dir / "egress" / f"{name}.records").is_dir() and (run_dir / "egress" / f"{name}.audit").is_dir()
        assert not (run_dir / "egress" / f"{name}.sqlite").exists() and not list((run_dir / "egress").glob("*.jsonl"))
    report = check_run(run_dir)
    hops = {h.name: h for h in report[HOP_FINDINGS]}
    for name in names:
        written = sorted((run_dir / "work" / name / "table").glob("part-*.parquet"))
        assert committed[name] and committed[name] <= {p.name for p in written}
        state, delivered = _records(p for p in written if p.name in committed[name]), _records(written)
        c = hops[name].counts
        assert c.lost == len(sent - set(state)) == 0, name
        assert c.duplicated_in_state == sum(1 for r, n in state.items() if n > 1 and r in sent) == 0, name
        assert c.duplicated_deliveries == sum(1 for r, n in delivered.items() if n > 1 and r in sent), name
        assert hops[name].verdict in ("exactly-once", "effectively-exactly-once"), name
        print(
            f"{name}: {len(written)} data files, {len(committed[name])} committed, "
            f"{c.duplicated_deliveries} records delivered twice (files of attempts that never committed): "
            f"{hops[name].verdict}"
        )
    if "txn" in names:
        assert hops["txn"].counts.duplicated_deliveries == 0  # the replay wrote nothing
    # end to end over both sinks, by the engine columnar evidence gets (dense): every record sent counted once
    assert report[COUNTS].acked == len(sent) and report[COUNTS].phantom == 0
    assert report[VERDICT] in ("exactly-once", "effectively-exactly-once")
    assert all(f.recovery_s is not None for f in report[FAULTS]), [(f.target, f.note) for f in report[FAULTS]]


# What the runner does in every run, seen on this one (its drivers killed and restarted, records coming until
# after_faults_s after the last kill): the chain's frozen run (test_real_evidence.py) cannot show it.


def test_the_workload_lasts_until_its_time_after_the_last_fault_ended(sinks_run):
    workload = SINKS["workload"]
    rate, duration_ms, after_ms = workload["rate"], workload["duration_s"] * 1000, workload["after_faults_s"] * 1000
    events = list(map(json.loads, (sinks_run / "history.jsonl").open()))
    started = next(e["ts_ms"] for e in events if e["event"] == "process_started" and e["process"] == "generator")
    last_ended = max(e["ts_ms"] for e in events if e["event"] == "fault_ended")
    [stopped] = [e for e in events if e["event"] == "workload_stopped"]
    assert stopped["ts_ms"] - last_ended >= after_ms and stopped["ts_ms"] - started >= duration_ms
    # within seconds of it: the generator looks each second, and a busy machine runs its threads late
    assert stopped["ts_ms"] - max(last_ended + after_ms, started + duration_ms) < 5_000, "stopped when its time came"
    exited = next(e for e in events if e["event"] == "process_exited" and e["process"] == "generator")
    assert exited["exit_code"] == 0 and exited["ts_ms"] >= stopped["ts_ms"]
    # It sent at its rate from its first record until then (its own start, after the process's imports, is when its
    # clock begins: a busy machine delays it), within three seconds' records (a loaded machine ran it 58 records
    # short of the rate over 169 s), and every record has its outcome.
    rows = read_acks(sinks_run)  # this run's in columnar form (acks/)
    assert (rows["status"] == "acked").all()
    first_sent = int(rows.loc[rows["late"].astype(int) == 0, "event_time_ms"].min())
    assert 0 <= first_sent - started < 10_000
    assert abs(len(rows) - rate * (stopped["ts_ms"] - first_sent) / 1000) <= 3 * rate, len(rows)


def test_a_killed_driver_is_gone_and_its_restart_runs_the_batch_in_flight_from_the_checkpoint(sinks_run):
    events = list(map(json.loads, (sinks_run / "history.jsonl").open()))
    for target in IN_MAKE_TEST:
        begun = next(e for e in events if e["event"] == "fault_begun" and e["target"] == target)
        killed = next(e for e in events if e["event"] == "process_killed" and e["pid"] == begun["pid"])
        assert killed["signal"] == "SIGKILL" and killed["exit_code"] == -signal.SIGKILL
        new_pid = next(e["new_pid"] for e in events if e["event"] == "fault_ended" and e["target"] == target)
        progress = [e for e in query_events(sinks_run / "progress" / f"{target}.jsonl") if e["event"] == "progress"]
        first = next(e["progress"] for e in progress if e["pid"] == new_pid)
        # The restarted driver's first batch is the one the kill interrupted, read again from where the batch
        # before it ended: that batch the old driver committed (Spark reports a batch's progress after its commit).
        # (Its rows are read again only where the sink's own log lacks the batch: Spark's file sink and Delta's sinks
        # skip a batch their log already holds without reading it.)
        assert first["batchId"] == begun["held_batch"], target
        before = next(
            e["progress"]
            for e in progress
            if e["pid"] == begun["pid"] and e["progress"]["batchId"] == begun["held_batch"] - 1
        )
        assert _offsets(first["sources"][0]["startOffset"]) == _offsets(before["sources"][0]["endOffset"]), target


def _offsets(value) -> dict:
    return json.loads(value) if isinstance(value, str) else value


def test_resources_are_sampled_for_every_process_and_the_report_follows_the_samples(sinks_run):
    events = list(map(json.loads, (sinks_run / "history.jsonl").open()))
    samples = [e for e in events if e["event"] == "resources"]
    assert len(samples) >= 3
    started = {e["process"]: e["pid"] for e in events if e["event"] == "process_started"}
    seen = {name: value["pid"] for s in samples for name, value in s["rss_mb"].items()}
    # Every process the run started was sampled, under its last pid (the killed drivers' restarts).
    assert set(started) <= set(seen) and all(seen[name] == pid for name, pid in started.items() if name != "generator")
    # A driver's figure is its Python plus its JVM: the largest sample of each is well above a Python alone. (A sample
    # taken seconds after a restart sees a JVM still starting, so the smallest is not.)
    for name in ("streamlet-files", "streamlet-txn"):
        assert max(s["rss_mb"][name]["mb"] for s in samples if name in s["rss_mb"]) > 250
    # The disk figures are the run directory's, and the drivers' Spark scratch space is in it, not in /tmp.
    assert {"cluster", "checkpoints", "spark-local"} <= set(samples[-1]["disk_mb"])
    # It is also the drivers' working directory: what Spark up to 4.0 left there after a kill (artifacts/) stays in the
    # run (from 4.1 a killed session leaves none).
    streamlets = set(SINKS["blueprint"]["streamlets"])
    assert {p.name for p in (sinks_run / "spark-local").iterdir()} - {"artifacts"} == streamlets
    use = check_run(sinks_run)[RESOURCE_USE]
    assert use.samples == len(samples) and use.max_growth is None  # minutes, not the 10 a process needs to be warm
    assert use.disk_last_mb == round(sum(samples[-1]["disk_mb"].values()), 1)
