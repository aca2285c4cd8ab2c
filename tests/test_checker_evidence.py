"""Damaged evidence and the check/report commands: a clear error naming the file, or a partial report
that says what is missing; never a traceback. Reports: JSON schema, Markdown, HTML, JUnit, index."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import numpy as np

from tests.conftest import run_harness
from tests.synthetic_run import Flow, clean_flow, make_sent, write_run
from tests.test_bad_input import assert_one_line_error

EXPECT = {"end_to_end": "exactly-once", "max_lost": 0, "per_hop": {"processed": "exactly-once"}}


def _run(tmp_path, flow=None, **kwargs):
    sent = make_sent(3, 20)
    return write_run(tmp_path / "run", sent, flow or clean_flow(sent), expectations=EXPECT, **kwargs), sent


def test_missing_run_directory_and_ack_log_are_one_line_errors(tmp_path):
    assert_one_line_error(run_harness("check", str(tmp_path / "nope")), "nope: no such run directory")
    root, _ = _run(tmp_path)
    (root / "acks.csv").unlink()
    assert_one_line_error(run_harness("check", str(root)), "acks.csv: missing")
    (root / "acks.csv").write_bytes(b"\x00\x01garbage\n\xff")
    assert_one_line_error(run_harness("report", str(root)), "acks.csv")
    (root / "scenario.json").write_text("{trunc")
    assert_one_line_error(run_harness("check", str(root)), "scenario.json")


def test_damaged_files_give_a_partial_report_naming_them(tmp_path):
    root, _ = _run(tmp_path)
    with open(root / "history.jsonl", "a") as history:
        history.write('{"ts_ms": 1, "event": "fault_begun", "kind": "kill-dr')  # cut off mid-line
    (root / "topics" / "ingested.jsonl").unlink()
    (root / "egress" / "egress.sqlite").write_bytes(b"this is not a database" * 100)
    result = run_harness("report", str(root))
    assert result.returncode == 1, result.stderr  # the end-to-end expectation cannot pass without the egress
    assert "Traceback" not in result.stderr
    report = json.loads((root / "report.json").read_text())
    assert report["partial"] is True
    gaps = "\n".join(report["gaps"])
    assert "history.jsonl: 1 line(s) unreadable" in gaps
    assert "topics/ingested.jsonl: missing" in gaps
    assert "egress/egress.sqlite: unreadable" in gaps
    assert report["verdict"]["end_to_end"] == "none"
    assert "partial: topics/ingested.jsonl: missing" in result.stdout
    assert "Partial report" in (root / "report.html").read_text()


def test_check_writes_nothing_and_report_writes_every_format(tmp_path):
    sent = make_sent(3, 20)
    every = np.arange(len(sent))
    twice = np.concatenate([every, every[:5]])  # the processor replayed 5 records (a topic keeps both: at-least-once there); upsert absorbs them
    root = write_run(tmp_path / "runs" / "dup", sent, Flow({"ingested": every, "processed": twice}, twice, every), expectations=EXPECT)
    before = set(p.name for p in root.iterdir())
    result = run_harness("check", str(root))
    assert result.returncode == 1 and "verdict: effectively-exactly-once" in result.stdout
    assert "FAIL  end_to_end" in result.stdout and "FAIL  per_hop.processed" in result.stdout
    assert set(p.name for p in root.iterdir()) == before
    result = run_harness("report", str(root))
    assert result.returncode == 1
    report = json.loads((root / "report.json").read_text())
    assert report["schema_version"] == 1
    assert report["counts"]["duplicated_deliveries"] == 5 and report["counts"]["duplicated_in_state"] == 0
    assert report["verdict"]["hops"] == {"ingested": "exactly-once", "processed": "at-least-once", "egress": "effectively-exactly-once"}
    assert {e["name"]: e["passed"] for e in report["expectations"]} == {"end_to_end": False, "per_hop.processed": False, "max_lost": True}
    for key in ("retention", "watermark", "unexplained"):
        assert report["causes"]["lost"][key] == 0
    suite = ET.parse(root / "junit.xml").getroot().find("testsuite")
    assert suite.get("tests") == "3" and suite.get("failures") == "2"
    assert [c.get("name") for c in suite.findall("testcase")] == ["end_to_end", "per_hop.processed", "max_lost"]
    markdown = (root / "report.md").read_text()
    assert markdown.startswith("# synthetic: effectively-exactly-once") and "| **FAIL** | end_to_end |" in markdown
    html = (root / "report.html").read_text()
    assert html.count("<svg") >= 2  # plots inline; nothing fetched from anywhere:
    assert "src=" not in html and "<link" not in html and "url(http" not in html
    index = (tmp_path / "runs" / "index.html").read_text()
    assert "dup/report.html" in index and "effectively-exactly-once" in index
