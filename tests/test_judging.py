"""Outcomes as exit codes, repeated runs' seeds, and a gate's junit case for a run with nothing to judge."""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET
from pathlib import Path

from harness.judging import repeated_seeds
from harness.live_judge import judge_every_s
from harness.outcome import EXIT_FAIL, EXIT_PASS, EXIT_UNKNOWN, exit_code, worst
from harness.report.junit import unjudged_element, write_junit


def test_unknown_is_never_a_pass_unless_allowed_and_a_failure_outweighs_it():
    assert [exit_code(o, False) for o in ("pass", "fail", "unknown")] == [EXIT_PASS, EXIT_FAIL, EXIT_UNKNOWN]
    assert exit_code("unknown", True) == EXIT_PASS and exit_code("fail", True) == EXIT_FAIL
    assert worst([EXIT_PASS, EXIT_UNKNOWN]) == EXIT_UNKNOWN
    assert worst([EXIT_UNKNOWN, EXIT_FAIL, EXIT_PASS]) == EXIT_FAIL
    assert worst([EXIT_PASS, 2]) == 2  # any other code (bad input) counts as a failure


def test_repeated_runs_take_the_next_seeds_and_no_run_starts_after_the_deadline():
    assert list(repeated_seeds(7, 3, None)) == [7, 8, 9]
    assert list(repeated_seeds(1, 2, time.time() - 1)) == [1, 2]  # --repeat runs even past --until
    seeds = repeated_seeds(1, 1, time.time() + 3600)
    assert [next(seeds) for _ in range(5)] == [1, 2, 3, 4, 5]  # until the clock says so


def test_a_run_of_12_minutes_or_more_is_judged_as_it_runs_every_period_unless_told_otherwise():
    assert [judge_every_s(planned, None) for planned in (60, 719, 720, 1440, 3600, 8 * 3600)] == [
        None,
        None,
        60.0,
        120.0,
        300.0,
        1800.0,
    ]
    assert judge_every_s(60, 10) == 10 and judge_every_s(3600, 0) is None  # --judge-every; 0: never


def test_a_run_with_nothing_to_judge_is_an_errored_case_saying_why(tmp_path: Path):
    path = write_junit(tmp_path / "junit.xml", [unjudged_element("broken", tmp_path / "broken", "no broker came up")])
    [suite] = ET.parse(path).getroot().findall("testsuite")
    [case] = suite.findall("testcase")
    assert suite.get("errors") == "1" and case.find("error").get("message") == "no broker came up"
    assert {p.get("name"): p.get("value") for p in suite.iter("property")}["outcome"] == "fail"
