"""The Aggregates check (harness/checker/checks/aggregates.py) on a recorded run (tests/frozen_runs/account-totals:
each batch's sums per account written from foreachBatch, two batches written again after kills): its counts equal
those made here from the raw files (the source topic read back, the output topic's recording, the job's progress),
each group named over by the batches whose records explain it; a damaged values log or a missing recording is one
gap naming it, the verdict unknown."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from harness.checker.check import check_run
from harness.checker.expect import EXPECTATIONS
from tests.frozen_runs import FROZEN_OR_FRESH, judged_run


@pytest.fixture(scope="module", params=FROZEN_OR_FRESH)
def run(request, tmp_path_factory) -> Path:
    return judged_run(request, tmp_path_factory, "account-totals")


def _over(run: Path) -> tuple[list[dict], dict[str, int]]:
    """The orders as the run read the source back, and per account how many orders its parts add up to beyond them."""
    table = pq.read_table(run / "source" / "orders.parquet", columns=["partition", "offset", "value"]).to_pylist()
    orders = [{**json.loads(r["value"]), "partition": r["partition"], "offset": r["offset"]} for r in table]
    parts: Counter = Counter()
    for line in (run / "topics" / "account-totals.jsonl").read_text().splitlines():
        value = json.loads(line)["value"]
        parts[value["account"]] += value["orders"]
    sent = Counter(o["account"] for o in orders)
    return orders, {a: parts[a] - n for a, n in sent.items()}


def _read_by(run: Path) -> dict[int, dict[int, tuple[int, int]]]:
    """batch -> partition -> [start, end) it read, from the job's progress file."""
    found = {}
    for line in (run / "progress" / "totals.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event.get("event") != "progress":
            continue
        (source,) = event["progress"]["sources"]
        start, end = (next(iter(source[k].values()), {}) for k in ("startOffset", "endOffset"))
        found[event["progress"]["batchId"]] = {int(p): (start.get(p, 0), o) for p, o in end.items()}
    return found


def test_each_account_over_by_the_batches_written_again_is_named_with_their_records(run):
    report = check_run(run)
    assert report.outcome == "pass", report[EXPECTATIONS]
    orders, over = _over(run)
    section = report.sections["aggregates"]
    row = dict(zip(section.header, section.rows[0]))
    assert row["records counted twice"] == sum(over.values()) > 0
    assert (row["over"], row["exact"]) == (sum(n > 0 for n in over.values()), sum(n == 0 for n in over.values()))
    read_by = _read_by(run)
    for line in section.lines[1:]:  # "balances: group k0002 over: batch 11, 12 counted twice, 226 of its records"
        account = line.split("group ")[1].split(" ")[0]
        batches = [int(b) for b in line.split(": batch ")[1].split(" counted")[0].split(", ")]
        ranges = [read_by[b] for b in batches]
        read = [
            o
            for o in orders
            if o["account"] == account
            and any(r[o["partition"]][0] <= o["offset"] < r[o["partition"]][1] for r in ranges)
        ]
        assert len(read) == over[account] and f", {len(read)} of its records" in line, line


def _copy(run: Path, tmp_path: Path) -> Path:
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    return copy


def test_a_damaged_values_log_is_one_gap_and_the_aggregates_unknown(run, tmp_path):
    copy = _copy(run, tmp_path)
    (copy / "values" / "generator.csv").write_text("not,a,values,log\n1,2,3,4\n")
    report = check_run(copy)
    assert [g for g in report.gaps if g.startswith("values/")] == [
        "values/: unreadable (generator.csv: no key and seq columns); the aggregates not judged"
    ]
    assert report.sections["aggregates"].data["outputs_verdict"] == "unknown" and report.outcome == "unknown"


def test_a_missing_recording_of_the_output_is_one_gap_and_the_aggregates_unknown(run, tmp_path):
    copy = _copy(run, tmp_path)
    (copy / "topics" / "account-totals.jsonl").unlink()
    report = check_run(copy)
    assert any("topics/account-totals.jsonl" in g for g in report.gaps), report.gaps
    assert report.sections["aggregates"].data["outputs_verdict"] == "unknown" and report.outcome == "unknown"
