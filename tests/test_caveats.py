"""Caveats of the catalog on real runs, in one: a transactional producer that aborts transactions, read by one
ingress with read_committed and includeHeaders and by another with Kafka's defaults (read_uncommitted, no
headers). Everything the checker says is counted again here from the raw evidence: the ack log and the run's
recording of the two ingresses' topics. make test judges the run's frozen directory (tests/frozen_runs/), make
test-long a fresh run too."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest

from harness.checker.check import check_run
from harness.checker.counts import CAUSES, COUNTS, HOP_FINDINGS, VERDICT
from harness.workload.generator_settings import TRACE_HEADER
from tests.frozen_runs import FROZEN_OR_FRESH, judged_run


@pytest.fixture(scope="module", params=FROZEN_OR_FRESH)
def transactions_run(request, tmp_path_factory) -> Path:
    """tests/frozen_runs/transactions.yaml's run directory."""
    return judged_run(request, tmp_path_factory, "transactions")


def _recorded(run_dir: Path, topic: str) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "topics" / f"{topic}.jsonl").open()]


def test_aborted_transactions_are_seen_read_uncommitted_only_and_headers_only_where_included(transactions_run):
    run_dir = transactions_run

    with open(run_dir / "acks.csv") as acks:
        lines = list(csv.DictReader(acks))
    acked = {(r["key"], int(r["seq"])) for r in lines if r["status"] == "acked"}
    aborted = Counter((r["key"], int(r["seq"])) for r in lines if r["status"] == "aborted")
    assert len(acked) == 3000 and sum(aborted.values()) >= 600  # a third of the transactions
    assert set(aborted) <= acked  # each aborted record was written again, and committed
    extra = sum(aborted.values())

    committed, uncommitted = _recorded(run_dir, "committed"), _recorded(run_dir, "uncommitted")
    copies = {
        name: Counter((r["value"]["key"], r["value"]["seq"]) for r in rows)
        for name, rows in (("committed", committed), ("uncommitted", uncommitted))
    }
    # read_committed: each acknowledged record once, nothing of an aborted transaction.
    assert copies["committed"] == Counter({record: 1 for record in acked})
    # read_uncommitted: every aborted copy as well.
    assert sum(copies["uncommitted"].values()) == len(acked) + extra
    assert {record: n - 1 for record, n in copies["uncommitted"].items() if n > 1} == dict(aborted)
    # Headers: on every record of the topic whose ingress read them, naming that record; on none of the other.
    assert all(r.get("headers", {}).get(TRACE_HEADER) == f"{r['value']['key']}:{r['value']['seq']}" for r in committed)
    assert not any(r.get("headers") for r in uncommitted)

    report = check_run(run_dir)
    hops = {h.name: h for h in report[HOP_FINDINGS]}
    assert report[COUNTS].acked == len(acked) and report[COUNTS].lost == 0
    assert hops["committed"].verdict == hops["kept"].verdict == "exactly-once"
    assert hops["uncommitted"].copies.inherited == extra and hops["uncommitted"].copies.made_here == 0
    assert hops["seen"].counts.duplicated_in_state == len(aborted)
    assert report[CAUSES]["duplicated"] == {
        "replay_after_fault": 0,
        "unexplained": 0,
        "aborted_read": extra,
        "resent_read": 0,
        "retried_read": 0,
        "producer_retry": 0,
    }
    assert report[VERDICT] == "at-least-once"
    assert (hops["committed"].headers_lost, hops["uncommitted"].headers_lost) == (0, len(uncommitted))
