"""kafka-error on a real broker (harness/faults/kinds/kafka_error.py): the network proxy drops the broker's response
to some of the generator's produce requests after the broker appended them, then resets the connection. The
generator's producer, not idempotent, sends each again: every record of a dropped request is in the source topic
again (more than twice where a retry's answer was dropped too), and no other is. Counted here from the proxy's log
(kafka-requests.jsonl: each dropped request's partition and the offset the broker gave it, in the response it never
passed on) and the source topic read back; the report's duplicates must equal it. With idempotence the broker
keeps one copy of each."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml

from harness.checker.check import check_run
from harness.checker.counts import CAUSES, COUNTS, DUPLICATED_CAUSES
from harness.runner.console import Console
from harness.runner.run import run_scenario
from harness.scenario.parse import parse_scenario
from tests.evidence_helpers import why
from tests.test_faults import ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]
RELAY = ROOT / "examples" / "checkpoint-damage"


def _run(tmp_path, idempotence: bool):
    raw = yaml.safe_load((RELAY / "scenario.yaml").read_text())
    raw["workload"] |= {"duration_s": 20, "idempotence": idempotence}
    raw["faults"] = [
        {"kind": "kafka-error", "target": "generator", "start_s": 5, "duration_s": 10, "share": 0.1, "count": 5}
    ]
    raw["expectations"] = {"end_to_end": "at-least-once"}
    run_dir = tmp_path / "run"
    summary = run_scenario(parse_scenario(raw, RELAY), run_dir, console=Console(quiet=True))
    assert summary.status == "complete", why(summary)
    return run_dir, check_run(run_dir)


def _dropped(run_dir) -> set[tuple[int, int]]:
    """The (partition, offset) of every record the broker appended for a request whose response was dropped."""
    found = set()
    lines = (run_dir / "kafka-requests.jsonl").read_text().splitlines()
    assert len(lines) == 5  # the fault's count
    for line in lines:
        entry = json.loads(line)
        assert entry["api"] == "produce" and entry["action"] == "drop-response"
        sent = {(p["topic"], p["partition"]): sum(b["records"] for b in p["batches"]) for p in entry["partitions"]}
        for answer in entry["answered"]:
            assert answer["error_code"] == 0
            base, count = answer["base_offset"], sent[(answer["topic"], answer["partition"])]
            found |= {(answer["partition"], offset) for offset in range(base, base + count)}
    return found


def _source(run_dir) -> pd.DataFrame:
    frame = pd.read_parquet(run_dir / "source" / "orders.parquet")
    return frame.assign(order_id=frame.value.map(lambda v: json.loads(v)["order_id"]))


def test_a_dropped_produce_response_makes_a_copy_of_exactly_the_records_it_answered(tmp_path):
    """A retry may itself be dropped: a record then has several copies in dropped requests, and always exactly one
    outside them, the one whose response reached the producer."""
    run_dir, report = _run(tmp_path, idempotence=False)
    dropped = _dropped(run_dir)
    source = _source(run_dir)
    where = pd.Series(list(zip(source.partition, source.offset)), index=source.index)
    unanswered = source[where.isin(dropped)]
    answered = source[~where.isin(dropped)]
    assert dropped and len(unanswered) == len(dropped)
    assert not answered.order_id.duplicated().any()
    assert set(unanswered.order_id) <= set(answered.order_id)  # each was sent again
    assert report[COUNTS].duplicated_deliveries == unanswered.order_id.nunique() and report[COUNTS].lost == 0
    # each copy is told as the source's: read from the topic, not made by the job's replay
    assert report[CAUSES]["duplicated"] | {"retried_read": 0} == dict.fromkeys(DUPLICATED_CAUSES, 0)
    assert report[CAUSES]["duplicated"]["retried_read"] == len(unanswered)


@pytest.mark.long
def test_an_idempotent_producer_keeps_one_copy_though_its_responses_were_dropped(tmp_path):
    run_dir, report = _run(tmp_path, idempotence=True)
    assert _dropped(run_dir)
    assert not _source(run_dir).order_id.duplicated().any()
    assert report[COUNTS].duplicated_deliveries == 0 and report[COUNTS].lost == 0
