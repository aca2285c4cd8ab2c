"""Expectations judged on what the checker found: the exact verdict a caveat scenario expects; one named in a
pipeline.json that no kind judges, or with a value its kind does not take, is unknown, never a pass."""

from __future__ import annotations

from harness.checker.expect import judge
from tests.test_resources import _found


def test_an_exact_verdict_passes_only_on_that_verdict_and_is_unknown_when_the_verdict_is():
    expected = {"verdict": "at-most-once"}
    assert judge(expected, _found(verdict="at-most-once"))[0].status == "pass"
    stronger = judge(expected, _found())[0]
    assert stronger.status == "fail" and "expected exactly at-most-once" in stronger.detail, (
        "a caveat that did not show fails"
    )
    assert judge(expected, _found(verdict="unknown"))[0].status == "unknown"
    assert judge(expected, _found(verdict="at-most-once", unfinished="run in progress"))[0].status == "unknown"


def test_an_expectation_no_kind_judges_or_a_value_its_kind_does_not_take_is_unknown():
    results = judge({"max_lost": 0, "end_to_end": "twice", "max_wobble": 5}, _found())
    assert [(r.name, r.status) for r in results] == [
        ("end_to_end", "unknown"),
        ("max_lost", "pass"),
        ("max_wobble", "unknown"),
    ]
    assert results[0].detail.startswith("expectations.end_to_end: expected one of exactly-once")
    assert results[2].detail == "max_wobble: no such expectation in this harness"
