"""kafka-error on a real broker (harness/faults/kinds/kafka_error.py): the network proxy drops the broker's response
to some produce requests after the broker appended them, then resets the connection (the responses still in flight
on it are lost too). A producer that is not idempotent sends each again: every record of an unanswered request is
in its topic again (more than twice where a retry's answer was dropped too), and no other is. Counted here from the
proxy's log (kafka-requests.jsonl: each unanswered request's partitions and the offset the broker gave each, in the
response the producer never had) and the topic read back; the report's duplicates and their causes must equal it.
With idempotence the broker keeps one copy of each. On the generator's producer (librdkafka) and on Spark's Kafka
sink (the relay's, Java)."""

from __future__ import annotations

import json
import sqlite3

import pandas as pd
import pytest
import yaml

from harness.checker.check import check_run
from harness.checker.counts import CAUSES, COUNTS, DUPLICATED_CAUSES, VERDICT
from harness.runner.console import Console
from harness.runner.run import run_scenario
from harness.scenario.parse import parse_scenario
from tests.evidence_helpers import read_acks, why
from tests.test_faults import ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]
RELAY = ROOT / "examples" / "checkpoint-damage"
COLUMNS = ["partition", "offset", "order_id"]


def _run(tmp_path, target: str, idempotence: bool, **action):
    """The relay's scenario, 20 s, with five produce responses dropped (or as `action` says) on `target`'s link (the
    generator's, or the relay's: Spark's Kafka sink), its producer idempotent or not."""
    raw = yaml.safe_load((RELAY / "scenario.yaml").read_text())
    raw["workload"]["duration_s"] = 20
    if target == "generator":
        raw["workload"]["idempotence"] = idempotence
    elif not idempotence:
        raw["applications"]["relay"]["command"] += ["--producer", "enable.idempotence=false"]
    fault = {"kind": "kafka-error", "target": target, "start_s": 5, "duration_s": 10, "share": 1.0, "count": 5}
    raw["faults"] = [fault | action]
    raw["expectations"] = {"end_to_end": "at-least-once"}
    run_dir = tmp_path / "run"
    summary = run_scenario(parse_scenario(raw, RELAY), run_dir, console=Console(quiet=True))
    assert summary.status == "complete", why(summary)
    return run_dir, check_run(run_dir)


def _dropped(run_dir, action: str = "drop-response") -> set[tuple[int, int]]:
    """The (partition, offset) of every record the broker appended for a request whose answer the producer never
    had: dropped, or lost with the connection the drop reset (or, for error-after-append, told an error)."""
    found = set()
    entries = [json.loads(line) for line in (run_dir / "kafka-requests.jsonl").read_text().splitlines()]
    assert sum(e["action"] == action for e in entries) == 5  # the fault's count
    for entry in entries:
        assert entry["api"] == "produce" and entry["action"] in (action, "lost-with-connection")
        sent = {(p["topic"], p["partition"]): sum(b["records"] for b in p["batches"]) for p in entry["partitions"]}
        for answer in entry["answered"]:
            assert answer["error_code"] == 0
            base, count = answer["base_offset"], sent[(answer["topic"], answer["partition"])]
            found |= {(answer["partition"], offset) for offset in range(base, base + count)}
    return found


def _copies(run_dir, target: str) -> pd.DataFrame:
    """Each copy of the topic `target` writes (partition, offset, order_id), read back: the source topic, or the
    relay's output topic as the harness recorded it."""
    if target == "generator":
        frame = pd.read_parquet(run_dir / "source" / "orders.parquet")
        return frame.assign(order_id=frame.value.map(lambda v: json.loads(v)["order_id"]))
    lines = [json.loads(line) for line in (run_dir / "topics" / "orders-relayed.jsonl").read_text().splitlines()]
    return pd.DataFrame([(x["partition"], x["offset"], x["value"]["order_id"]) for x in lines], columns=COLUMNS)


@pytest.mark.parametrize("target", ["generator", pytest.param("relay", marks=pytest.mark.long)])
def test_a_dropped_produce_response_makes_a_copy_of_exactly_the_records_it_answered(tmp_path, target):
    """A retry may itself be dropped: a record then has several copies in unanswered requests, and always exactly
    one outside them, the one whose response reached the producer. The causes say whose copies they are: the
    source's, read by the relay (retried_read), or the relay's producer's own (producer_retry)."""
    run_dir, report = _run(tmp_path, target, idempotence=False)
    dropped = _dropped(run_dir)
    copies = _copies(run_dir, target)
    where = pd.Series(list(zip(copies.partition, copies.offset)), index=copies.index)
    unanswered = copies[where.isin(dropped)]
    answered = copies[~where.isin(dropped)]
    assert dropped and len(unanswered) == len(dropped)
    assert not answered.order_id.duplicated().any()
    assert set(unanswered.order_id) <= set(answered.order_id)  # each was sent again
    assert report[COUNTS].duplicated_deliveries == unanswered.order_id.nunique() and report[COUNTS].lost == 0
    cause = "retried_read" if target == "generator" else "producer_retry"
    assert report[CAUSES]["duplicated"] == dict.fromkeys(DUPLICATED_CAUSES, 0) | {cause: len(unanswered)}


