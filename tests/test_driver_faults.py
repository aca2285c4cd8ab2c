"""The faults no other tool injects into Spark, on a real job (examples/checkpoint-damage/relay.py: Kafka to Kafka)
under a real broker: a damaged checkpoint and a paused driver. Each effect is counted here from the raw evidence
(acks.csv, the output topic's dump, the checkpoint's offsets files and those damage-checkpoint kept) and the
report's counts must equal it."""

from __future__ import annotations

import json
import struct
from collections import Counter
from pathlib import Path

import pytest
import yaml

from harness.checker.check import check_run
from harness.checker.counts import CAUSES, COUNTS
from harness.checker.expect import EXPECTATIONS
from harness.runner.console import Console
from harness.runner.run import run_scenario
from harness.scenario.parse import parse_scenario
from tests.evidence_helpers import read_acks, why
from tests.test_faults import ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.long, pytest.mark.timeout(900)]  # make test-long
RELAY = ROOT / "examples" / "checkpoint-damage"


def _run(tmp_path, fault: dict, distinct: bool = False, duration_s: float | None = None):
    """The relay's scenario with `fault` (damage-checkpoint at 12 s unless it says otherwise) run to its end."""
    raw = yaml.safe_load((RELAY / "scenario.yaml").read_text())
    raw["faults"] = [{"kind": "damage-checkpoint", "target": "relay", "start_s": 12, **fault}]
    if distinct:
        raw["applications"]["relay"]["command"].append("--distinct")
    if duration_s is not None:
        raw["workload"]["duration_s"] = duration_s
    run_dir = tmp_path / "run"
    summary = run_scenario(parse_scenario(raw, RELAY), run_dir, console=Console(quiet=True))
    assert summary.status == "complete", why(summary)
    return run_dir, summary, check_run(run_dir)


def _history(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]


def _ends(path: Path) -> dict[int, int]:
    topics = json.loads(path.read_text().splitlines()[-1])
    return {int(p): int(o) for parts in topics.values() for p, o in parts.items()}


def _read_between(run_dir: Path, start: dict[int, int], end: dict[int, int]) -> set[tuple[str, int]]:
    """The acknowledged source records at offsets [start, end) of their partitions: those a batch read."""
    acks = read_acks(run_dir)
    acks = acks[acks.status == "acked"]
    read = [start.get(int(p), 0) <= int(o) < end.get(int(p), 0) for p, o in zip(acks.partition, acks.offset)]
    return set(zip(acks.key[read], acks.seq[read].astype(int)))


def _copies(run_dir: Path) -> Counter:
    lines = (run_dir / "topics" / "orders-relayed.jsonl").read_text().splitlines()
    return Counter(
        (key, int(seq)) for key, _, seq in (json.loads(line)["value"]["order_id"].rpartition("-") for line in lines)
    )


@pytest.mark.parametrize("damage", ["last-commit", "last-batch"])
def test_a_lost_commit_or_batch_is_replayed_and_its_records_are_the_ones_written_twice(tmp_path, damage):
    """The driver is killed between two batches and the newest commits/N (with last-batch, offsets/N too) is
    removed: Spark runs batch N again, and the records it had read, counted from its offsets (the removed file as
    damage-checkpoint kept it), are exactly those the output holds twice."""
    run_dir, summary, report = _run(tmp_path, {"damage": damage})
    assert not summary.failed_streamlets and report.outcome == "pass", report[EXPECTATIONS]
    (damaged,) = [e for e in _history(run_dir) if e["event"] == "checkpoint_damaged"]
    removed = [f for f in damaged["files"] if not Path(f["path"]).name.startswith(".")]
    assert {f["action"] for f in removed} == {"removed"} and len(removed) == (1 if damage == "last-commit" else 2)
    batch = int(Path(removed[0]["path"]).name)
    offsets = run_dir / "checkpoints" / "relay" / "main" / "offsets"
    kept = run_dir / "checkpoints-damaged" / "relay" / "1" / "main" / "offsets"
    end = _ends(kept / str(batch) if damage == "last-batch" else offsets / str(batch))
    batch_records = _read_between(run_dir, _ends(offsets / str(batch - 1)), end)
    twice = {record for record, n in _copies(run_dir).items() if n > 1}
    assert batch_records and twice == batch_records
    counts = report[COUNTS]
    assert counts.lost == 0 and counts.duplicated_in_state == len(batch_records)


def test_a_lost_state_store_version_is_noticed_by_spark_and_what_follows_is_lost_to_the_failed_query(tmp_path):
    """With a deduplicating query (state), the newest version of every state store removed: Spark 4.2 refuses to
    load the state and the query fails at its restart. What the output lacks, counted here, is lost, each record
    explained by the failed query, in Spark's own words in the history."""
    run_dir, summary, report = _run(tmp_path, {"damage": "state-version"}, distinct=True)
    assert list(summary.failed_streamlets) == ["relay"], why(summary)
    (damaged,) = [e for e in _history(run_dir) if e["event"] == "checkpoint_damaged"]
    assert damaged["files"] and all(Path(f["path"]).name.split(".")[-1] in ("delta", "crc") for f in damaged["files"])
    failed = [e for e in _history(run_dir) if e["event"] == "query_failed"]
    assert failed and "CANNOT_LOAD_STATE_STORE" in (run_dir / "logs" / "streamlet-relay.log").read_text()
    acks = read_acks(run_dir)
    sent = set(zip(acks.key[acks.status == "acked"], acks.seq[acks.status == "acked"].astype(int)))
    lost = sent - set(_copies(run_dir))
    counts = report[COUNTS]
    assert lost and counts.lost == len(lost) and report.outcome == "fail"
    assert report[CAUSES]["lost"]["query_failed"] == len(lost)


