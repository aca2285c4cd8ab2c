"""`harness gate` on a real suite: two short scenarios, one meant to pass and one whose expectation
cannot hold; the exit code, junit.xml, the summary and the index must say exactly that."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.conftest import run_harness
from tests.test_scenario import GOOD

pytestmark = pytest.mark.e2e


def test_gate_runs_the_suite_and_fails_on_the_scenario_whose_expectation_does_not_hold(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "a-clean.yaml").write_text(GOOD.replace("name: ok", "name: clean")
                                        + "expectations: {end_to_end: exactly-once, max_lost: 0}\n")
    # No fault can re-deliver anything here, so asking for re-deliveries must fail the gate.
    (suite / "b-wants-duplicates.yaml").write_text(GOOD.replace("name: ok", "name: wants-duplicates")
                                                   + "expectations: {max_lost: 0, min_duplicated_deliveries: 1}\n")
    out = tmp_path / "out"
    result = run_harness("gate", str(suite), "--out", str(out), "--duration", "5", timeout=900)
    assert result.returncode == 1, result.stderr
    assert "suite: 1 of 2 scenarios passed" in result.stdout

    suites = ET.parse(out / "junit.xml").getroot().findall("testsuite")
    assert [s.get("name") for s in suites] == ["a-clean", "b-wants-duplicates"]
    failed = {(s.get("name"), c.get("name")) for s in suites for c in s.findall("testcase") if c.find("failure") is not None}
    assert failed == {("b-wants-duplicates", "min_duplicated_deliveries")}

    summary = json.loads((out / "summary.json").read_text())
    rows = {Path(r["scenario"]).stem: r for r in summary["scenarios"]}
    assert summary["passed"] is False
    assert rows["a-clean"]["passed"] and rows["a-clean"]["verdict"] == "exactly-once"
    assert not rows["b-wants-duplicates"]["passed"] and rows["b-wants-duplicates"]["failed_expectations"] == ["min_duplicated_deliveries"]
    for name in ("a-clean", "b-wants-duplicates"):
        assert (out / name / "report.html").is_file() and (out / name / "junit.xml").is_file()
    index = (out / "index.html").read_text()
    assert "a-clean" in index and "b-wants-duplicates" in index
    assert "b-wants-duplicates" in (out / "summary.md").read_text()
