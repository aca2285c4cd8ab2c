"""The throughput check (harness/checker/checks/throughput.py) and its expectation, min_records_per_s, on a recorded
run (the frozen chain): the records acknowledged per second from the workload's start until drained, and each
streamlet's rows per second, as counted here from the raw files (acks.csv, history.jsonl, the progress files); a
minimum above the rate fails, one below passes, and a run that never drained is unknown, never a pass."""

from __future__ import annotations

import csv
import json
import statistics
from pathlib import Path

from harness.checker.check import check_run
from harness.checker.expect import EXPECTATIONS
from harness.report.write import write_reports
from tests.evidence_helpers import FROZEN_CHAIN, chain_copy


def _run(tmp_path: Path, minimum: float, drained: bool = True) -> Path:
    return chain_copy(tmp_path, {"min_records_per_s": minimum}, None if drained else "drained")


def _counted(run: Path) -> tuple[float, dict[str, tuple]]:
    """From the raw files: acknowledged records over (drained - the generator's start), and per streamlet (batches
    that read rows, rows read, the median and the lowest processedRowsPerSecond of those)."""
    with open(run / "acks.csv") as acks:
        acked = sum(row["status"] == "acked" for row in csv.DictReader(acks))
    events = [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines()]
    start = next(e["ts_ms"] for e in events if e["event"] == "process_started" and e["process"] == "generator")
    drained = next(e["ts_ms"] for e in events if e["event"] == "drained")
    per = {}
    for path in sorted((run / "progress").glob("*.jsonl")):
        batches = [json.loads(line).get("progress") or {} for line in path.read_text().splitlines()]
        read = [b for b in batches if b.get("numInputRows", 0) > 0]
        rates = [b["processedRowsPerSecond"] for b in read]
        per[path.stem] = (len(read), sum(b["numInputRows"] for b in read), statistics.median(rates), min(rates))
    return acked / ((drained - start) / 1000), per


def test_the_throughput_is_what_the_raw_files_give_and_a_minimum_above_it_fails(tmp_path):
    rate, per = _counted(FROZEN_CHAIN)
    below, above = check_run(_run(tmp_path, rate - 1)), check_run(_run(tmp_path, rate + 1))
    section = below.sections["throughput"]
    assert abs(section.data["end_to_end_per_s"] - rate) < 0.5  # the marks are rounded to a tenth of a second
    for name, batches, rows, median, slowest in section.rows:
        assert (batches, rows) == per[name][:2] and (median, slowest) == (
            round(per[name][2], 1),
            round(per[name][3], 1),
        )
    [passed], [failed] = below[EXPECTATIONS], above[EXPECTATIONS]
    assert (passed.name, passed.status, failed.status) == ("min_records_per_s", "pass", "fail")
    assert f"{rate + 1:,g} asked" in failed.detail


def test_a_run_that_never_drained_has_no_throughput_and_its_minimum_is_unknown(tmp_path):
    run = _run(tmp_path, 0, drained=False)
    report = check_run(run)
    [result] = report[EXPECTATIONS]
    assert report.sections["throughput"].data["end_to_end_per_s"] is None and result.status == "unknown"
    assert report.outcome == "unknown"
    write_reports(report, run)
    assert "## Throughput" in (run / "report.md").read_text() and "Throughput" in (run / "report.html").read_text()
