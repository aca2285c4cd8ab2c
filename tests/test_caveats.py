"""Caveats of the catalog on real runs, in one: a transactional producer that aborts transactions, read by one
ingress with read_committed and includeHeaders and by another with Kafka's defaults (read_uncommitted, no
headers). Everything the checker says is counted again here from the raw evidence: the ack log and the run's
recording of the two ingresses' topics."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest

from harness.checker.check import check_run
from harness.runner.console import Console
from harness.runner.run import run_scenario
from harness.scenario.parse import parse_scenario
from harness.workload.generator_settings import TRACE_HEADER
from tests.evidence_helpers import why

pytestmark = pytest.mark.e2e

SCENARIO = {
    "name": "transactions-both-isolation-levels",
    "blueprint": {
        "streamlets": {
            "committed": {"kind": "ingress"},
            "uncommitted": {"kind": "ingress"},
            "kept": {"kind": "egress", "settings": {"mode": "append"}},
            "seen": {"kind": "egress", "settings": {"mode": "append"}},
        },
        "connections": {"committed.out": ["kept.in"], "uncommitted.out": ["seen.in"]},
        "topics": {
            "committed.out": {"name": "committed", "partitions": 2},
            "uncommitted.out": {"name": "uncommitted", "partitions": 2},
        },
    },
    "workload": {
        "topic": {"name": "source", "partitions": 2},
        "keys": 16,
        "rate": 200,
        "duration_s": 15,
        "headers": True,
        "transactions": {"records": 40, "abort_every": 3},
    },
    "source_options": {
        "committed": {"isolation_level": "read_committed", "include_headers": True},
        "uncommitted": {"isolation_level": "read_uncommitted"},
    },
}


def _recorded(run_dir: Path, topic: str) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "topics" / f"{topic}.jsonl").open()]


def test_aborted_transactions_are_seen_read_uncommitted_only_and_headers_only_where_included(tmp_path):
    run_dir = tmp_path / "run"
    summary = run_scenario(parse_scenario(SCENARIO), run_dir, console=Console(quiet=True))
    assert summary.status == "complete" and not summary.failed_streamlets, why(summary)

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
    hops = {h.name: h for h in report.hops}
    assert report.counts.acked == len(acked) and report.counts.lost == 0
    assert hops["committed"].verdict == hops["kept"].verdict == "exactly-once"
    assert hops["uncommitted"].copies.inherited == extra and hops["uncommitted"].copies.made_here == 0
    assert hops["seen"].counts.duplicated_in_state == len(aborted)
    assert report.causes["duplicated"] == {
        "replay_after_fault": 0,
        "unexplained": 0,
        "aborted_read": extra,
        "resent_read": 0,
    }
    assert report.verdict == "at-least-once"
    assert (hops["committed"].headers_lost, hops["uncommitted"].headers_lost) == (0, len(uncommitted))
