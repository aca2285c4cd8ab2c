"""The check's steps (harness/checker/step.py): a step that raises makes what it finds unknown, names itself in
a gap, saves its traceback in the run directory and turns the outcome unknown, in a run; in strict mode (the
test suite's) it raises. A step that needs a failed one is not run."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from harness.checker.anomaly_records import WITNESSES
from harness.checker.check import STEPS, all_steps, check_run
from harness.checker.counts import CAUSES, COUNTS, HOP_FINDINGS, VERDICT
from harness.checker.expect import EXPECTATIONS
from harness.checker.fault_results import FAULTS
from harness.checker.latency import LATENCY
from harness.checker.section import Section
from harness.checker.step import Key, Step, in_order
from harness.report.write import write_reports
from tests.synthetic_run import clean_flow, make_sent, write_run


def _broken(name: str) -> list:
    def boom(context) -> None:
        raise RuntimeError(f"{name} is broken\nsecond line")

    return [replace(step, run=boom) if step.name == name else step for step in all_steps()]


@pytest.fixture
def clean_run(tmp_path):
    sent = make_sent(4, 25)
    return write_run(tmp_path / "run", sent, clean_flow(sent), expectations={"max_lost": 0})


def test_the_steps_compose_to_a_pass_on_a_clean_run(clean_run):
    report = check_run(clean_run, strict=True)
    assert report.outcome == "pass" and report[COUNTS].lost == 0 and not report.doubts


def test_a_peripheral_step_that_raises_leaves_the_counts_and_makes_the_outcome_unknown(clean_run):
    report = check_run(clean_run, steps=_broken("latency"), strict=False)
    assert report[COUNTS].lost == 0 and report[VERDICT] != "unknown" and report[LATENCY].records == 0
    assert report.outcome == "unknown" and report.doubts == [
        "the check's step latency failed (RuntimeError: latency is broken)"
    ]
    assert "check step latency failed: RuntimeError: latency is broken; what it finds is unknown" in report.gaps[-1]
    assert "RuntimeError: latency is broken" in (clean_run / "logs" / "check.log").read_text()
    write_reports(report, clean_run)
    assert json.loads((clean_run / "report.json").read_text())["outcome"] == "unknown"


def test_a_core_step_that_raises_makes_every_count_it_feeds_null_and_nothing_passes(clean_run):
    report = check_run(clean_run, steps=_broken("reconcile"), strict=False)
    assert report[COUNTS].lost is None and report[COUNTS].acked == 100 and report[VERDICT] == "unknown"
    assert [(e.name, e.status) for e in report[EXPECTATIONS]] == [("expectations", "unknown")]
    assert report.outcome == "unknown" and report[CAUSES]["lost"]["retention"] is None
    write_reports(report, clean_run)  # every writer copes with what is unknown
    data = json.loads((clean_run / "report.json").read_text())
    assert data["counts"]["lost"] is None and data["outcome"] == "unknown" and not data["passed"]


def test_copies_that_cannot_be_counted_are_null_not_zero(clean_run):
    report = check_run(clean_run, steps=_broken("copies"), strict=False)
    assert report[COUNTS].lost == 0 and all(h.copies is None for h in report[HOP_FINDINGS])
    assert report[CAUSES]["duplicated"]["replay_after_fault"] is None and report.outcome == "unknown"
    # The steps that need the copies are not run, and are named apart from the one that failed.
    assert [gap.split()[2] for gap in report.gaps if gap.startswith("check step")] == ["copies"]
    not_run = "not run, as what they need could not be found: check step(s) faults, witnesses, timeline, lag,"
    assert any(gap.startswith(not_run) for gap in report.gaps)
    assert report[FAULTS] == [] and report[WITNESSES] == [] and report[EXPECTATIONS][0].status == "unknown"
    write_reports(report, clean_run)


def test_in_strict_mode_a_step_that_raises_fails_the_check(clean_run):
    with pytest.raises(RuntimeError, match="counts is broken"):
        check_run(clean_run, steps=_broken("counts"), strict=True)


def test_a_check_whose_section_raises_is_a_gap_and_the_other_sections_stay(clean_run):
    def broken(context):
        raise ValueError("no section")

    extra = Step("extra", section=lambda context: Section("Extra", ("kept",)))
    steps = STEPS + [extra, Step("broken", section=broken)]
    report = check_run(clean_run, steps=steps, strict=False)
    assert report.sections == {"extra": Section("Extra", ("kept",))} and report.outcome == "unknown"
    assert any(gap.startswith("check step broken failed: ValueError: no section") for gap in report.gaps)


def test_a_step_runs_after_the_steps_that_find_what_it_reads_and_a_key_has_one_finder():
    one, two = Key("one"), Key("two")
    first = Step("first", writes=(two,), needs=(one,))
    second = Step("second", writes=(one,), uses=(STEPS[0].writes[0],))
    assert [step.name for step in in_order([first, second], tuple(STEPS))] == ["second", "first"]
    with pytest.raises(ValueError, match="no step finds \\(one\\).*first"):
        in_order([first])
    with pytest.raises(ValueError, match="two is found by two steps: first and again"):
        in_order([first, second, Step("again", writes=(two,))])


def test_a_step_finds_what_it_says_it_writes_and_nothing_else(clean_run):
    steps = [replace(s, run=lambda context: {}) if s.name == "latency" else s for s in all_steps()]
    with pytest.raises(ValueError, match="step latency found \\[\\], not what it writes"):
        check_run(clean_run, steps=steps, strict=True)


def test_every_key_is_found_by_one_step_and_every_read_by_one_before_it():
    steps = all_steps()
    assert in_order(steps) == steps