@pytest.mark.long
@pytest.mark.parametrize("target", ["generator", "relay"])
def test_an_idempotent_producer_keeps_one_copy_though_its_responses_were_dropped(tmp_path, target):
    run_dir, report = _run(tmp_path, target, idempotence=True)
    assert _dropped(run_dir)
    assert not _copies(run_dir, target).order_id.duplicated().any()
    assert report[COUNTS].duplicated_deliveries == 0 and report[COUNTS].lost == 0


@pytest.mark.long
def test_an_error_after_append_makes_a_copy_of_the_records_the_broker_had_appended(tmp_path):
    """NOT_ENOUGH_REPLICAS_AFTER_APPEND (20), as a leader whose followers fell behind answers: the broker appended,
    the producer, told it failed, sends the records again."""
    run_dir, report = _run(tmp_path, "generator", idempotence=False, action="error-after-append", error_code=20)
    appended = _dropped(run_dir, "error-after-append")
    copies = _copies(run_dir, "generator")
    where = pd.Series(list(zip(copies.partition, copies.offset)), index=copies.index)
    told = copies[where.isin(appended)]
    assert len(told) == len(appended) and not copies[~where.isin(appended)].order_id.duplicated().any()
    assert report[CAUSES]["duplicated"] == dict.fromkeys(DUPLICATED_CAUSES, 0) | {"retried_read": len(told)}


@pytest.mark.long
def test_an_error_instead_of_appending_is_retried_and_makes_no_copy(tmp_path):
    """NOT_LEADER_OR_FOLLOWER (6) instead of appending: the broker was sent the request unroutable (it appended
    nothing, said so with UNKNOWN_TOPIC_OR_PARTITION, 3), the producer was told 6, refreshed its metadata and sent
    the records again: each is in the topic once, none lost."""
    run_dir, report = _run(tmp_path, "generator", idempotence=False, action="error-response")
    entries = [json.loads(line) for line in (run_dir / "kafka-requests.jsonl").read_text().splitlines()]
    assert len(entries) == 5 and all(e["action"] == "error-response" and e["error_code"] == 6 for e in entries)
    assert {(a["error_code"], a["base_offset"]) for e in entries for a in e["answered"]} == {(3, -1)}
    assert not _copies(run_dir, "generator").order_id.duplicated().any()
    assert report[COUNTS].duplicated_deliveries == 0 and report[COUNTS].lost == 0 and report[VERDICT] == "exactly-once"


def test_a_held_end_of_transaction_keeps_its_records_from_a_read_committed_reader(tmp_path):
    """A transactional generator's EndTxn requests held 8 s on their way (delay-request): the coordinator writes
    the transaction's markers only then, and the read_committed ingress gets its records no sooner. Each record of
    the held transactions reaches the egress at least 8 s after it was made (its event time in acks.csv, its arrival
    in the egress's audit, read here with sqlite3; unheld, 99% take under 4 s); nothing is lost or duplicated."""
    caveats = ROOT / "scenarios" / "caveats"
    raw = yaml.safe_load((caveats / "transactions-read-committed.yaml").read_text())
    raw["workload"] |= {"duration_s": 25, "transactions": {"records": 50}}
    hold = {"kind": "kafka-error", "target": "generator", "api": "end-txn", "action": "delay-request"}
    raw["faults"] = [hold | {"delay_ms": 8000, "count": 2, "start_s": 5, "duration_s": 10}]
    run_dir = tmp_path / "run"
    summary = run_scenario(parse_scenario(raw, caveats), run_dir, console=Console(quiet=True))
    assert summary.status == "complete", why(summary)
    report = check_run(run_dir)
    entries = [json.loads(line) for line in (run_dir / "kafka-requests.jsonl").read_text().splitlines()]
    assert len(entries) == 2 and all(e["api"] == "end-txn" and e["responded_ms"] - e["ts_ms"] >= 8000 for e in entries)
    acks = read_acks(run_dir)
    with sqlite3.connect(run_dir / "egress" / "egress.sqlite") as db:
        arrived = pd.read_sql("SELECT key, seq, MIN(received_ms) AS received_ms FROM audit GROUP BY key, seq", db)
    waited = arrived.merge(acks[["key", "seq", "event_time_ms"]], on=["key", "seq"])
    late = waited[waited.received_ms - waited.event_time_ms >= 8000]
    assert len(late) >= 2 * 50  # the two held transactions' records at least
    assert report[COUNTS].lost == 0 and report[COUNTS].duplicated_deliveries == 0
    # The brokers' view of its transactions (producers.csv, the report's "A transactional source"): a marker on each
    # of the two partitions for every transaction in acks.csv (50 records each, over 16 keys: both partitions), and
    # one epoch for all of them: librdkafka does not speak KIP-890's transactions, whatever transaction.version is.
    [(_, batches, epochs, *_, commits, aborts)] = report.sections["transactions"].rows
    assert (epochs, commits, aborts) == (1, 2 * -(-int((acks.status == "acked").sum()) // 50), 0) and batches > 0
