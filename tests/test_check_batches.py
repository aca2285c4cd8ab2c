"""The micro-batches check (harness/checker/checks/batches.py), the worked example of a check of one module: on a
synthetic run directory whose query events are written here, its section in every report, each number derived
from the events the test wrote."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from harness.checker.check import CHECKS, check_run
from harness.report.write import write_reports
from tests.synthetic_run import T0, clean_flow, make_sent, write_run


def _batch(batch_id: int, trigger_ms: int, rows: int) -> dict:
    durations = {"addBatch": trigger_ms // 2, "triggerExecution": trigger_ms}
    progress = {"batchId": batch_id, "numInputRows": rows, "durationMs": durations}
    return {"ts_ms": T0 + 1000 * batch_id, "event": "progress", "progress": progress}


IDLE = {
    "ts_ms": T0,
    "event": "progress",
    "progress": {"batchId": 9, "numInputRows": 0, "durationMs": {"triggerExecution": 5000}},
}


def test_each_streamlets_batches_are_counted_timed_and_shown_in_every_report(tmp_path):
    progress = {
        "ingress": [
            {"ts_ms": T0, "event": "started"},
            _batch(0, 300, 10),
            _batch(1, 100, 40),
            IDLE,
            _batch(2, 200, 20),
        ],
        "processor": [_batch(0, 700, 5), {"ts_ms": T0, "event": "terminated"}, _batch(0, 900, 5)],  # batch 0 run again
    }
    root = write_run(tmp_path / "run", make_sent(2, 10), clean_flow(make_sent(2, 10)), progress=progress)
    (root / "progress" / "egress.jsonl").unlink()  # nothing of its batches is known

    report = check_run(root)

    assert "batches" in [step.name for step in CHECKS]
    section = report.sections["batches"]
    rows = {row[0]: row[1:] for row in section.rows}
    # ingress: three batches (the trigger without new data ran none), median of 300, 100, 200
    assert rows["ingress"] == (3, 200, 300, 0, 40)
    # processor: batch 0 twice (a replay is a batch run), the longest its second run
    assert rows["processor"] == (2, 800, 900, 0, 5)
    assert rows["egress"] == (None,) * 5, "a missing progress file is unknown, not 0"
    assert "the longest: processor's batch 0, 900 ms" in section.lines

    paths = write_reports(report, root)
    as_json = json.loads(paths["json"].read_text())["sections"]["batches"]
    assert as_json["title"] == "Micro-batches" and ["egress", None, None, None, None, None] in as_json["rows"]
    assert (
        "## Micro-batches" in paths["markdown"].read_text()
        and "| egress | unknown | unknown |" in paths["markdown"].read_text()
    )
    assert "<h2>Micro-batches</h2>" in paths["html"].read_text()
    out = ET.parse(paths["junit"]).getroot().find("./testsuite/system-out")
    assert out is not None and "processor | 2 | 800 | 900 | 0 | 5" in out.text


def test_a_driver_of_several_queries_has_a_row_for_each(tmp_path):
    """An application's events name the query each came from (its checkpoint's folder): a row for each query."""
    lake = [{**_batch(i, 100 * (i + 1), 10 + i), "query": "lake"} for i in range(3)]
    audit = [{**_batch(i, 50, 7), "query": "audit"} for i in range(2)]
    progress = {"ingress": [e for pair in zip(lake, audit) for e in pair] + lake[2:], "processor": [_batch(0, 5, 1)]}
    root = write_run(tmp_path / "run", make_sent(2, 10), clean_flow(make_sent(2, 10)), progress=progress)
    rows = {row[0]: row[1:] for row in check_run(root).sections["batches"].rows}
    assert rows["ingress (audit)"] == (2, 50, 50, 0, 7) and rows["ingress (lake)"] == (3, 200, 300, 2, 12)
    assert "ingress" not in rows and rows["processor"] == (1, 5, 5, 0, 1)  # one query: its streamlet's row