def test_a_paused_driver_writes_nothing_while_frozen_and_loses_nothing_after(tmp_path):
    """pause-driver freezes the job for 35 s, past its producer's request.timeout.ms (as its log gives it): the
    output's dump has no record written while it was frozen, the broker's log segments (read here) show the producer
    that wrote before the pause writing after it, and once thawed the job goes on, nothing lost."""
    run_dir, summary, report = _run(tmp_path, {"kind": "pause-driver", "start_s": 8, "paused_s": 35}, duration_s=50)
    assert not summary.failed_streamlets, why(summary)
    history = _history(run_dir)
    paused = next(e["ts_ms"] for e in history if e["event"] == "process_paused")
    resumed = next(e["ts_ms"] for e in history if e["event"] == "process_resumed")
    assert resumed - paused >= 35_000
    lines = [json.loads(line) for line in (run_dir / "topics" / "orders-relayed.jsonl").read_text().splitlines()]
    assert not [line for line in lines if paused + 1000 < line["timestamp_ms"] < resumed - 1000]
    batches = _segment_batches(run_dir, "orders-relayed")
    before = {producer for *_, producer, first_ms in batches if first_ms < paused}
    after = {producer for *_, producer, first_ms in batches if first_ms >= resumed}
    told = report.sections["pauses"].data["1"]
    assert told["settings"]["request.timeout.ms"] == "30000"  # the Spark sink's producer, from the job's log
    assert told["outlasted"] == ["request.timeout.ms"]
    brokers = told["brokers"]
    assert (set(brokers["before"]), set(brokers["kept"]) | set(brokers["new"])) == (before, after)
    assert brokers["written_frozen"] == 0 and brokers["markers"] == []
    assert report[COUNTS].lost == 0 and report.outcome == "pass", report[EXPECTATIONS]


def _segment_batches(run_dir: Path, topic: str) -> list[tuple[int, int, int, int, int]]:
    """Each record batch of a topic's partitions as the broker's log segments hold them, read here with struct
    (partition, base offset, last offset, producer id, first timestamp): Kafka's record batch format v2."""
    found = []
    for folder in sorted((run_dir / "cluster").glob(f"node-*/data/{topic}-*")):
        partition = int(folder.name.rpartition("-")[2])
        for segment in sorted(folder.glob("*.log")):
            data, pos = segment.read_bytes(), 0
            while pos + 61 <= len(data):
                base, length = struct.unpack_from(">qi", data, pos)
                last_delta, first_ms = struct.unpack_from(">iq", data, pos + 23)
                producer = struct.unpack_from(">q", data, pos + 43)[0]
                found.append((partition, base, base + last_delta, producer, first_ms))
                pos += 12 + length
    return found


def test_a_zombie_driver_beside_its_successor_has_each_copy_told_by_the_producer_that_wrote_it(tmp_path):
    """zombie-driver freezes the job, starts a second driver on its checkpoint and thaws the first 15 s later: Spark
    notices the other's commit and the zombie ends. Each copy of the output is placed here by the producer id the
    broker's log segments give its batch: the ids that wrote before the freeze are the zombie's, the others the
    second driver's; the report's Two drivers section counts the same, and the records both wrote are the run's
    duplicates."""
    zombie = {"kind": "zombie-driver", "start_s": 10, "frozen_s": 15, "overlap_s": 8}
    run_dir, summary, report = _run(tmp_path, zombie, duration_s=45)
    assert not summary.failed_streamlets, why(summary)
    history = _history(run_dir)
    frozen = next(e["ts_ms"] for e in history if e["event"] == "fault_begun")
    zombie_exit = next(e for e in history if e.get("process") == "streamlet-relay-zombie" and "exit_code" in e)
    assert zombie_exit["exit_code"] == 1  # it ended by itself: Spark noticed the other driver
    # Spark's words for it: "Multiple streaming queries are concurrently using" a log, or "Concurrent update to the
    # log. Multiple streaming jobs detected for N", as the zombie meets the other's offsets or commits
    assert "Multiple streaming" in (run_dir / "logs" / "streamlet-relay.log").read_text()
    batches = _segment_batches(run_dir, "orders-relayed")
    zombie_ids = {producer for _, _, _, producer, first_ms in batches if first_ms < frozen}
    lines = [json.loads(line) for line in (run_dir / "topics" / "orders-relayed.jsonl").read_text().splitlines()]
    by = Counter()
    writers: dict[str, set] = {}
    for line in lines:
        producer = next(
            p for part, base, last, p, _ in batches if part == line["partition"] and base <= line["offset"] <= last
        )
        who = "zombie" if producer in zombie_ids else "second"
        by[who] += 1
        writers.setdefault(line["value"]["order_id"], set()).add(who)
    counted = report.sections["zombies"].data["1"]["orders-relayed"]
    assert (counted["zombie"] + counted["zombie-thawed"], counted["second"]) == (by["zombie"], by["second"])
    assert counted["either"] == counted["unplaced"] == 0 and by["zombie"] > 0 and by["second"] > 0
    both = sum(1 for w in writers.values() if len(w) == 2)
    assert counted["both"] == both == report[COUNTS].duplicated_in_state
    assert report[COUNTS].lost == 0 and report.outcome == "pass", report[EXPECTATIONS]
