"""Spark's own file sinks as users write them (the Parquet file sink; Delta Lake's streaming sink and foreachBatch
with txnAppId/txnVersion), each driver SIGKILLed in the middle of a batch, judged from their files and logs and
checked here against a count made from the same files without the checker (nor the sinks' exports, which this run
records in columnar form)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from harness.checker.check import check_run
from harness.runner.console import Console
from harness.runner.run import run_scenario
from harness.scenario.parse import parse_scenario
from tests.evidence_helpers import acked, why

pytestmark = pytest.mark.e2e

SINKS = {
    "name": "spark-sinks",
    "blueprint": {
        "streamlets": {
            "ingress": {"kind": "ingress"},
            "files": {"kind": "file-sink"},
            "stream": {"kind": "delta-sink", "settings": {"mode": "stream"}},
            "txn": {"kind": "delta-sink", "settings": {"mode": "foreach-batch-txn"}},
        },
        "connections": {"ingress.out": ["files.in", "stream.in", "txn.in"]},
    },
    "workload": {"rate": 100, "duration_s": 10, "after_faults_s": 6, "keys": 4},
    "evidence": {"recordings": "columnar"},  # each sink's export: segments, no store
    # Each sink's driver is killed once, with a batch in flight (the file sinks: the Parquet sink's asked for
    # after-write, which for a driver with no crash point is the same moment) or just written (foreachBatch with
    # txnVersion), and records still come until 6 s after the last kill's end.
    "faults": [
        {
            "kind": "kill-driver",
            "target": "files",
            "start_s": 4,
            "at": "after-write",  # no crash point (Spark's own sink only): its in-flight moment
            "restart_after_s": 1,
        },
        {
            "kind": "kill-driver",
            "target": "stream",
            "start_s": 5,
            "at": "in-flight",
            "restart_after_s": 1,
        },
        {
            "kind": "kill-driver",
            "target": "txn",
            "start_s": 6,
            "at": "after-write",
            "restart_after_s": 1,
        },
    ],
}


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


def test_file_and_delta_sinks_killed_mid_batch_are_judged_as_their_files_and_logs_say(tmp_path):
    run_dir = tmp_path / "run"
    summary = run_scenario(parse_scenario(SINKS), run_dir, console=Console(quiet=True))
    assert summary.status == "complete" and summary.faults_played == 3 and not summary.failed_streamlets, why(summary)
    history = list(map(json.loads, (run_dir / "history.jsonl").open()))
    held = {}
    for e in history:
        if e["event"] == "fault_begun":
            held.setdefault(e["target"], []).append(e.get("held_batch"))
    assert all(len(held[name]) == 1 and None not in held[name] for name in ("files", "stream", "txn")), held
    # the file sink offered no crash point, so its after-write kill held a batch at its in-flight moment; the
    # foreachBatch writer (txn) offered one and held there
    offered = {name for name in ("files", "stream", "txn") if (run_dir / "control" / f"{name}.point").exists()}
    assert offered == {"txn"} and not [e for e in history if e["event"] == "crash_point_missed"]
    assert [e.get("frozen_looks", 0) > 0 for e in history if e.get("target") == "files" and "at" in e] == [True]
    sent = acked(run_dir)

    committed = {"files": _metadata_log_files(run_dir / "work" / "files" / "table")}
    committed["stream"], _ = _delta_log(run_dir / "work" / "stream" / "table")
    committed["txn"], txn_versions = _delta_log(run_dir / "work" / "txn" / "table")
    # Each held batch was written and committed to the Delta log before the kill; its replay was skipped.
    assert all(txn_versions.count(batch) == 1 for batch in held["txn"]), (held["txn"], txn_versions)

    for name in ("files", "stream", "txn"):
        assert (run_dir / "egress" / f"{name}.records").is_dir() and (run_dir / "egress" / f"{name}.audit").is_dir()
        assert not (run_dir / "egress" / f"{name}.sqlite").exists() and not list((run_dir / "egress").glob("*.jsonl"))
    report = check_run(run_dir)
    hops = {h.name: h for h in report.hops}
    for name in ("files", "stream", "txn"):
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
    assert hops["txn"].counts.duplicated_deliveries == 0  # the replay wrote nothing
    assert report.counts.phantom == 0 and report.verdict in ("exactly-once", "effectively-exactly-once")
    assert all(f.recovery_s is not None for f in report.faults), [(f.target, f.note) for f in report.faults]
